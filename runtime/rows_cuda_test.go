//go:build cuda && cgo

package runtime

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/internal/testkernels"
)

// TestRowsLaunch: a kernel whose grid's y is its rows argument (capacity 8; CTA t writes
// t+1 to out[t]) runs calls of 3 and 8 rows from one load, 0 rows launch nothing, and 9
// rows or a buffer too small for the rows are refused before the driver sees them.
func TestRowsLaunch(t *testing.T) {
	facts, err := testkernels.RowsFill()
	check(t, err)
	k, err := dev.LoadKernel(facts)
	check(t, err)
	defer k.Unload()
	sentinel := make([]float32, 8)
	for i := range sentinel {
		sentinel[i] = -7
	}
	for _, rows := range []int{0, 3, 8} {
		d, err := dev.FromF32(sentinel)
		check(t, err)
		check(t, k.Launch(I32(int32(rows)), Ptr(d)))
		got := make([]float32, 8)
		check(t, d.CopyOutF32(got))
		d.Free()
		for i, v := range got {
			want := float32(-7)
			if i < rows {
				want = float32(i + 1)
			}
			if v != want && !(math.IsNaN(float64(v)) && math.IsNaN(float64(want))) {
				t.Errorf("rows %d: out[%d] = %v, want %v", rows, i, v, want)
			}
		}
	}
	small, err := dev.Alloc(8)
	check(t, err)
	defer small.Free()
	var ae *ArgError
	if err := k.Launch(I32(3), Ptr(small)); !errors.As(err, &ae) || ae.Name != "out" || !strings.Contains(err.Error(), "kernel may access 12") {
		t.Errorf("3 rows into 8 bytes: %v", err)
	}
	if err := k.Launch(I32(9), Ptr(small)); !errors.As(err, &ae) || ae.Name != "rows" || !strings.Contains(err.Error(), "9 rows, want 0..8") {
		t.Errorf("9 rows: %v", err)
	}
}
