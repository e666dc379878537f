package kernels

import (
	"github.com/ptxgen/ptxgen/ir"
)

// The ceiling kernels measure what generated code can reach on a GPU: the bench
// command times them to get the bandwidth and mma.sync rates its roofline floors use.

// CopyConfig configures copy: dst = src for Rows rows of 256 f32 (1 KB).
type CopyConfig struct{ Rows int }

// copy tiles: 64 rows of 1 KB per CTA.
const (
	copyCols = 256
	copyRows = 64
)

// Validate reports a bad field.
func (c CopyConfig) Validate() error {
	if c.Rows < 1 || c.Rows > 1<<24 {
		return &ConfigError{Flag: "rows", Value: itoa(c.Rows), Want: "an integer in 1..16777216"}
	}
	return nil
}

// Bytes is the traffic of one copy, read plus written.
func (c CopyConfig) Bytes() int64 { return 2 * int64(c.Rows) * copyCols * 4 }

// Copy builds the copy kernel: each CTA gathers a 64 KB tile into shared memory
// with 16-byte cp.async and writes it back with 16-byte stores.
func Copy(c CopyConfig) (*ir.Kernel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	b := ir.NewBuilder("copy")
	b.SetGrid(ceilDiv(c.Rows, copyRows), 1, 1)
	b.SetWarps(8)
	n := int64(c.Rows) * copyCols * 4
	src := b.Param("src", ir.PtrTo(ir.F32), 16, n)
	dst := b.Param("dst", ir.PtrTo(ir.F32), 16, n)
	rows := b.Add(b.Mul(b.ProgramID(0), b.I32(copyRows)), b.Iota(copyRows))
	ok := b.Cmp(ir.CmpLT, rows, b.I32(int64(c.Rows)))
	offs := b.Mul(b.Cast(rows, ir.I64), b.I64(copyCols))
	t := b.Load2(src, offs, b.I64(0), copyCols, ok, nil)
	b.Store2(dst, offs, b.I64(0), ok, nil, t)
	return b.Finish()
}

// MMALoopConfig configures mma_loop: each of CTAs CTAs multiplies the same
// 128x16 and 16x128 bf16 tiles Iters times into an fp32 accumulator.
type MMALoopConfig struct{ CTAs, Iters int }

// Validate reports a bad field.
func (c MMALoopConfig) Validate() error {
	switch {
	case c.CTAs < 1 || c.CTAs > 1<<20:
		return &ConfigError{Flag: "ctas", Value: itoa(c.CTAs), Want: "an integer in 1..1048576"}
	case c.Iters < 1 || c.Iters > 1<<24:
		return &ConfigError{Flag: "iters", Value: itoa(c.Iters), Want: "an integer in 1..16777216"}
	}
	return nil
}

// Flops is the arithmetic of one launch.
func (c MMALoopConfig) Flops() float64 {
	return 2 * 128 * 128 * 16 * float64(c.Iters) * float64(c.CTAs)
}

// MMALoop builds the mma_loop kernel: the tiles stay in shared memory and every
// iteration is one k16 step (ldmatrix + 32 mma.sync per warp), so it measures the
// mma.sync rate generated code reaches, not memory.
func MMALoop(c MMALoopConfig) (*ir.Kernel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	b := ir.NewBuilder("mma_loop")
	b.SetGrid(c.CTAs, 1, 1)
	b.SetWarps(4)
	A := b.Param("a", ir.PtrTo(ir.BF16), 16, 128*16*2)
	B := b.Param("b", ir.PtrTo(ir.BF16), 16, 16*128*2)
	C := b.Param("c", ir.PtrTo(ir.F32), 16, int64(c.CTAs)*128*128*4)
	a := b.Load2(A, b.Mul(b.Cast(b.Iota(128), ir.I64), b.I64(16)), b.I64(0), 16, nil, nil)
	bt := b.Load2(B, b.Mul(b.Cast(b.Iota(16), ir.I64), b.I64(128)), b.I64(0), 128, nil, nil)
	acc := b.For(b.I32(0), b.I32(int64(c.Iters)), 1, []*ir.Value{b.ConstFloat(0, ir.TileOf(ir.F32, 128, 128))},
		func(_ *ir.Value, st []*ir.Value) []*ir.Value { return []*ir.Value{b.Dot(a, bt, st[0])} })[0]
	base := b.Mul(b.Cast(b.ProgramID(0), ir.I64), b.I64(128*128))
	b.Store2(C, b.Add(base, b.Mul(b.Cast(b.Iota(128), ir.I64), b.I64(128))), b.I64(0), nil, nil, acc)
	return b.Finish()
}

func itoa(n int) string { return fmtInt(n) }

// ReadBackConfig configures read_back: Words 32-bit words of a buffer read by CTAs
// CTAs, each folding its share into one maximum per lane of a 128-word column.
type ReadBackConfig struct{ Words, CTAs int }

// read_back tiles: 128 rows of 32 words (16 KB) per iteration, 4 warps, 2 stages.
const (
	readBackRows = 128
	readBackCols = 32
)

// Validate reports a bad field.
func (c ReadBackConfig) Validate() error {
	switch {
	case c.Words < readBackRows*readBackCols || c.Words > 1<<30 || c.Words%(readBackRows*readBackCols) != 0:
		return &ConfigError{Flag: "words", Value: itoa(c.Words), Want: "a multiple of 4096 in 4096..1073741824"}
	case c.CTAs < 1 || c.CTAs > 1<<16:
		return &ConfigError{Flag: "ctas", Value: itoa(c.CTAs), Want: "an integer in 1..65536"}
	}
	return nil
}

// ReadBack builds read_back: it reads every word of src once and writes only
// out[cta*128 + lane], the maximum of lane's words as f32 (a 512-byte result per
// CTA, so the loads are not dead). The bench runs it after its L2 flush writes
// scratch memory, so that the timed kernel finds L2 holding clean lines: a write
// alone leaves L2 full of dirty ones, whose write-back the next kernel pays.
func ReadBack(c ReadBackConfig) (*ir.Kernel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	tiles := c.Words / (readBackRows * readBackCols)
	per := ceilDiv(tiles, c.CTAs)
	b := ir.NewBuilder("read_back")
	b.SetGrid(c.CTAs, 1, 1)
	b.SetWarps(4)
	src := b.Param("src", ir.PtrTo(ir.I32), 16, int64(c.Words)*4)
	out := b.Param("out", ir.PtrTo(ir.F32), 16, int64(c.CTAs)*readBackRows*4)
	lo := b.Mul(b.ProgramID(0), b.I32(int64(per)))
	hi := b.Min(b.Add(lo, b.I32(int64(per))), b.I32(int64(tiles)))
	acc := b.ConstFloat(0, ir.TileOf(ir.F32, readBackRows, readBackCols))
	acc = b.ForStages(lo, hi, 1, 2, []*ir.Value{acc}, func(j *ir.Value, st []*ir.Value) []*ir.Value {
		rows := b.Add(b.Mul(j, b.I32(readBackRows)), b.Iota(readBackRows))
		t := b.Load2(src, b.Mul(b.Cast(rows, ir.I64), b.I64(readBackCols)), b.I64(0), readBackCols, nil, nil)
		return []*ir.Value{b.Max(st[0], b.Cast(t, ir.F32))}
	})[0]
	lane := b.Add(b.Mul(b.Cast(b.ProgramID(0), ir.I64), b.I64(readBackRows)), b.Cast(b.Iota(readBackRows), ir.I64))
	b.Store1(out, lane, nil, b.Reduce("max", acc, 1))
	return b.Finish()
}
