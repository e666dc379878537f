//go:build !cuda || !cgo

package runtime

import (
	"errors"
	"strings"
	"testing"
)

func TestOpenWithoutCUDA(t *testing.T) {
	d, err := Open(0)
	if d != nil || !errors.Is(err, ErrNoCUDA) {
		t.Fatalf("Open(0) = %v, %v; want nil, ErrNoCUDA", d, err)
	}
}

// TestErrNoCUDASaysHow: the error names what a downstream build needs (-tags cuda,
// cgo and the CUDA headers), not a make target only this repository has.
func TestErrNoCUDASaysHow(t *testing.T) {
	msg := ErrNoCUDA.Error()
	for _, want := range []string{"-tags cuda", "CGO_ENABLED=1", "CGO_CFLAGS"} {
		if !strings.Contains(msg, want) {
			t.Errorf("ErrNoCUDA %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "make ") {
		t.Errorf("ErrNoCUDA %q points at a make target downstream modules do not have", msg)
	}
}
