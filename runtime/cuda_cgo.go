//go:build cuda && cgo

package runtime

// The few driver calls gorgonia.org/cu v0.9.6 does not wrap.

/*
#cgo LDFLAGS: -lcuda
#include <cuda.h>

// Raising MAX_DYNAMIC_SHARED_SIZE_BYTES is the opt-in a kernel needs to use more than
// 48 KiB of dynamic shared memory; without it the launch fails with INVALID_VALUE.
static CUresult ptxgen_set_max_dynamic_smem(CUfunction f, int bytes) {
	return cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
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
