package check

import (
	"errors"
	"fmt"
	"math"

	"github.com/ptxgen/ptxgen/ptx"
)

// GPU runs cases on a GPU: it allocates every buffer of the case on the device,
// copies its initial contents in, loads and launches every kernel of the program in
// order with the case's arguments, waits, and copies every buffer back. It mirrors
// Emulator, so that one Case is judged by the same Compare on both.
//
// GPU reaches the device through the small GPUDevice interface rather than importing
// package runtime: runtime links gorgonia.org/cu in cuda builds, whose init exits the
// process where no driver is installed, and package check is also linked into the
// plain ptxgen command, which must run everywhere (scripts/check-cuda-deps.sh).
// cmd/ptxgen-gpu adapts *runtime.Device to GPUDevice.
type GPU struct {
	Dev GPUDevice
	// Loaded, when set, is called with every kernel once it is loaded, before it is
	// launched (for logging the JIT's register and spill counts).
	Loaded func(k *ptx.Kernel, loaded GPUKernel)
}

// GPUDevice is what GPU needs from a GPU runtime.
type GPUDevice interface {
	// Alloc allocates bytes of device memory.
	Alloc(bytes int64) (GPUBuffer, error)
	// Load JIT-loads a generated kernel (its PTX module and launch facts).
	Load(k *ptx.Kernel) (GPUKernel, error)
	// Sync waits for all queued work and returns the first asynchronous error.
	Sync() error
}

// GPUBuffer is one device allocation.
type GPUBuffer interface {
	CopyIn(src []byte) error
	CopyOut(dst []byte) error
	Free() error
}

// GPUKernel is a loaded kernel. Launch takes the arguments in parameter order:
// for a "ptr" parameter the GPUBuffer returned by Alloc, for a scalar parameter a
// Go value of exactly the parameter's kind (i32 int32, u32 uint32, i64 int64,
// u64 uint64, f32 float32, f64 float64). The launch may be asynchronous.
type GPUKernel interface {
	Launch(args []any) error
	Unload() error
}

// Run implements Executor.
func (g GPU) Run(c *Case) (final map[string][]byte, err error) {
	if g.Dev == nil {
		return nil, errors.New("check.GPU: no device")
	}
	names := sortedNames(c.Buffers)
	bufs := map[string]GPUBuffer{}
	// index i+1 stands for buffer names[i] in the addresses handed to Case.Args.
	index := map[string]uint64{}
	defer func() {
		for _, n := range names {
			if b := bufs[n]; b != nil {
				if ferr := b.Free(); ferr != nil && err == nil {
					err = fmt.Errorf("freeing %s: %w", n, ferr)
				}
			}
		}
	}()
	for i, n := range names {
		data := c.Buffers[n]
		// The driver cannot allocate 0 bytes; a kernel may still take the pointer.
		size := max(int64(len(data)), 1)
		b, err := g.Dev.Alloc(size)
		if err != nil {
			return nil, fmt.Errorf("buffer %s: %w", n, err)
		}
		bufs[n] = b
		if len(data) > 0 {
			if err := b.CopyIn(data); err != nil {
				return nil, fmt.Errorf("copying %s in: %w", n, err)
			}
		}
		index[n] = uint64(i + 1)
	}
	addr := func(name string) (uint64, error) {
		a, ok := index[name]
		if !ok {
			return 0, fmt.Errorf("no buffer named %s", name)
		}
		return a, nil
	}
	var loaded []GPUKernel
	defer func() {
		for _, l := range loaded {
			if uerr := l.Unload(); uerr != nil && err == nil {
				err = fmt.Errorf("unloading: %w", uerr)
			}
		}
	}()
	for _, k := range c.Compiled.Kernels {
		args, err := c.Args(k, addr)
		if err != nil {
			return nil, err
		}
		for i, p := range k.Params {
			if p.Kind == "ptr" {
				args[i] = bufs[names[args[i].(uint64)-1]]
				continue
			}
			if args[i], err = ScalarArg(p.Kind, args[i]); err != nil {
				return nil, fmt.Errorf("%s: parameter %s: %v", k.Name, p.Name, err)
			}
		}
		l, err := g.Dev.Load(k)
		if err != nil {
			return nil, fmt.Errorf("loading %s: %w", k.Name, err)
		}
		loaded = append(loaded, l)
		if g.Loaded != nil {
			g.Loaded(k, l)
		}
		if err := l.Launch(args); err != nil {
			return nil, fmt.Errorf("%s: %w", k.Name, err)
		}
		// Wait after each kernel so that a fault is blamed on the kernel that made it.
		if err := g.Dev.Sync(); err != nil {
			return nil, fmt.Errorf("%s: %w", k.Name, err)
		}
	}
	// Buffers no kernel writes come back as they went in, without a copy: a pool of
	// many GiB (MLAPool) would otherwise be held twice on the host. (The emulator
	// fails a run that writes one.)
	written := map[string]bool{}
	for _, w := range c.Compiled.Workspace {
		written[w.Name] = true
	}
	for _, k := range c.Compiled.Kernels {
		for _, p := range k.Params {
			written[p.Name] = written[p.Name] || p.Written
		}
	}
	out := map[string][]byte{}
	for _, n := range names {
		if !written[n] {
			out[n] = c.Buffers[n]
			continue
		}
		dst := make([]byte, len(c.Buffers[n]))
		if len(dst) > 0 {
			if err := bufs[n].CopyOut(dst); err != nil {
				return nil, fmt.Errorf("copying %s out: %w", n, err)
			}
		}
		out[n] = dst
	}
	return out, nil
}

// ScalarArg converts a case's scalar (int, int32, int64, uint32, uint64, float32 or
// float64) to the Go type of a parameter kind (i32 int32, u32 uint32, i64 int64, u64
// uint64, f32 float32, f64 float64), refusing values the kind cannot hold exactly.
func ScalarArg(kind string, v any) (any, error) {
	var i int64
	var f float64
	isInt := true
	switch x := v.(type) {
	case int:
		i = int64(x)
	case int32:
		i = int64(x)
	case int64:
		i = x
	case uint32:
		i = int64(x)
	case uint64:
		if x > math.MaxInt64 {
			if kind == "u64" {
				return x, nil
			}
			return nil, fmt.Errorf("value %d does not fit %s", x, kind)
		}
		i = int64(x)
	case float32:
		f, isInt = float64(x), false
	case float64:
		f, isInt = x, false
	default:
		return nil, fmt.Errorf("unsupported scalar %T", v)
	}
	switch kind {
	case "i32", "u32", "i64", "u64":
		if !isInt {
			return nil, fmt.Errorf("float %v for integer parameter of kind %s", f, kind)
		}
	}
	switch kind {
	case "i32":
		if i < math.MinInt32 || i > math.MaxInt32 {
			return nil, fmt.Errorf("value %d does not fit i32", i)
		}
		return int32(i), nil
	case "u32":
		if i < 0 || i > math.MaxUint32 {
			return nil, fmt.Errorf("value %d does not fit u32", i)
		}
		return uint32(i), nil
	case "i64":
		return i, nil
	case "u64":
		if i < 0 {
			return nil, fmt.Errorf("value %d does not fit u64", i)
		}
		return uint64(i), nil
	case "f32":
		if isInt {
			return nil, fmt.Errorf("integer %d for f32 parameter", i)
		}
		return float32(f), nil
	case "f64":
		if isInt {
			return nil, fmt.Errorf("integer %d for f64 parameter", i)
		}
		return f, nil
	}
	return nil, fmt.Errorf("unknown parameter kind %q", kind)
}
