package emu

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/internal/testkernels"
	"github.com/ptxgen/ptxgen/ptx"
)

// rowsFill is testkernels.RowsFill: CTA t writes t+1 to out[t], capacity 8.
func rowsFill(t *testing.T) *ptx.Kernel {
	t.Helper()
	k, err := testkernels.RowsFill()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRunKernelRows(t *testing.T) {
	k := rowsFill(t)
	if k.GridParam != [3]string{"", "rows", ""} || k.MaxRows() != 8 || k.Params[1].PerRow != 4 {
		t.Fatalf("facts: grid %v bound %v, out %+v", k.Grid, k.GridParam, k.Params[1])
	}
	for _, rows := range []int{0, 1, 3, 8} {
		mem := NewMemory()
		sentinel := make([]byte, 4*max(rows, 1))
		for i := range sentinel {
			sentinel[i] = 0xFF
		}
		addr := mem.Alloc("out", sentinel)
		if err := RunKernel(k, []any{int32(rows), addr}, mem); err != nil {
			t.Fatalf("rows %d: %v", rows, err)
		}
		got := mem.Bytes("out")
		for i := 0; i < len(got)/4; i++ {
			v := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:]))
			if i < rows && v != float32(i+1) || i >= rows && !math.IsNaN(float64(v)) {
				t.Errorf("rows %d: out[%d] = %v", rows, i, v)
			}
		}
	}
	mem := NewMemory()
	addr := mem.Alloc("out", make([]byte, 8))
	if err := RunKernel(k, []any{int32(3), addr}, mem); err == nil || !strings.Contains(err.Error(), "12 bytes needed") {
		t.Errorf("3 rows into 8 bytes: %v", err)
	}
	if err := RunKernel(k, []any{int32(9), addr}, mem); err == nil || !strings.Contains(err.Error(), "9 rows, want 0..8") {
		t.Errorf("9 rows: %v", err)
	}
	if err := RunKernel(k, []any{int64(1), addr}, mem); err == nil || !strings.Contains(err.Error(), "want int32") {
		t.Errorf("i64 rows: %v", err)
	}
}
