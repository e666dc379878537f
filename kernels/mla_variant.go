package kernels

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/plan"
)

// MLAVariant is one design of the decode's CTA, as data: the kernel builder builds
// it (mlaDecodeKernel, which states its dots' schedules: mla_schedule.go), the plan's
// families carry it (plan.Family's first fields, which the launch manifest writes),
// `dump -plan` prints it, and the plan sweep test checks that the lowering splits the
// accumulators as WarpGrid says. Adding a variant is one such value
// (MLAConfig.variant, and the flags that select it) plus the lowering features it
// needs; DESIGN.md ("Where the decode's design lives") lists the files.
type MLAVariant struct {
	HeadBlock int // heads per CTA: one m16 row group per 16
	Warps     int // warps per CTA
	// WarpGrid is how the first output slice's m16n8 tiles are split over the
	// warps: row groups x column groups (16 heads over 4 warps: 1x4; 64 heads
	// over 8: 2x4), the schedule its P·V dots state (pvGrid).
	WarpGrid [2]int
	Tile     int // candidates per loop iteration
	// Stages is the number of candidate tiles in flight in the family's kernels: 1,
	// a tile's gathers are issued together and its math waits for them; 2, the next
	// tile's gathers are issued under this tile's math (the pipeline pass).
	Stages    int
	Precision MLAPrecision
	// Producer is the warps of the CTA's producer role (0: none), the last of
	// Warps: they gather and dequantize the tiles the other warps compute on
	// (MLAConfig.ProducerWarps).
	Producer int
	// Score is the warps of the CTA's score role (0: none), the first of Warps:
	// they compute the scores and the online softmax, every warp P·V
	// (MLAConfig.ScoreWarps).
	Score int
	// ScoreRows is the row groups of a 64-head CTA's score grid where the
	// configuration fixes them (MLAConfig.ScoreRows), 0 where the grid is chosen.
	ScoreRows int
	// HoldQ: the score dots of the family's large kernels hold their Q slices in
	// registers across the loop (16-head CTAs, unless MLAConfig.SharedQ).
	HoldQ bool
	// HeadsInN: 8 heads per CTA in the MMA's N dimension, the candidates in M
	// (Sᵀ = K·Qᵀ, Oᵀ = Vᵀ·Pᵀ; HeadBlock 8).
	HeadsInN bool
	// KFrags: the dots evaluate K's and V's fragments from the raw ring (heads in
	// N: `a computed`; 16 and 64 heads: `b computed`; MLAConfig.KFrags).
	KFrags bool
	// KPerm: with KFrags on the 16-head CTA, its dots read the computed pairs in
	// kperm order (ir.DotSchedule.KPerm; unless MLAConfig.KPairwise).
	KPerm bool
}

// outTile is the type of the output accumulator of a slice w columns wide: heads x
// columns, or its transpose with the heads in N.
func (v MLAVariant) outTile(w int) ir.Type {
	if v.HeadsInN {
		return ir.TileOf(ir.F32, w, v.HeadBlock)
	}
	return ir.TileOf(ir.F32, v.HeadBlock, w)
}

// perHead broadcasts a vector over the heads onto an output accumulator of a slice w
// columns wide.
func (v MLAVariant) perHead(b *ir.Builder, x *ir.Value, w int) *ir.Value {
	if v.HeadsInN {
		return b.Broadcast(x, 0, w, v.HeadBlock)
	}
	return b.Broadcast(x, 1, v.HeadBlock, w)
}

// outRows is an output tile with the heads in rows, as the epilogue stores it.
func (v MLAVariant) outRows(b *ir.Builder, o *ir.Value) *ir.Value {
	if v.HeadsInN {
		return b.Trans(o)
	}
	return o
}

// MLAPrecision is the decode's arithmetic for P·V (DESIGN.md, "Precisions"). Both
// take bf16 operands on mma.sync with fp32 accumulation; they differ in how the
// softmax weights P reach the tensor cores. The zero value is the default.
type MLAPrecision int

const (
	// PrecisionExact is P = hi + lo in two bf16 terms, two mma passes: within the
	// spec's thresholds (DESIGN.md, "P in two bf16 terms").
	PrecisionExact MLAPrecision = iota
	// PrecisionBF16P is P rounded to one bf16 term, one mma pass, as FlashMLA and
	// FlashInfer do: half the tensor work of P·V, held to golden.MLAOutToleranceBF16P.
	PrecisionBF16P
)

// mlaPrecisions are the precisions by flag value, in order.
var mlaPrecisions = []string{PrecisionExact: "exact", PrecisionBF16P: "bf16p"}

// String is the precision's -precision value: "exact" or "bf16p".
func (p MLAPrecision) String() string {
	if p >= 0 && int(p) < len(mlaPrecisions) {
		return mlaPrecisions[p]
	}
	return fmt.Sprintf("MLAPrecision(%d)", int(p))
}

// Describe is the precision as the manifest and dump -plan write it: the operand
// and accumulator types and how P is held.
func (p MLAPrecision) Describe() string {
	switch p {
	case PrecisionExact:
		return "bf16 mma.sync, fp32 accumulators, P = hi + lo in bf16"
	case PrecisionBF16P:
		return "bf16 mma.sync, fp32 accumulators, P in one bf16 term (bf16p)"
	}
	return p.String()
}

// ParseMLAPrecision reads a -precision value.
func ParseMLAPrecision(s string) (MLAPrecision, error) {
	for i, n := range mlaPrecisions {
		if s == n {
			return MLAPrecision(i), nil
		}
	}
	v := s
	if v == "" {
		v = `""`
	}
	return 0, &ConfigError{Flag: "precision", Value: v, Want: precisionWant}
}

const precisionWant = "exact (P·V with P in two bf16 terms, the spec's accuracy; the default) or bf16p (P as one bf16 term, as FlashMLA does)"

// variant is the design of hb heads per CTA and tile candidates per tile for c (its
// -warps64 choice for 64-head CTAs).
func (c MLAConfig) variant(hb, tile, stages int) MLAVariant {
	fc := c
	fc.HeadBlock = hb
	v := MLAVariant{HeadBlock: hb, Warps: fc.mathWarps() + fc.producerWarps(), Tile: tile, Stages: stages, Precision: c.Precision, Producer: fc.producerWarps(), Score: fc.scoreWarps(tile)}
	v.HoldQ = !c.SharedQ && hb == 16
	v.HeadsInN = hb == 8
	v.KFrags = (v.HeadsInN || hb == 16 || hb == 64) && c.KFrags == KFragsOn
	v.KPerm = !c.KPairwise && v.KFrags && hb == 16
	if hb == 64 {
		v.ScoreRows = c.ScoreRows
	}
	chunks := c.dChunks()
	v.WarpGrid = v.pvGrid(chunks, chunks[0][2])
	return v
}

// family is the plan family of the variant, its kernels and sizes left to fill: the
// plan and the launch manifest carry the variant as the family's first fields.
func (v MLAVariant) family() plan.Family {
	return plan.Family{HeadBlock: v.HeadBlock, Warps: v.Warps, WarpGrid: v.WarpGrid, Tile: v.Tile, Stages: v.Stages, Precision: v.Precision.Describe(), ScoreWarps: v.Score, ProducerWarps: v.Producer}
}

// Short is the variant in a few characters, for tables: "h16 w4 1x4 t32 s1".
func (v MLAVariant) Short() string {
	s := fmt.Sprintf("h%d w%d %dx%d t%d s%d", v.HeadBlock, v.Warps, v.WarpGrid[0], v.WarpGrid[1], v.Tile, v.Stages)
	if v.Producer > 0 {
		s += fmt.Sprintf(" p%d", v.Producer)
	}
	if v.Score > 0 {
		s += fmt.Sprintf(" q%d", v.Score)
	}
	if v.ScoreRows > 0 {
		s += fmt.Sprintf(" r%d", v.ScoreRows)
	}
	if v.HeadsInN {
		s += " hn"
	}
	if v.KFrags {
		s += " kf"
	}
	if v.KPerm {
		s += " kp"
	}
	return s
}

func (v MLAVariant) String() string {
	s := fmt.Sprintf("%d heads, %d warps (%dx%d), %d candidates per tile, %d stage(s), %s", v.HeadBlock, v.Warps, v.WarpGrid[0], v.WarpGrid[1], v.Tile, v.Stages, v.Precision.Describe())
	if v.Producer > 0 {
		s += fmt.Sprintf(", a producer role of %d warps (the last) gathering and dequantizing for the others", v.Producer)
	}
	if v.Score > 0 {
		s += fmt.Sprintf(", a score role of %d warps (the first) computing the scores and the softmax", v.Score)
	}
	if v.ScoreRows > 0 {
		s += fmt.Sprintf(", the scores in %d row groups", v.ScoreRows)
	}
	if v.HoldQ {
		s += ", Q held in registers across the candidate loop"
	}
	if v.HeadsInN {
		s += ", the heads in the MMA's N dimension"
	}
	if v.KFrags && v.HeadsInN {
		s += ", K and Vᵀ fragments computed from the raw ring"
	} else if v.KFrags {
		s += ", Kᵀ and V fragments computed from the raw ring"
	}
	if v.KPerm {
		s += " in kperm order"
	}
	return s
}
