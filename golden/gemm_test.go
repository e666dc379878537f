package golden

import (
	"math"
	"math/big"
	"testing"

	"github.com/ptxgen/ptxgen/dtype"
)

// TestGemmExact compares Gemm with exact big.Float sums rounded once, on a
// strided shape whose padding is NaN (so reading it would show).
func TestGemmExact(t *testing.T) {
	const seed = 0x6e33
	c := GemmConfig{M: 7, N: 9, K: 37, LDA: 40, LDB: 16}
	a, b, err := GenGemm(c, seed)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Gemm(c, a, b)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < c.M; i++ {
		for j := 0; j < c.N; j++ {
			sum := new(big.Float).SetPrec(2000)
			for k := 0; k < c.K; k++ {
				p := new(big.Float).SetPrec(2000).SetFloat64(a[i*40+k].F64())
				sum.Add(sum, p.Mul(p, new(big.Float).SetFloat64(b[k*16+j].F64())))
			}
			want, _ := sum.Float64()
			if g := got[i*c.N+j]; math.IsNaN(g) || math.Abs(g-want) > 1e-14*math.Max(1, math.Abs(want)) {
				t.Fatalf("seed %#x: C[%d,%d] = %v, exact %v", seed, i, j, g, want)
			}
		}
	}
	if nonzero := countNonzero(got); nonzero != len(got) {
		t.Fatalf("seed %#x: %d of %d outputs nonzero", seed, nonzero, len(got))
	}
}

func countNonzero(x []float64) int {
	n := 0
	for _, v := range x {
		if v != 0 {
			n++
		}
	}
	return n
}

// TestGemmToleranceSeparates: an fp32-accumulated GEMM (what the kernels do)
// passes GemmTolerance, while one that rounds its inputs too coarsely
// (dropping the last bf16 mantissa bit) fails it.
func TestGemmToleranceSeparates(t *testing.T) {
	const seed = 0x701
	c := GemmConfig{M: 16, N: 24, K: 1024}
	a, b, err := GenGemm(c, seed)
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := Gemm(c, a, b)
	f32 := make([]float32, len(ref))
	coarse := make([]float32, len(ref))
	for i := 0; i < c.M; i++ {
		for j := 0; j < c.N; j++ {
			var s, sc float32
			for k := 0; k < c.K; k++ {
				s += float32(a[i*c.K+k].F32() * b[k*c.N+j].F32())
				ac := dtype.BF16(a[i*c.K+k] &^ 1).F32()
				sc += float32(ac * b[k*c.N+j].F32())
			}
			f32[i*c.N+j], coarse[i*c.N+j] = s, sc
		}
	}
	for _, bf := range []bool{false, true} {
		tol := GemmTolerance(c.K, 1, bf)
		var good, bad Report
		if bf {
			good = Compare("C", RoundBF16(float64sOf(f32)), ref, []int{c.M, c.N}, tol)
		} else {
			good = Compare("C", f32, ref, []int{c.M, c.N}, tol)
			bad = Compare("C", coarse, ref, []int{c.M, c.N}, tol)
			if bad.OK() {
				t.Errorf("seed %#x: coarse inputs pass the f32 tolerance:\n%s", seed, bad)
			}
		}
		if !good.OK() {
			t.Errorf("seed %#x: fp32 accumulation fails GemmTolerance(bf16Out=%v):\n%s", seed, bf, good)
		}
	}
}

func float64sOf(x []float32) []float64 {
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = float64(v)
	}
	return out
}

func TestGemmValidate(t *testing.T) {
	for _, c := range []GemmConfig{{M: 0, N: 1, K: 1}, {M: 1, N: 1, K: 0}, {M: 1, N: 4, K: 4, LDA: 3}, {M: 1, N: 4, K: 4, LDB: 3}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: Validate() = nil", c)
		}
	}
	c := GemmConfig{M: 2, N: 3, K: 4}
	if _, err := Gemm(c, make([]dtype.BF16, 7), make([]dtype.BF16, 12)); err == nil {
		t.Errorf("short A accepted")
	}
}
