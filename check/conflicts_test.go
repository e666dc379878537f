package check

import (
	"fmt"
	"testing"

	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
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
