//go:build cuda && cgo

package runtime

import (
	"bytes"
	"fmt"
	goruntime "runtime"
	"sync"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/ptxgen/ptxgen/ptx"
)

// deviceState is the worker that owns the device's context: CUDA binds a context to the
// calling OS thread, so all calls go through one goroutine locked to one thread.
type deviceState struct {
	dev   cu.Device
	ctx   cu.CUContext
	calls chan func()
	mu    sync.RWMutex // held for reading by calls in flight; Close takes it for writing
	done  bool
}

// kernelHandle holds the driver handles of a loaded kernel.
type kernelHandle struct {
	mod      cu.Module
	fn       cu.Function
	unloaded bool
}

// streamHandle holds a stream's driver handle.
type streamHandle struct{ s cu.Stream }

// NewStream creates a stream on the device (blocking: CU_STREAM_DEFAULT, so the default
// stream's synchronous copies wait for its work too). Close releases it.
func (d *Device) NewStream() (*Stream, error) {
	s := &Stream{dev: d}
	err := d.do(func() (err error) {
		s.handle.s, err = cu.MakeStream(cu.DefaultStream)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("runtime: creating a stream on GPU %d: %w", d.ordinal, err)
	}
	return s, nil
}

// Sync waits until all work queued on the stream has finished, and returns the first
// asynchronous error.
func (s *Stream) Sync() error {
	if s == nil || s.closed {
		return ErrClosed
	}
	return s.dev.do(func() error {
		if err := s.handle.s.Synchronize(); err != nil {
			return fmt.Errorf("runtime: synchronizing a stream of GPU %d: %w", s.dev.ordinal, err)
		}
		return nil
	})
}

// Close releases the stream; work already queued on it still runs to the end. A closed
// stream cannot be launched on.
func (s *Stream) Close() error {
	if s == nil || s.closed {
		return ErrClosed
	}
	s.closed = true
	return s.dev.do(func() error { return s.handle.s.Destroy() })
}

// Open opens GPU number ordinal, retains its primary context (the one the CUDA runtime
// and other libraries share) and starts the goroutine that makes all calls for it.
func Open(ordinal int) (*Device, error) {
	d := &Device{ordinal: ordinal}
	d.cuda.calls = make(chan func())
	ready := make(chan error, 1)
	go d.loop(ready)
	if err := <-ready; err != nil {
		return nil, err
	}
	return d, nil
}

// loop is the device goroutine. It never unlocks its thread: when it returns after Close
// the thread is discarded with it, so no other goroutine inherits the current context.
func (d *Device) loop(ready chan<- error) {
	goruntime.LockOSThread()
	if err := d.init(); err != nil {
		ready <- err
		return
	}
	ready <- nil
	for f := range d.cuda.calls {
		f()
	}
}

// init runs on the device goroutine.
func (d *Device) init() error {
	n, err := cu.NumDevices()
	if err != nil {
		return fmt.Errorf("runtime: counting devices: %w", err)
	}
	if d.ordinal < 0 || d.ordinal >= n {
		return fmt.Errorf("runtime: no GPU %d (this machine has %d)", d.ordinal, n)
	}
	dev, err := cu.GetDevice(d.ordinal)
	if err != nil {
		return fmt.Errorf("runtime: GPU %d: %w", d.ordinal, err)
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return fmt.Errorf("runtime: GPU %d: retaining primary context: %w", d.ordinal, err)
	}
	if err := cu.SetCurrentContext(ctx); err != nil {
		dev.ReleasePrimaryCtx()
		return fmt.Errorf("runtime: GPU %d: making context current: %w", d.ordinal, err)
	}
	d.cuda.dev, d.cuda.ctx = dev, ctx
	fail := func(what string, err error) error {
		dev.ReleasePrimaryCtx()
		return fmt.Errorf("runtime: GPU %d: %s: %w", d.ordinal, what, err)
	}
	if d.name, err = dev.Name(); err != nil {
		return fail("name", err)
	}
	major, minor, err := dev.ComputeCapability()
	if err != nil {
		return fail("compute capability", err)
	}
	d.cc = major*10 + minor
	d.arch = fmt.Sprintf("sm_%d", d.cc)
	if d.sms, err = dev.Attribute(cu.MultiprocessorCount); err != nil {
		return fail("SM count", err)
	}
	if d.smemOptin, err = dev.Attribute(attrSharedOptin); err != nil {
		return fail("shared memory limit", err)
	}
	if d.totalMem, err = dev.TotalMem(); err != nil {
		return fail("memory size", err)
	}
	d.driver = cu.Version()
	return nil
}

// do runs f on the device goroutine and waits for it. A panic in f is re-raised in the
// caller, where its stack makes sense.
func (d *Device) do(f func() error) error {
	s := &d.cuda
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.done {
		return ErrClosed
	}
	done := make(chan error, 1)
	var pv any
	s.calls <- func() {
		defer func() {
			if r := recover(); r != nil {
				pv = r
				done <- nil
			}
		}()
		done <- f()
	}
	err := <-done
	if pv != nil {
		panic(pv)
	}
	return err
}

// Close waits for pending work, releases the primary context and stops the device
// goroutine. Buffers and kernels of the device must not be used afterwards.
func (d *Device) Close() error {
	s := &d.cuda
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done {
		return ErrClosed
	}
	s.done = true
	errc := make(chan error, 1)
	s.calls <- func() {
		err := cu.Synchronize()
		if rerr := s.dev.ReleasePrimaryCtx(); err == nil {
			err = rerr
		}
		errc <- err
	}
	close(s.calls)
	if err := <-errc; err != nil {
		return fmt.Errorf("runtime: closing GPU %d: %w", d.ordinal, err)
	}
	return nil
}

// Sync waits until all work queued on the device has finished, and returns the first
// asynchronous error (a kernel's illegal address surfaces here).
func (d *Device) Sync() error {
	return d.do(func() error {
		if err := cu.Synchronize(); err != nil {
			return fmt.Errorf("runtime: synchronizing GPU %d: %w", d.ordinal, err)
		}
		return nil
	})
}

// jitLogBytes sizes the JIT log buffers; the driver truncates longer logs.
const jitLogBytes = 64 << 10

// LoadPTX JIT-compiles PTX text on the device and returns the entry facts.Name, which
// will launch with facts' grid, block, shared memory and parameter checks. facts.Module
// may be nil when the text did not come from a ptx.Module. The driver's JIT error log is
// carried in the returned *LoadError, its info log in Kernel.JITLog.
func (d *Device) LoadPTX(text string, facts *ptx.Kernel) (*Kernel, error) {
	if err := d.checkLoad(facts); err != nil {
		return nil, err
	}
	k := &Kernel{Facts: facts, dev: d}
	err := d.do(func() error {
		// Go-allocated buffers: cu passes their addresses to the driver as integers, so they
		// must stay referenced until after the call, which the reads below guarantee.
		errLog := make([]byte, jitLogBytes)
		infoLog := make([]byte, jitLogBytes)
		mod, err := cu.LoadDataEx(text,
			&cu.JITErrorLogBuffer{Buffer: errLog},
			&cu.JITInfoLogBuffer{Buffer: infoLog},
			&cu.JITLogVerbose{Enabled: true},
		)
		k.JITLog = cString(infoLog)
		if err != nil {
			return &LoadError{Kernel: facts.Name, Arch: d.arch, Err: err, Log: cString(errLog), Info: k.JITLog}
		}
		fn, err := mod.Function(facts.Name)
		if err != nil {
			mod.Unload()
			return fmt.Errorf("runtime: kernel %s: no such entry in the loaded PTX: %w", facts.Name, err)
		}
		if facts.SharedBytes > dynamicSharedDefault {
			if err := setMaxDynamicShared(&fn, facts.SharedBytes); err != nil {
				mod.Unload()
				return fmt.Errorf("runtime: kernel %s: %w", facts.Name, err)
			}
		}
		if k.Registers, err = fn.Attribute(cu.NumRegs); err != nil {
			mod.Unload()
			return fmt.Errorf("runtime: kernel %s: register count: %w", facts.Name, err)
		}
		if k.LocalBytes, err = fn.Attribute(cu.LocalSizeBytes); err != nil {
			mod.Unload()
			return fmt.Errorf("runtime: kernel %s: local memory size: %w", facts.Name, err)
		}
		k.handle = kernelHandle{mod: mod, fn: fn}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

// cString returns the text in a driver-filled buffer, which ends at the first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(bytes.TrimRight(b, "\n"))
}

// Launch checks args against the kernel's parameters (see CheckArgs) and queues the kernel
// with its grid, block and dynamic shared memory on the device's default stream. It does
// not wait: errors inside the kernel surface at the next Sync or copy.
func (k *Kernel) Launch(args ...Arg) error { return k.LaunchOn(nil, args...) }

// LaunchOn is Launch on stream s (Device.NewStream; nil is the default stream), which must
// belong to the kernel's device. Errors inside the kernel surface at s.Sync, Device.Sync
// or a copy.
func (k *Kernel) LaunchOn(s *Stream, args ...Arg) error {
	if k.handle.unloaded {
		return ErrClosed
	}
	if err := k.checkStream(s); err != nil {
		return err
	}
	f := k.Facts
	if err := CheckArgs(f, args); err != nil {
		return err
	}
	for i, a := range args {
		if a.buf != nil && a.buf.dev != k.dev {
			return &ArgError{Kernel: f.Name, Index: i, Name: f.Params[i].Name, Msg: "buffer belongs to another device"}
		}
	}
	grid, err := LaunchGrid(f, args)
	if err != nil {
		return err
	}
	if grid[0] == 0 || grid[1] == 0 || grid[2] == 0 {
		return nil // a call with 0 rows does nothing
	}
	slots := marshal(args)
	stream := cu.Stream{} // the default stream
	if s != nil {
		stream = s.handle.s
	}
	return k.dev.do(func() error {
		var err error
		if f.Programmatic {
			err = launchProgrammatic(&k.handle.fn, &stream, grid, f.Block, f.SharedBytes, slots)
		} else {
			params := make([]unsafe.Pointer, len(slots))
			for i := range slots {
				params[i] = unsafe.Pointer(&slots[i])
			}
			err = k.handle.fn.Launch(grid[0], grid[1], grid[2], f.Block, 1, 1, f.SharedBytes, stream, params)
		}
		if err != nil {
			return fmt.Errorf("runtime: launching %s (grid %v, block %d, %d bytes shared): %w", f.Name, grid, f.Block, f.SharedBytes, err)
		}
		return nil
	})
}

// Unload frees the kernel's module on the device.
func (k *Kernel) Unload() error {
	if k.handle.unloaded {
		return ErrClosed
	}
	k.handle.unloaded = true
	return k.dev.do(func() error { return k.handle.mod.Unload() })
}

// Time runs launch (which should queue work on the device, e.g. Kernel.Launch calls)
// between two CUDA events and returns the GPU time between them in milliseconds. It waits
// for the work to finish; host-side overhead before the first launch is not counted.
func (d *Device) Time(launch func() error) (float32, error) {
	var start, stop cu.Event
	err := d.do(func() (err error) {
		if start, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
			return err
		}
		if stop, err = cu.MakeEvent(cu.DefaultEvent); err != nil {
			cu.DestroyEvent(&start)
			return err
		}
		return start.Record(cu.Stream{})
	})
	if err != nil {
		return 0, fmt.Errorf("runtime: timing: %w", err)
	}
	defer d.do(func() error {
		cu.DestroyEvent(&start)
		cu.DestroyEvent(&stop)
		return nil
	})
	if err := launch(); err != nil {
		return 0, err
	}
	var ms float64
	err = d.do(func() (err error) {
		if err = stop.Record(cu.Stream{}); err != nil {
			return err
		}
		if err = stop.Synchronize(); err != nil {
			return err
		}
		ms, err = start.Elapsed(stop)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("runtime: timing: %w", err)
	}
	return float32(ms), nil
}

// Alloc allocates bytes of device memory (uninitialised; see Zero).
func (d *Device) Alloc(bytes int64) (*Buffer, error) {
	if bytes <= 0 {
		return nil, fmt.Errorf("runtime: Alloc(%d): size must be positive", bytes)
	}
	var p cu.DevicePtr
	err := d.do(func() (err error) {
		p, err = cu.MemAlloc(bytes)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("runtime: allocating %d bytes on GPU %d: %w", bytes, d.ordinal, err)
	}
	return &Buffer{dev: d, ptr: uint64(p), size: bytes}, nil
}

// CopyIn copies src to the start of the buffer and waits for the copy.
func (b *Buffer) CopyIn(src []byte) error {
	if err := b.checkCopy("in", len(src)); err != nil || len(src) == 0 {
		return err
	}
	return b.dev.do(func() error {
		return cu.MemcpyHtoD(cu.DevicePtr(b.ptr), unsafe.Pointer(&src[0]), int64(len(src)))
	})
}

// CopyOut copies the start of the buffer into dst. It waits for queued kernels first (the
// copy runs on the default stream), so it also reports their asynchronous errors.
func (b *Buffer) CopyOut(dst []byte) error {
	if err := b.checkCopy("out", len(dst)); err != nil || len(dst) == 0 {
		return err
	}
	return b.dev.do(func() error {
		return cu.MemcpyDtoH(unsafe.Pointer(&dst[0]), cu.DevicePtr(b.ptr), int64(len(dst)))
	})
}

// Zero sets every byte of the buffer to 0.
func (b *Buffer) Zero() error {
	if b.freed {
		return ErrClosed
	}
	return b.dev.do(func() error { return cu.MemsetD8(cu.DevicePtr(b.ptr), 0, b.size) })
}

// ZeroAsync queues a memset of the buffer on the default stream and returns
// without waiting: the benchmark flushes L2 with it outside a timed region while
// the host goes on queueing the timed launches.
func (b *Buffer) ZeroAsync() error {
	if b.freed {
		return ErrClosed
	}
	return b.dev.do(func() error { return cu.MemsetD8Async(cu.DevicePtr(b.ptr), 0, b.size, cu.Stream{}) })
}

// Free releases the buffer's device memory.
func (b *Buffer) Free() error {
	if b.freed {
		return ErrClosed
	}
	b.freed = true
	return b.dev.do(func() error { return cu.MemFree(cu.DevicePtr(b.ptr)) })
}
