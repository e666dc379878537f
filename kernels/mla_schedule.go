package kernels

import (
	"fmt"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower"
)

// The decode's dot schedules (ir.DotSchedule), as the variant states them: the
// grids of P·V and, in CTAs of more than 16 heads, of the scores; with HoldQ (large kernels), the
// scores' Q held in registers. A 16-head CTA's score grid is left to the lowering,
// which replicates the scores in latency-bound launches and splits their reduction
// over the warps where that fits (DESIGN.md, the layout pass).

// kHome is the A home of the heads-in-N dots, whose A is a K slice or its
// transpose: "" (the lowering's choice: a staged bf16 tile) or, with KFrags,
// fragments computed from the raw ring.
func (v MLAVariant) kHome() string {
	if v.KFrags && v.HeadsInN {
		return ir.HomeComputed
	}
	return ""
}

// kBHome is the B home of the 16- and 64-head CTAs' dots, whose B is a K slice (P·V)
// or its transpose (the scores): "" (a staged bf16 tile) or, with KFrags, fragments
// computed from the raw ring: in a 16-head CTA each pair once per tile for both
// dots, in a 64-head CTA by each row group of warps that reads it.
func (v MLAVariant) kBHome() string {
	if v.KFrags && !v.HeadsInN {
		return ir.HomeComputed
	}
	return ""
}

// kBPerm is whether those dots read the computed pairs in kperm order (KPerm).
func (v MLAVariant) kBPerm() bool { return v.KPerm && v.kBHome() == ir.HomeComputed }

// pvGrid is the warp grid of the P·V dots whose output slice is w columns wide.
// A 16-head CTA (one row group) splits it by columns over its warps. Wider CTAs
// read P through shared memory (the scores are split over several row groups),
// so the grid is the one whose warps read the fewest bytes: P is read by every
// column group and shared by the slices of its width, a K/V slice by every row
// group and shared by the dots that read it (P·V's one or two terms, and the
// scores' when the tile is as wide as the slice). That keeps the 64-head CTA's
// P·V at 2x4 (exact and bf16p; 1x8, V read once, measured 2-3% slower at T=256,
// run 49).
func (v MLAVariant) pvGrid(chunks [][3]int, w int) [2]int {
	warps := v.Warps - v.Producer
	if v.HeadsInN {
		// Oᵀ: the slice's dims in M, split by rows (each warp its dims of V).
		wm, wn, _ := lower.RowsFirstGrid(w/16, v.HeadBlock/8, warps)
		return [2]int{wm, wn}
	}
	mt, nt := v.HeadBlock/16, w/8
	wm, wn, err := lower.RowsFirstGrid(mt, nt, warps)
	if err != nil || mt == 1 {
		return [2]int{wm, wn}
	}
	slices := 0
	for _, ch := range chunks {
		if ch[2] == w {
			slices++
		}
	}
	if slices < 2 {
		return [2]int{wm, wn}
	}
	terms := 2
	if v.Precision == PrecisionBF16P {
		terms = 1
	}
	readers := terms
	if v.Tile == w {
		readers++
	}
	bytesP, bytesKV := float64(v.HeadBlock*v.Tile*2), float64(v.Tile*w*2)
	wm, wn = lower.FewestBytesGrid(mt, nt, warps, wm, wn, bytesP/float64(slices), bytesKV/float64(readers))
	return [2]int{wm, wn}
}

// scoreSchedule is the schedule of the score dot of a slice w columns wide: nil
// where the lowering chooses it (one row group of 16 heads, which it may
// replicate), just `a regs` there with HoldQ. Wider CTAs' score warps (the score
// role's, else every math warp) split the tile by the fewest bytes read, ties
// keeping whole rows per warp: the score role's 4 warps take A2's 32 x 32 quadrants
// (2x2: Q and K each read twice per tile; 4x1 reads K four times): 1.5-2.4%
// faster exact, 2.2-3.2% bf16p (run 51); 8 warps tie 4x2 against 2x4 and keep
// 4x2.
func (v MLAVariant) scoreSchedule(w int) *ir.DotSchedule {
	var hold string
	if v.HoldQ {
		hold = ir.HomeRegs
	}
	if v.HeadBlock == 16 {
		if hold == "" && v.kBHome() == "" {
			return nil
		}
		return &ir.DotSchedule{AHome: hold, BHome: v.kBHome(), KPerm: v.kBPerm()}
	}
	warps := v.scoreGridWarps()
	mt, nt := v.HeadBlock/16, v.Tile/8
	wm, wn, err := lower.RowsFirstGrid(mt, nt, warps)
	if err != nil {
		return nil
	}
	wm, wn = lower.FewestBytesGrid(mt, nt, warps, wm, wn, float64(v.HeadBlock*w*2), float64(w*v.Tile*2))
	if v.ScoreRows > 0 {
		wm, wn = v.ScoreRows, warps/v.ScoreRows // mlaDecodeKernel checks that it divides
	}
	if wm == 1 {
		if hold == "" && v.kBHome() == "" {
			return nil // one row group: the lowering may replicate the scores
		}
		return &ir.DotSchedule{AHome: hold, BHome: v.kBHome(), KPerm: v.kBPerm()}
	}
	return &ir.DotSchedule{Warps: [2]int{wm, wn}, AHome: hold, BHome: v.kBHome(), KPerm: v.kBPerm()}
}

// checkScoreRows reports a ScoreRows that does not divide the CTA's score grid (its
// score warps over HeadBlock/16 x Tile/8 m16n8 tiles), naming the ones that do.
func (v MLAVariant) checkScoreRows() error {
	if v.ScoreRows == 0 {
		return nil
	}
	warps := v.scoreGridWarps()
	fits := func(r int) bool { return warps%r == 0 && (v.HeadBlock/16)%r == 0 && (v.Tile/8)%(warps/r) == 0 }
	if fits(v.ScoreRows) {
		return nil
	}
	var ok []string
	for _, r := range []int{1, 2, 4} {
		if fits(r) {
			ok = append(ok, fmt.Sprint(r))
		}
	}
	return &ConfigError{Flag: "score-rows", Value: fmt.Sprint(v.ScoreRows),
		Want: fmt.Sprintf("0 or one of %s: the row groups of %d score warps over %d x %d m16n8 tiles (%d heads, %d-candidate tiles)", strings.Join(ok, ", "), warps, v.HeadBlock/16, v.Tile/8, v.HeadBlock, v.Tile)}
}

// scoreGridWarps are the warps a wider CTA's score grid spans: the score role's,
// else every math warp.
func (v MLAVariant) scoreGridWarps() int {
	if v.Score > 0 {
		return v.Score
	}
	return v.Warps - v.Producer
}
