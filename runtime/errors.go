package runtime

import (
	"errors"
	"fmt"
)

// ErrNoCUDA is returned by Open (and every GPU operation) in builds without the `cuda` tag
// or without cgo. It names the fix, because the usual cause is a missing build flag.
var ErrNoCUDA = errors.New("runtime: built without CUDA support; rebuild with `go build -tags cuda`, CGO_ENABLED=1 and the CUDA headers and stub libcuda.so in CGO_CFLAGS/CGO_LDFLAGS (ptxgen's README: On a GPU)")

// ErrClosed is returned by operations on a Device after Close, or on a freed Buffer or an
// unloaded Kernel: their handles are gone, and using them would crash inside the driver.
var ErrClosed = errors.New("runtime: device, buffer or kernel already closed")

// ArgError reports a kernel argument that does not match the kernel's parameter list. It
// names the argument by index and name so the caller can find it in a long argument list.
type ArgError struct {
	Kernel string // entry name
	Index  int    // argument position, from 0; -1 for a count mismatch
	Name   string // parameter name from ptx.KParam, "" for a count mismatch
	Msg    string
}

func (e *ArgError) Error() string {
	if e.Index < 0 {
		return fmt.Sprintf("runtime: kernel %s: %s", e.Kernel, e.Msg)
	}
	return fmt.Sprintf("runtime: kernel %s: argument %d (%s): %s", e.Kernel, e.Index, e.Name, e.Msg)
}

// LoadError is returned when the driver rejects a module. Log is the driver's JIT error
// log: the PTX line and the reason, which the bare CUDA error code does not carry.
type LoadError struct {
	Kernel string
	Arch   string // the device's architecture, since JIT errors often mean "too new a target"
	Err    error  // the CUDA error
	Log    string // JIT error log, trimmed at the first NUL
	Info   string // JIT info log
}

func (e *LoadError) Error() string {
	msg := fmt.Sprintf("runtime: loading kernel %s on %s: %v", e.Kernel, e.Arch, e.Err)
	if e.Log != "" {
		msg += "\nJIT error log:\n" + e.Log
	}
	if e.Info != "" {
		msg += "\nJIT info log:\n" + e.Info
	}
	return msg
}

func (e *LoadError) Unwrap() error { return e.Err }
