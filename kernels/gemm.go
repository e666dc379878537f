// Package kernels holds the kernels ptxgen ships, written in the tile IR, and the
// configurations that parameterize them.
package kernels

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/target"
)

// GEMMConfig configures gemm: C[M,N] = A[M,K] x B[K,N] with bf16 inputs, fp32
// accumulation and Out (bf16 or f32) output. Row strides are kernel parameters in
// elements; the generated code assumes each stride is a multiple of the power of two
// it records in the parameter's div (the largest of 8, 4, 2, 1 dividing the dense
// stride), which launchers check.
type GEMMConfig struct {
	M, N, K int
	Out     ir.Elem
}

// MaxGEMMDim bounds M, N and K so index arithmetic stays in 32 bits.
const MaxGEMMDim = 1 << 24

// MaxGEMMN bounds N further: its CTAs (one per 128 columns) are the grid's y
// dimension, which CUDA limits to 65535.
const MaxGEMMN = target.MaxGridYZ * gemmMaxBN

// Validate reports the first bad field, naming it and the accepted range.
func (c GEMMConfig) Validate() error {
	for _, d := range []struct {
		name string
		v    int
	}{{"m", c.M}, {"n", c.N}, {"k", c.K}} {
		if d.v < 1 || d.v > MaxGEMMDim {
			return &ConfigError{Flag: d.name, Value: fmt.Sprint(d.v), Want: fmt.Sprintf("an integer in 1..%d", MaxGEMMDim)}
		}
	}
	if c.N > MaxGEMMN {
		return &ConfigError{Flag: "n", Value: fmt.Sprint(c.N), Want: fmt.Sprintf("an integer in 1..%d (ceil(n/%d) CTAs are the grid's y dimension, which CUDA limits to %d)", MaxGEMMN, gemmMaxBN, target.MaxGridYZ)}
	}
	if c.Out != ir.BF16 && c.Out != ir.F32 {
		return &ConfigError{Flag: "out", Value: c.Out.String(), Want: "bf16 or f32"}
	}
	return nil
}

// ConfigError is a bad configuration value; Flag is the command-line flag that sets it.
type ConfigError struct {
	Flag, Value, Want string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("-%s %s: want %s", e.Flag, e.Value, e.Want)
}

// gemm CTA tile limits: each CTA computes up to 64x128 of C, walking K in steps of 32.
const (
	gemmMaxBM = 64
	gemmMaxBN = 128
	gemmMaxBK = 32
)

// GEMM builds the gemm kernel for c.
func GEMM(c GEMMConfig) (*ir.Kernel, error) { return GEMMStages(c, 1) }

// GEMMStages is GEMM with its K loop pipelined over stages (1..ir.MaxStages; 1
// is GEMM's kernel): the A and B tiles of step k+stages-1 are loaded while step
// k computes (`for ... stages N`, DESIGN.md, loops).
func GEMMStages(c GEMMConfig, stages int) (*ir.Kernel, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if stages < 1 || stages > ir.MaxStages {
		return nil, &ConfigError{Flag: "stages", Value: fmt.Sprint(stages), Want: fmt.Sprintf("an integer in 1..%d", ir.MaxStages)}
	}
	bm, bn, bk := min(c.M, gemmMaxBM), min(c.N, gemmMaxBN), min(c.K, gemmMaxBK)
	b := ir.NewBuilder("gemm")
	b.SetGrid(ceilDiv(c.M, bm), ceilDiv(c.N, bn), 1)
	b.SetWarps(warpsFor(ceilDiv(bm, 16), ceilDiv(bn, 8), 4))

	i64 := ir.ScalarOf(ir.I64)
	A := b.Param("a", ir.PtrTo(ir.BF16), 16, int64(c.M)*int64(c.K)*2)
	B := b.Param("b", ir.PtrTo(ir.BF16), 16, int64(c.K)*int64(c.N)*2)
	C := b.Param("c", ir.PtrTo(c.Out), 16, int64(c.M)*int64(c.N)*int64(c.Out.Size()))
	lda := b.Param("lda", i64, strideDiv(c.K), 0)
	ldb := b.Param("ldb", i64, strideDiv(c.N), 0)
	ldc := b.Param("ldc", i64, strideDiv(c.N), 0)
	// Row i of A is a[i*lda : i*lda+K], and so on: launchers bound the strides by the
	// buffers.
	b.Strided(A, int64(c.K), ir.StrideDim{Stride: "lda", Count: int64(c.M)})
	b.Strided(B, int64(c.N), ir.StrideDim{Stride: "ldb", Count: int64(c.K)})
	b.Strided(C, int64(c.N), ir.StrideDim{Stride: "ldc", Count: int64(c.M)})

	m0 := b.Name(b.Mul(b.ProgramID(0), b.I32(int64(bm))), "m0")
	n0 := b.Name(b.Mul(b.ProgramID(1), b.I32(int64(bn))), "n0")
	rowsM := b.Name(b.Add(m0, b.Iota(bm)), "rows")
	rowOK := b.Name(b.Cmp(ir.CmpLT, rowsM, b.I32(int64(c.M))), "row_ok")
	colsLeft := b.Name(b.Sub(b.I32(int64(c.N)), n0), "cols_left")
	aRows := b.Mul(b.Cast(rowsM, ir.I64), lda)
	n0w := b.Cast(n0, ir.I64)

	zero := b.ConstFloat(0, ir.TileOf(ir.F32, bm, bn))
	nk := ceilDiv(c.K, bk)
	acc := b.ForStages(b.I32(0), b.I32(int64(nk)), 1, stages, []*ir.Value{zero}, func(kt *ir.Value, carried []*ir.Value) []*ir.Value {
		k0 := b.Name(b.Mul(kt, b.I32(int64(bk))), "k0")
		kLeft := b.Name(b.Sub(b.I32(int64(c.K)), k0), "k_left")
		a := b.Name(b.Load2(A, aRows, b.Cast(k0, ir.I64), bk, rowOK, kLeft), "a_tile")
		kRows := b.Add(k0, b.Iota(bk))
		kOK := b.Cmp(ir.CmpLT, kRows, b.I32(int64(c.K)))
		bt := b.Name(b.Load2(B, b.Mul(b.Cast(kRows, ir.I64), ldb), n0w, bn, kOK, colsLeft), "b_tile")
		return []*ir.Value{b.Name(b.Dot(a, bt, carried[0]), "acc_next")}
	})[0]
	b.Name(acc, "acc")
	out := acc
	if c.Out != ir.F32 {
		out = b.Cast(acc, c.Out)
	}
	b.Store2(C, b.Mul(b.Cast(rowsM, ir.I64), ldc), n0w, rowOK, colsLeft, out)
	return b.Finish()
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }

// strideDiv is the divisibility gemm assumes for a row stride whose dense value is n.
func strideDiv(n int) int {
	for d := 8; d > 1; d /= 2 {
		if n%d == 0 {
			return d
		}
	}
	return 1
}

// warpsFor returns the largest warp count up to max (a power of two) that splits an
// mt x nt grid of mma tiles evenly, so every warp runs the same instruction stream.
func warpsFor(mt, nt, max int) int {
	for w := max; w > 1; w /= 2 {
		for wm := 1; wm <= w; wm *= 2 {
			if mt%wm == 0 && nt%(w/wm) == 0 {
				return w
			}
		}
	}
	return 1
}
