//go:build cuda && cgo

package runtime

// The few driver calls gorgonia.org/cu v0.9.6 does not wrap.

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>
#include <string.h>

// Raising MAX_DYNAMIC_SHARED_SIZE_BYTES is the opt-in a kernel needs to use more than
// 48 KiB of dynamic shared memory; without it the launch fails with INVALID_VALUE.
static CUresult ptxgen_set_max_dynamic_smem(CUfunction f, int bytes) {
	return cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
}

// Programmatic dependent launch (sm_90 and later): the kernel may start while the
// previous kernel in the stream is still running; it waits for it in its own code
// (griddepcontrol.wait). slots holds one 8-byte value per parameter; the driver copies
// each parameter's declared size from the start of its slot.
static CUresult ptxgen_launch_programmatic(CUfunction f, CUstream stream, unsigned gx, unsigned gy, unsigned gz,
		unsigned block, unsigned smem, unsigned long long *slots, int n) {
	void *params[64];
	if (n > 64) return CUDA_ERROR_INVALID_VALUE;
	for (int i = 0; i < n; i++) params[i] = &slots[i];
	CUlaunchAttribute attr;
	memset(&attr, 0, sizeof attr);
	attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
	attr.value.programmaticStreamSerializationAllowed = 1;
	CUlaunchConfig cfg;
	memset(&cfg, 0, sizeof cfg);
	cfg.gridDimX = gx; cfg.gridDimY = gy; cfg.gridDimZ = gz;
	cfg.blockDimX = block; cfg.blockDimY = 1; cfg.blockDimZ = 1;
	cfg.sharedMemBytes = smem;
	cfg.attrs = &attr;
	cfg.numAttrs = 1;
	cfg.hStream = stream;
	return cuLaunchKernelEx(&cfg, f, params, 0);
}

static const char *ptxgen_error_name(CUresult r) {
	const char *s = 0;
	if (cuGetErrorName(r, &s) != CUDA_SUCCESS || s == 0) return "CUDA_ERROR_UNKNOWN_CODE";
	return s;
}
*/
import "C"

import (
	"fmt"
	"unsafe"

	"gorgonia.org/cu"
)

// Attribute numbers cu has no names for. cu.DeviceAttribute and cu.FunctionAttribute are
// plain ints, so the header's values can be passed through cu's own getters.
const (
	attrSharedOptin      = cu.DeviceAttribute(C.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)
	attrMaxDynamicShared = cu.FunctionAttribute(C.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES)
)

// cu.Function is `struct { fn C.CUfunction }` with the field unexported, and cgo types are
// distinct per package, so the handle is read through the struct's memory. These constants
// fail to compile if a cu release ever changes the struct's size.
const (
	_ = unsafe.Sizeof(cu.Function{}) - unsafe.Sizeof(C.CUfunction(nil))
	_ = unsafe.Sizeof(C.CUfunction(nil)) - unsafe.Sizeof(cu.Function{})
)

// cuFunction returns the CUfunction handle inside fn.
func cuFunction(fn *cu.Function) C.CUfunction {
	return *(*C.CUfunction)(unsafe.Pointer(fn))
}

// cu.Stream is `struct { s C.CUstream }`, read the same way as cu.Function.
const (
	_ = unsafe.Sizeof(cu.Stream{}) - unsafe.Sizeof(C.CUstream(nil))
	_ = unsafe.Sizeof(C.CUstream(nil)) - unsafe.Sizeof(cu.Stream{})
)

// cuStream returns the CUstream handle inside s (nil: the default stream).
func cuStream(s *cu.Stream) C.CUstream {
	return *(*C.CUstream)(unsafe.Pointer(s))
}

// setMaxDynamicShared raises fn's dynamic shared memory limit to bytes, then reads the
// attribute back through cu's own getter: that proves the handle extraction above still
// matches cu's layout, instead of trusting it.
func setMaxDynamicShared(fn *cu.Function, bytes int) error {
	if r := C.ptxgen_set_max_dynamic_smem(cuFunction(fn), C.int(bytes)); r != C.CUDA_SUCCESS {
		return fmt.Errorf("cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES, %d): %s", bytes, C.GoString(C.ptxgen_error_name(r)))
	}
	got, err := fn.Attribute(attrMaxDynamicShared)
	if err != nil {
		return fmt.Errorf("reading MAX_DYNAMIC_SHARED_SIZE_BYTES back: %w", err)
	}
	if got != bytes {
		return fmt.Errorf("MAX_DYNAMIC_SHARED_SIZE_BYTES reads back %d after setting %d: CUfunction handle mismatch with gorgonia.org/cu", got, bytes)
	}
	return nil
}

// maxParams is how many parameters launchProgrammatic passes (its C side's array).
const maxParams = 64

// launchProgrammatic queues fn on stream with programmatic stream serialization allowed
// (ptx.Kernel.Programmatic): it may start while the kernel before it on that stream runs.
func launchProgrammatic(fn *cu.Function, stream *cu.Stream, grid [3]int, block, smem int, slots []uint64) error {
	if len(slots) > maxParams {
		return fmt.Errorf("%d parameters, at most %d", len(slots), maxParams)
	}
	var p *C.ulonglong
	if len(slots) > 0 {
		p = (*C.ulonglong)(unsafe.Pointer(&slots[0]))
	}
	r := C.ptxgen_launch_programmatic(cuFunction(fn), cuStream(stream), C.uint(grid[0]), C.uint(grid[1]), C.uint(grid[2]),
		C.uint(block), C.uint(smem), p, C.int(len(slots)))
	if r != C.CUDA_SUCCESS {
		return fmt.Errorf("cuLaunchKernelEx(programmatic stream serialization): %s", C.GoString(C.ptxgen_error_name(r)))
	}
	return nil
}
