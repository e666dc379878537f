package check

import (
	"fmt"
	"testing"

	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
)

// TestSharedLayoutsConflictFree runs gemm on every target and MLA rows of
// different designs (one warp, bf16 cache, split score tiles, 64 heads per CTA)
// with Case.Conflicts set: the results must pass, ldmatrix must have run, and
// every ldmatrix matrix must take one wavefront, i.e. the lowering's shared
// layouts are free of bank conflicts under emu's model.
func TestSharedLayoutsConflictFree(t *testing.T) {
	type named struct {
		name string
		c    func() (*Case, error)
	}
	var cases []named
	for i, target := range gemmTargets {
		cfg := kernels.GEMMConfig{M: 100, N: 100, K: 100, Out: ir.BF16}
		seed := uint64(500 + i)
		cases = append(cases, named{fmt.Sprintf("gemm_%s_seed%d", target, seed), func() (*Case, error) { return GEMM(cfg, tgt(target), seed) }})
	}
	for _, i := range []int{2, 8, 11, 13} {
		s := mlaMatrix[i]
		opts := s.opts
		opts.Seed = uint64(100 + i)
		cases = append(cases, named{fmt.Sprintf("mla_%d_%s", i, s.comment), func() (*Case, error) { return MLA(s.config(), tgt(s.target), opts) }})
	}
	// A bf16 cache's 64-head CTA fits sm_80 with 64-candidate tiles only with its
	// copied tiles swizzled (lower/smem.go).
	swz := kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 64, Nope: 512, Rope: 64, Cache: mla.CacheBF16, Sink: true,
		Segments: []mla.Segment{seg(128, 64, true), seg(100, 53, true)}}, HeadBlock: 64, Tile: 64}
	cases = append(cases, named{"mla_bf16_cache_64_heads_sm_80_swizzled", func() (*Case, error) {
		return MLA(swz, tgt("sm_80"), golden.MLAGenOptions{Seed: 640, InvalidFrac: 0.1})
	}})
	for _, nc := range cases {
		t.Run(nc.name, func(t *testing.T) {
			t.Parallel()
			c, err := nc.c()
			if err != nil {
				t.Fatal(err)
			}
			var sc emu.SharedConflicts
			c.Conflicts = &sc
			passesInEmulator(t, c)
			if sc.Matrices.Load() == 0 || sc.Wavefronts.Load() != sc.Matrices.Load() {
				t.Errorf("%s: %v, want ldmatrix reads without bank conflicts", c.Name, &sc)
			}
		})
	}
}
