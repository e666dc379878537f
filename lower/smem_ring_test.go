package lower

import (
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/target"
)

// ringKernel is a loop of STAGES stages that sums the rows of a 16 x 32 and a
// 64 x COLS f32 tile per iteration: both loads are issued ahead into its ring.
const ringKernel = `kernel ring(%a: ptr<f32> div 16 bytes 16384, %b: ptr<f32> div 16 bytes 1048576, %y: ptr<f32> div 16 bytes 320) grid(1, 1, 1) warps 4 {
  %r16 = iota : tile<16xi32>
  %r16w = cast %r16 : tile<16xi64>
  %w256 = const 256 : i64
  %arows = mul %r16w, %w256 : tile<16xi64>
  %r64 = iota : tile<64xi32>
  %r64w = cast %r64 : tile<64xi64>
  %wb = const COLS : i64
  %brows0 = mul %r64w, %wb : tile<64xi64>
  %za = const 0.0 : tile<16xf32>
  %zb = const 0.0 : tile<64xf32>
  %lo = const 0 : i32
  %hi = const 4 : i32
  %sa, %sb = for %j = %lo to %hi step 1 stages STAGES iter(%ca = %za, %cb = %zb) {
    %c32 = const 32 : i32
    %k0i = mul %j, %c32 : i32
    %k0 = cast %k0i : i64
    %at = load %a[%arows, %k0] : tile<16x32xf32>
    %cb0 = const 64 : i32
    %b0i = mul %j, %cb0 : i32
    %b0 = cast %b0i : i64
    %bstep = const COLS : i64
    %b1 = mul %b0, %bstep : i64
    %z = const 0 : i64
    %brows = add %brows0, %b1 : tile<64xi64>
    %bt = load %b[%brows, %z] : tile<64xCOLSxf32>
    %ra = reduce sum %at, 1 : tile<16xf32>
    %rb = reduce sum %bt, 1 : tile<64xf32>
    %na = add %ca, %ra : tile<16xf32>
    %nb = add %cb, %rb : tile<64xf32>
    yield %na, %nb
  }
  %ya = cast %r16 : tile<16xi64>
  store %y[%ya], %sa
  %o16 = const 16 : i64
  %yb = add %r64w, %o16 : tile<64xi64>
  store %y[%yb], %sb
}
`

func compileRing(t *testing.T, stages, cols string) error {
	t.Helper()
	k, err := ir.Parse(strings.NewReplacer("STAGES", stages, "COLS", cols).Replace(ringKernel))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Compile(k, target.MustLookup("sm_120"), Options{Check: true})
	return err
}

// TestRingTooLargeNamesTheRing: a pipelined loop whose ring alone exceeds shared
// memory is named as the ring (stages x slot, its largest tile) with the advice of
// fewer stages, which holds; it used to blame its first tile, 2 KB, for the ring's
// bytes and advise a chunk loop that is already there (issue 29).
func TestRingTooLargeNamesTheRing(t *testing.T) {
	err := compileRing(t, "4", "112")
	want := "ring: smem: kernel needs 123136 bytes of shared memory per CTA; sm_120 allows at most 101376; the pipeline ring of loop %j alone takes 122880 bytes (4 stages x 30720 bytes a slot; its largest tile, %bt (tile<64x112xf32>), takes 28672): ask for fewer stages (stages 3 needs about 92416 bytes)"
	if err == nil || err.Error() != want {
		t.Errorf("4 stages of 30 KB on sm_120: %v\nwant %s", err, want)
	}
	if err := compileRing(t, "3", "112"); err != nil {
		t.Errorf("3 stages, which the error advises: %v", err)
	}
	err = compileRing(t, "2", "400")
	want = "the pipeline ring of loop %j alone takes 208896 bytes (2 stages x 104448 bytes a slot; its largest tile, %bt (tile<64x400xf32>), takes 102400): fewer stages do not fit either: load %bt in smaller chunks"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("2 stages of a tile past shared memory on sm_120: %v\nwant an error with %s", err, want)
	}
}
