package lower

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
)

// TestElementCopiesOfF32: a 2-D load of f32 rows known only to be 1- or 2-byte aligned
// (no div, or div 2) is copied to shared memory element by element; each copy starts
// from a zero of its type (found by mutating FuzzCompile's seeds: `mov.f32 %f0, 0`, an
// integer immediate, which the emit check refuses), and the row sums come out right in
// the emulator.
func TestElementCopiesOfF32(t *testing.T) {
	const src = `kernel rowsums(%x: ptr<f32>DIV bytes 1024, %y: ptr<f32> div 16 bytes 64) grid(1, 1, 1) warps 1 {
  %r = iota : tile<16xi32>
  %r64 = cast %r : tile<16xi64>
  %w = const 16 : i64
  %rows = mul %r64, %w : tile<16xi64>
  %z = const 0 : i64
  %t = load %x[%rows, %z] : tile<16x16xf32>
  %s = reduce sum %t, 1 : tile<16xf32>
  store %y[%r64], %s
}
`
	x := make([]float32, 256)
	want := make([]float32, 16)
	for i := range x {
		x[i] = float32(i%7) - 3
		want[i/16] += x[i]
	}
	for _, div := range []string{"", " div 2"} {
		k, err := ir.Parse(strings.ReplaceAll(src, "DIV", div))
		if err != nil {
			t.Fatal(err)
		}
		for _, arch := range []string{"sm_90", "sm_80"} {
			got, _ := runBytes(t, k, arch, map[string][]byte{"x": f32Bytes(x), "y": make([]byte, 64)})
			for i, w := range want {
				if g := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])); g != w {
					t.Errorf("x%s on %s: row %d sums to %g, want %g", div, arch, i, g, w)
				}
			}
		}
	}
}
