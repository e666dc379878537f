package runtime

import (
	"fmt"
	"unsafe"

	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// Device is one opened GPU with its primary context. In the cuda build all driver calls
// for it run on one goroutine locked to its OS thread (CUDA contexts are per thread), and
// every method marshals its work onto that goroutine, so a Device may be used from any
// goroutine. Close it when done.
type Device struct {
	ordinal   int
	name      string
	arch      string // "sm_90"
	cc        int    // compute capability major*10 + minor
	sms       int
	driver    int // cuDriverGetVersion: 1000*major + 10*minor
	smemOptin int // max dynamic shared memory per block after opting in
	totalMem  int64

	//lint:ignore U1000 the cuda build (cuda_cgo.go) uses it; staticcheck sees the stub build
	cuda deviceState // the build-specific part: worker goroutine and context
}

// Ordinal is the CUDA device number passed to Open.
func (d *Device) Ordinal() int { return d.ordinal }

// Name is the device's marketing name ("NVIDIA H200").
func (d *Device) Name() string { return d.name }

// Arch is the device's architecture as a PTX target name ("sm_90", "sm_120").
func (d *Device) Arch() string { return d.arch }

// SMs is the number of streaming multiprocessors, for sizing persistent grids.
func (d *Device) SMs() int { return d.sms }

// DriverVersion is the CUDA version the driver supports, as 1000*major + 10*minor
// (13000 for CUDA 13.0); it bounds the PTX ISA version the JIT accepts.
func (d *Device) DriverVersion() int { return d.driver }

// MaxSharedBytes is the most dynamic shared memory one block may use after opting in
// (227 KiB on sm_90), which is what LoadKernel checks SharedBytes against.
func (d *Device) MaxSharedBytes() int { return d.smemOptin }

// TotalMem is the device memory in bytes.
func (d *Device) TotalMem() int64 { return d.totalMem }

// String describes the device in one line for logs.
func (d *Device) String() string {
	return fmt.Sprintf("GPU %d: %s, %s, %d SMs, driver CUDA %d.%d", d.ordinal, d.name, d.arch, d.sms, d.driver/1000, d.driver%1000/10)
}

// Pick returns, among the targets a kernel was generated for, the newest one this device
// runs (see PickTarget).
func (d *Device) Pick(targets []string) (string, error) { return PickTarget(d.arch, targets) }

// LoadKernel JIT-compiles a generated kernel's PTX module on the device and returns it
// ready to launch with k's grid, block and shared memory.
func (d *Device) LoadKernel(k *ptx.Kernel) (*Kernel, error) {
	if k == nil || k.Module == nil {
		return nil, fmt.Errorf("runtime: LoadKernel needs a kernel with its PTX module")
	}
	return d.LoadPTX(k.Module.Print(), k)
}

// dynamicSharedDefault is the dynamic shared memory a kernel may use without opting in;
// above it the function attribute MAX_DYNAMIC_SHARED_SIZE_BYTES must be raised.
//
//lint:ignore U1000 the cuda build (cuda_cgo.go) uses it; staticcheck sees the stub build
const dynamicSharedDefault = 48 << 10

// checkLoad validates the facts for this device before JIT-compiling anything.
func (d *Device) checkLoad(k *ptx.Kernel) error {
	if err := CheckFacts(k); err != nil {
		return err
	}
	if k.Module != nil {
		t, err := target.ParseID(k.Module.Target)
		if err != nil {
			return fmt.Errorf("runtime: kernel %s: %w", k.Name, err)
		}
		if !t.RunsOn(d.cc) {
			return fmt.Errorf("runtime: kernel %s targets %s, which does not run on this %s device (use Device.Pick)", k.Name, k.Module.Target, d.arch)
		}
	}
	if d.smemOptin > 0 && k.SharedBytes > d.smemOptin {
		return fmt.Errorf("runtime: kernel %s needs %d bytes of shared memory, %s allows %d per block", k.Name, k.SharedBytes, d.arch, d.smemOptin)
	}
	return nil
}

// Kernel is a kernel loaded on a device, with the launch facts it was generated with.
type Kernel struct {
	// Facts are the launch facts: grid, block, dynamic shared memory and parameters.
	Facts *ptx.Kernel
	// JITLog is the driver's JIT info log (registers, spills) from loading the PTX.
	JITLog string
	// Registers and LocalBytes are what the driver reports for the compiled function
	// (CU_FUNC_ATTRIBUTE_NUM_REGS, LOCAL_SIZE_BYTES): the JIT's view, which on a newer
	// chip can differ from what the offline ptxas said.
	Registers, LocalBytes int

	dev *Device
	//lint:ignore U1000 the cuda build (cuda_cgo.go) uses it; staticcheck sees the stub build
	handle kernelHandle // build-specific module and function handles
}

// Device is the device the kernel was loaded on.
func (k *Kernel) Device() *Device { return k.dev }

// Stream is a CUDA stream of one device (Device.NewStream): kernels queued on it run in
// the order they were queued, and concurrently with other streams' work. A nil *Stream
// passed to Kernel.LaunchOn (or a generated LaunchOn) is the device's default stream,
// where Kernel.Launch queues. Streams are created blocking (CU_STREAM_DEFAULT), so the
// default stream's copies (Buffer.CopyIn, CopyOut) still wait for their work. Close it
// when done.
type Stream struct {
	dev    *Device
	closed bool
	//lint:ignore U1000 the cuda build (cuda.go) uses it; staticcheck sees the stub build
	handle streamHandle // build-specific driver handle
}

// Device is the device the stream belongs to.
func (s *Stream) Device() *Device { return s.dev }

// checkStream refuses, before the driver sees it, a stream k cannot be queued on: one
// already closed, or one of another device (a driver stream belongs to one context).
func (k *Kernel) checkStream(s *Stream) error {
	switch {
	case s == nil:
		return nil // the default stream
	case s.closed:
		return fmt.Errorf("runtime: kernel %s: stream: %w", k.Facts.Name, ErrClosed)
	case s.dev != k.dev:
		return fmt.Errorf("runtime: kernel %s: a stream of GPU %d, and the kernel is loaded on GPU %d", k.Facts.Name, s.dev.Ordinal(), k.dev.Ordinal())
	}
	return nil
}

// Buffer is a block of device memory. Host copies are typed by element (bf16 travels as
// its uint16 bits, e4m3 as bytes); a copy may cover a prefix of the buffer.
type Buffer struct {
	dev   *Device
	ptr   uint64 // device address
	size  int64  // bytes
	freed bool
}

// Size is the buffer's size in bytes.
func (b *Buffer) Size() int64 { return b.size }

// Ptr is the buffer's device address, for printing and alignment checks.
func (b *Buffer) Ptr() uint64 { return b.ptr }

// Device is the device the buffer lives on.
func (b *Buffer) Device() *Device { return b.dev }

// bytesOf views a slice of plain numbers as its bytes, without copying. Host and GPU are
// both little-endian, so the bytes are exactly the device layout.
func bytesOf[T uint16 | uint32 | int32 | float32 | uint8](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*int(unsafe.Sizeof(s[0])))
}

// CopyInBF16 copies bf16 values (as their uint16 bits) to the start of the buffer.
func (b *Buffer) CopyInBF16(src []uint16) error { return b.CopyIn(bytesOf(src)) }

// CopyOutBF16 copies the start of the buffer into bf16 values (uint16 bits).
func (b *Buffer) CopyOutBF16(dst []uint16) error { return b.CopyOut(bytesOf(dst)) }

// CopyInF32 copies float32 values to the start of the buffer.
func (b *Buffer) CopyInF32(src []float32) error { return b.CopyIn(bytesOf(src)) }

// CopyOutF32 copies the start of the buffer into float32 values.
func (b *Buffer) CopyOutF32(dst []float32) error { return b.CopyOut(bytesOf(dst)) }

// CopyInI32 copies int32 values to the start of the buffer.
func (b *Buffer) CopyInI32(src []int32) error { return b.CopyIn(bytesOf(src)) }

// CopyOutI32 copies the start of the buffer into int32 values.
func (b *Buffer) CopyOutI32(dst []int32) error { return b.CopyOut(bytesOf(dst)) }

// CopyInU8 copies bytes (u8, e4m3, packed data) to the start of the buffer.
func (b *Buffer) CopyInU8(src []uint8) error { return b.CopyIn(src) }

// CopyOutU8 copies the start of the buffer into bytes.
func (b *Buffer) CopyOutU8(dst []uint8) error { return b.CopyOut(dst) }

// checkCopy rejects copies larger than the buffer or on a freed buffer, before the driver
// would fault or overrun.
func (b *Buffer) checkCopy(dir string, n int) error {
	if b.freed {
		return ErrClosed
	}
	if int64(n) > b.size {
		return fmt.Errorf("runtime: copy %s of %d bytes does not fit a %d-byte buffer", dir, n, b.size)
	}
	return nil
}

// FromBF16 allocates a buffer holding a copy of host bf16 values (uint16 bits).
func (d *Device) FromBF16(src []uint16) (*Buffer, error) { return d.from(bytesOf(src)) }

// FromF32 allocates a buffer holding a copy of host float32 values.
func (d *Device) FromF32(src []float32) (*Buffer, error) { return d.from(bytesOf(src)) }

// FromI32 allocates a buffer holding a copy of host int32 values.
func (d *Device) FromI32(src []int32) (*Buffer, error) { return d.from(bytesOf(src)) }

// FromU8 allocates a buffer holding a copy of host bytes.
func (d *Device) FromU8(src []uint8) (*Buffer, error) { return d.from(src) }

func (d *Device) from(src []byte) (*Buffer, error) {
	b, err := d.Alloc(int64(len(src)))
	if err != nil {
		return nil, err
	}
	if err := b.CopyIn(src); err != nil {
		b.Free()
		return nil, err
	}
	return b, nil
}
