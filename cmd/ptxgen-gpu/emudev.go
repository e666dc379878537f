package main

import (
	"io"
	"time"

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

// The emulator device can "time" programs too (wall time of emulation, meaningless
// as a GPU figure) so that the bench command's plumbing is tested without a GPU.
func (f emuDevice) SMs() int       { return 4 }
func (f emuDevice) L2Bytes() int64 { return 1 << 20 }
func (f emuDevice) Driver() string { return "emulator" }
func (f emuDevice) Prepare(c *check.Case, sets int) (preparedCase, error) {
	return &emuPrepared{c: c}, nil
}

type emuPrepared struct {
	c    *check.Case
	last map[string][]byte
}

func (p *emuPrepared) Time(int, l2Flush) (float64, error) {
	start := time.Now()
	final, err := check.Emulator{}.Run(p.c)
	p.last = final
	return float64(time.Since(start).Microseconds()) / 1e3, err
}

func (p *emuPrepared) Final(int) (map[string][]byte, error) { return p.last, nil }
func (p *emuPrepared) Close() error                         { return nil }
