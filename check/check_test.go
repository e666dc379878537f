package check

import (
	"fmt"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
)

// gemmDims are the extents the gemm matrix takes for each of M, N and K: one,
// odd and smaller than every granule, exactly one m16 / k16 granule, one past
// it, a size that pads in every direction, and a multiple of the K step that
// needs several CTAs in M and N.
var gemmDims = []int{1, 7, 16, 17, 100, 448}

var gemmTargets = []string{"sm_80", "sm_90", "sm_120"}

var gemmOuts = []ir.Elem{ir.BF16, ir.F32}

type gemmMatrixCase struct {
	cfg    kernels.GEMMConfig
	target string
	seed   uint64
}

// gemmMatrix is every (M, N, K) in gemmDims³ (indices i, j, l), each with an
// output type and a target: the output type is bf16 when j-i is even, f32 when it
// is odd, and the target is gemmTargets[(i+l) mod 3], so for each value of M, N
// or K every (output, target) pair occurs. In -short mode only two diagonals
// run (j = i+1, l = i+3 and j = i+4, l = i+2, mod 6): 12 cases in which every
// value still appears as M, as N and as K with both output types, and every
// (output, target) pair occurs. Seeds are fixed per case, so a run is
// deterministic and a failure names its seed (Case.Name).
func gemmMatrix(short bool) []gemmMatrixCase {
	n := len(gemmDims)
	var cs []gemmMatrixCase
	for i := range n {
		for j := range n {
			for l := range n {
				if short && !((j == (i+1)%n && l == (i+3)%n) || (j == (i+4)%n && l == (i+2)%n)) {
					continue
				}
				cs = append(cs, gemmMatrixCase{
					cfg:    kernels.GEMMConfig{M: gemmDims[i], N: gemmDims[j], K: gemmDims[l], Out: gemmOuts[(j-i+n)%2]},
					target: gemmTargets[(i+l)%len(gemmTargets)],
					seed:   uint64(1000 + (i*n+j)*n + l),
				})
			}
		}
	}
	return cs
}

// TestGEMMEmulator runs gemm through the emulator on the shape matrix and
// compares with the float64 reference within golden.GemmTolerance.
func TestGEMMEmulator(t *testing.T) {
	for _, gc := range gemmMatrix(testing.Short()) {
		cfg := gc.cfg
		t.Run(fmt.Sprintf("m%d_n%d_k%d_%s_%s", cfg.M, cfg.N, cfg.K, cfg.Out, gc.target), func(t *testing.T) {
			t.Parallel()
			c, err := GEMM(cfg, tgt(gc.target), gc.seed)
			if err != nil {
				t.Fatalf("seed %d: %v", gc.seed, err)
			}
			passesInEmulator(t, c)
		})
	}
}

// TestGEMMMatrixCovers keeps the sampling honest: in both modes every value of
// gemmDims appears as M, N and K, and with each output type and target.
func TestGEMMMatrixCovers(t *testing.T) {
	for _, short := range []bool{false, true} {
		seen := map[string]bool{}
		for _, c := range gemmMatrix(short) {
			for _, d := range []struct {
				name string
				v    int
			}{{"M", c.cfg.M}, {"N", c.cfg.N}, {"K", c.cfg.K}} {
				seen[fmt.Sprintf("%s=%d", d.name, d.v)] = true
				seen[fmt.Sprintf("%s=%d %s", d.name, d.v, c.cfg.Out)] = true
			}
			seen[c.target] = true
			seen[fmt.Sprint(c.cfg.Out, " ", c.target)] = true
		}
		for _, name := range []string{"M", "N", "K"} {
			for _, v := range gemmDims {
				for _, out := range gemmOuts {
					if k := fmt.Sprintf("%s=%d %s", name, v, out); !seen[k] {
						t.Errorf("short=%v: no case with %s", short, k)
					}
				}
			}
		}
		for _, tg := range gemmTargets {
			for _, out := range gemmOuts {
				if k := fmt.Sprint(out, " ", tg); !seen[k] {
					t.Errorf("short=%v: no case with out=%s on %s", short, out, tg)
				}
			}
		}
	}
}

// TestGEMMStridedEmulator runs gemm with row strides past the logical width
// (lda > K, ldb > N): the gaps hold NaN, so any element of A or B outside the
// matrix that reached an output would show up.
func TestGEMMStridedEmulator(t *testing.T) {
	cases := []struct {
		m, n, k, lda, ldb int
		out               ir.Elem
		target            string
	}{
		{1, 1, 1, 3, 2, ir.F32, "sm_80"},
		{17, 9, 33, 40, 12, ir.BF16, "sm_90"},
		{7, 100, 17, 20, 104, ir.F32, "sm_120"},
		{100, 72, 440, 448, 80, ir.BF16, "sm_80"},
		{64, 17, 100, 116, 25, ir.F32, "sm_90"},
		{16, 448, 448, 464, 456, ir.BF16, "sm_120"},
	}
	for i, tc := range cases {
		cfg := kernels.GEMMConfig{M: tc.m, N: tc.n, K: tc.k, Out: tc.out}
		t.Run(fmt.Sprintf("m%d_n%d_k%d_lda%d_ldb%d", tc.m, tc.n, tc.k, tc.lda, tc.ldb), func(t *testing.T) {
			t.Parallel()
			c, err := GEMMStrided(cfg, tgt(tc.target), uint64(2000+i), tc.lda, tc.ldb)
			if err != nil {
				t.Fatal(err)
			}
			passesInEmulator(t, c)
		})
	}
}
