//go:build cuda && cgo

// Command ptxgen-gpu runs ptxgen kernels on a real GPU. It is built only with
// `-tags cuda` (see `make gpu-bin`) and carried to the GPU machine, because it links
// libcuda and cannot start where no driver is installed. For now it opens device 0 and
// prints what it is; `check -gpu` and `bench` will follow.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ptxgen/ptxgen/runtime"
)

func main() {
	ordinal := flag.Int("device", 0, "CUDA device `ordinal`")
	flag.Parse()
	if flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: ptxgen-gpu [-device N]")
		os.Exit(2)
	}
	d, err := runtime.Open(*ordinal)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ptxgen-gpu: opening device:", err)
		os.Exit(1)
	}
	defer d.Close()
	fmt.Printf("device %d: %s\narch: %s\nSMs: %d\ndriver: CUDA %d.%d\nmemory: %.1f GiB\nshared memory per block (opt-in): %d bytes\n",
		d.Ordinal(), d.Name(), d.Arch(), d.SMs(), d.DriverVersion()/1000, d.DriverVersion()%1000/10,
		float64(d.TotalMem())/(1<<30), d.MaxSharedBytes())
}
