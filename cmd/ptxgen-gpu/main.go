//go:build cuda && cgo

// Command ptxgen-gpu runs ptxgen kernels on a real GPU. It is built only with
// `-tags cuda` (see `make gpu-bin`) and carried to the GPU machine, because it links
// libcuda and cannot start where no driver is installed.
//
//	ptxgen-gpu [info] [-device N]
//	ptxgen-gpu check -gpu [-kernel K] [kernel flags] [-target T] [-seed N] [-vectors DIR] [-emu=false]
//	ptxgen-gpu dump [-kernel K] [kernel flags] [-target T] [-o FILE]
//
// check -gpu runs a case on the GPU and in the emulator, compares both with the float64
// reference and with each other (check.DiffRuns documents the bound). The exit status is
// 0 on success, 1 when a check fails, 2 for bad usage.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/ptxgen/ptxgen/check"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/runtime"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, openRuntime))
}

func openRuntime(ordinal int) (device, error) {
	d, err := runtime.Open(ordinal)
	if err != nil {
		return nil, err
	}
	return gpuDevice{d}, nil
}

// gpuDevice adapts *runtime.Device to check.GPUDevice and to run's device.
type gpuDevice struct{ d *runtime.Device }

func (g gpuDevice) Info() string {
	d := g.d
	return fmt.Sprintf("device %d: %s\narch: %s\nSMs: %d\ndriver: CUDA %d.%d\nmemory: %.1f GiB\nshared memory per block (opt-in): %d bytes\n",
		d.Ordinal(), d.Name(), d.Arch(), d.SMs(), d.DriverVersion()/1000, d.DriverVersion()%1000/10,
		float64(d.TotalMem())/(1<<30), d.MaxSharedBytes())
}

func (g gpuDevice) Arch() string { return g.d.Arch() }
func (g gpuDevice) Close() error { return g.d.Close() }
func (g gpuDevice) Sync() error  { return g.d.Sync() }

func (g gpuDevice) Executor(w io.Writer) check.Executor {
	return check.GPU{Dev: g, Loaded: func(k *ptx.Kernel, l check.GPUKernel) {
		rk := l.(gpuKernel).k
		fmt.Fprintf(w, "loaded %s (%s): grid %v, block %d, %d bytes shared, %d registers, %d bytes local\n",
			k.Name, k.Module.Target, k.Grid, k.Block, k.SharedBytes, rk.Registers, rk.LocalBytes)
	}}
}

func (g gpuDevice) Alloc(bytes int64) (check.GPUBuffer, error) {
	b, err := g.d.Alloc(bytes)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func (g gpuDevice) Load(k *ptx.Kernel) (check.GPUKernel, error) {
	rk, err := g.d.LoadKernel(k)
	if err != nil {
		return nil, err
	}
	return gpuKernel{rk}, nil
}

type gpuKernel struct{ k *runtime.Kernel }

func (k gpuKernel) Unload() error { return k.k.Unload() }

// Launch converts check.GPU's arguments (buffers and exactly typed scalars) to
// runtime.Args; runtime checks them against the kernel's facts.
func (k gpuKernel) Launch(args []any) error {
	ra := make([]runtime.Arg, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case *runtime.Buffer:
			ra[i] = runtime.Ptr(a)
		case int32:
			ra[i] = runtime.I32(a)
		case uint32:
			ra[i] = runtime.U32(a)
		case int64:
			ra[i] = runtime.I64(a)
		case uint64:
			ra[i] = runtime.U64(a)
		case float32:
			ra[i] = runtime.F32(a)
		case float64:
			ra[i] = runtime.F64(a)
		default:
			return fmt.Errorf("argument %d: unexpected %T", i, a)
		}
	}
	return k.k.Launch(ra...)
}
