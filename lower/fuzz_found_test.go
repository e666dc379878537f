package lower

import (
	"encoding/binary"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/target"
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

// TestPaddingPastTheTileLimit: warp counts whose splits share no factor (31 warps, a
// role of 6) pad phased.ir's 64 x 64 tiles to 1488 x 1488, past ir.MaxTileElems:
// legalize refuses the kernel naming the tile, its padded shape and the warp counts,
// with the pass checks on and off (found by mutating FuzzCompile's seeds: the IR check
// after legalize refused the padded tile as a lowering bug, and without the checks the
// smem pass advised loading a 64-column tile in column chunks).
func TestPaddingPastTheTileLimit(t *testing.T) {
	src, err := os.ReadFile("../ptxgen/testdata/from/phased.ir")
	if err != nil {
		t.Fatal(err)
	}
	k, err := ir.Parse(strings.Replace(string(src), "warps 8 role score 0 4", "warps 31 role score 0 6", 1))
	if err != nil {
		t.Fatal(err)
	}
	want := "roles_phased: legalize: %xt (tile<64x64xbf16>) pads to tile<1488x1488xbf16> for the m16 x n8 granules split over the CTA's 31 warps, role score's 6, more than the 1048576 elements a tile may hold"
	defer func(c bool) { CheckPasses = c }(CheckPasses)
	for _, check := range []bool{true, false} {
		CheckPasses = check
		_, err := Compile(k, target.MustLookup("sm_120"), Options{Check: check})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("checks %v: %v\nwant an error with %s", check, err, want)
		}
	}
}
