package main

import (
	"io"

	"github.com/ptxgen/ptxgen/check"
)

// emuDevice stands in for a GPU of a given architecture: its executor is the emulator.
// The tests use it, and so does the ptxgen_fakegpu build (fake.go), which lets
// scripts/gpu-check.sh be rehearsed on a machine without a GPU before spending GPU time.
type emuDevice struct{ arch string }

func (f emuDevice) Info() string {
	return "device 0: emulator standing in for a GPU\narch: " + f.arch + "\n"
}
func (f emuDevice) Arch() string                      { return f.arch }
func (f emuDevice) Executor(io.Writer) check.Executor { return check.Emulator{} }
func (f emuDevice) Close() error                      { return nil }

func emuOpener(arch string) opener {
	return func(int) (device, error) { return emuDevice{arch}, nil }
}
