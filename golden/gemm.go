package golden

import (
	"fmt"
	"math"

	"github.com/ptxgen/ptxgen/dtype"
)

// GemmConfig describes C[M,N] = A[M,K] * B[K,N] with A and B row-major bf16.
// LDA and LDB are the row strides of A and B in elements; 0 means packed
// (K and N). C is always packed, row-major [M,N].
type GemmConfig struct {
	M   int `json:"m"`
	N   int `json:"n"`
	K   int `json:"k"`
	LDA int `json:"lda,omitempty"`
	LDB int `json:"ldb,omitempty"`
}

// Strides returns the effective row strides of A and B in elements.
func (c GemmConfig) Strides() (lda, ldb int) {
	lda, ldb = c.LDA, c.LDB
	if lda == 0 {
		lda = c.K
	}
	if ldb == 0 {
		ldb = c.N
	}
	return lda, ldb
}

// ALen and BLen are the element counts the A and B buffers must hold.
func (c GemmConfig) ALen() int { lda, _ := c.Strides(); return (c.M-1)*lda + c.K }

// BLen is the element count the B buffer must hold.
func (c GemmConfig) BLen() int { _, ldb := c.Strides(); return (c.K-1)*ldb + c.N }

// Validate reports the first field outside its accepted range.
func (c GemmConfig) Validate() error {
	lda, ldb := c.Strides()
	switch {
	case c.M < 1:
		return fmt.Errorf("gemm: M = %d, want >= 1", c.M)
	case c.N < 1:
		return fmt.Errorf("gemm: N = %d, want >= 1", c.N)
	case c.K < 1:
		return fmt.Errorf("gemm: K = %d, want >= 1", c.K)
	case lda < c.K:
		return fmt.Errorf("gemm: LDA = %d, want 0 (packed) or >= K = %d", c.LDA, c.K)
	case ldb < c.N:
		return fmt.Errorf("gemm: LDB = %d, want 0 (packed) or >= N = %d", c.LDB, c.N)
	}
	return nil
}

// Gemm returns C = A*B in float64, packed [M,N]. Every product of two bf16
// values is exact in float64; only the K-term sums round (relative error
// about K*2^-53, far below any kernel's).
func Gemm(c GemmConfig, a, b []dtype.BF16) ([]float64, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	if len(a) < c.ALen() {
		return nil, fmt.Errorf("gemm: len(A) = %d, want >= %d for M=%d K=%d LDA=%d", len(a), c.ALen(), c.M, c.K, c.LDA)
	}
	if len(b) < c.BLen() {
		return nil, fmt.Errorf("gemm: len(B) = %d, want >= %d for K=%d N=%d LDB=%d", len(b), c.BLen(), c.K, c.N, c.LDB)
	}
	lda, ldb := c.Strides()
	out := make([]float64, c.M*c.N)
	row := make([]float64, c.N)
	for i := 0; i < c.M; i++ {
		clear(row)
		for k := 0; k < c.K; k++ {
			aik := a[i*lda+k].F64()
			bk := b[k*ldb : k*ldb+c.N]
			for j, v := range bk {
				row[j] += float64(aik * v.F64()) // explicit conversion: no FMA fusion
			}
		}
		copy(out[i*c.N:], row)
	}
	return out, nil
}

// RoundBF16 rounds each value once to bf16 (nearest, ties to even), as a
// kernel's bf16 output would be.
func RoundBF16(x []float64) []dtype.BF16 {
	out := make([]dtype.BF16, len(x))
	for i, v := range x {
		out[i] = dtype.BF16FromF64(v)
	}
	return out
}

// RoundF32 rounds each value once to float32 (nearest, ties to even).
func RoundF32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

// GemmTolerance is the accuracy to demand of a kernel with bf16 inputs and
// fp32 accumulation against Gemm, for inputs whose exact sums sum_k
// |a_ik*b_kj| stay near scale*sqrt(K) in size (GenGemm's inputs give scale
// about 1, and |C| about 1).
//
// Why these numbers: products of bf16 values are exact in fp32, so only the
// K additions err. Each adds at most 2^-23 of the running sum (tensor cores
// truncate rather than round), running sums stay within a few times scale,
// and the errors of K additions grow like sqrt(K): about sqrt(K)*2^-23*scale.
// Abs allows 8 times that, Rel one fp32 ulp for the final rounding. A bf16
// output adds at most half a bf16 ulp, 2^-8 of the value.
func GemmTolerance(k int, scale float64, bf16Out bool) Tolerance {
	abs := 8 * math.Sqrt(float64(k)) * 0x1p-23 * scale
	if bf16Out {
		return Tolerance{Abs: abs, Rel: 0x1p-8}
	}
	return Tolerance{Abs: abs, Rel: 0x1p-23}
}
