//go:build !cuda || !cgo

package runtime

import (
	"errors"
	"testing"
)

func TestOpenWithoutCUDA(t *testing.T) {
	d, err := Open(0)
	if d != nil || !errors.Is(err, ErrNoCUDA) {
		t.Fatalf("Open(0) = %v, %v; want nil, ErrNoCUDA", d, err)
	}
}
