package check

import (
	"fmt"
	"testing"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
)

// TestMLAProducerRole: the 64-head CTA with a producer role (-producer-warps:
// the load role gathers and dequantizes each tile into a ring the math warps
// read) matches the float64 reference in the emulator, over ring depths 1 and 2
// (tiles of 64 and 32 candidates), 1, 2 and 4 producer warps, both precisions,
// split and unsplit launches, two segments with a partial last tile, poison,
// invalid and out-of-pool candidates. (It is not in mlaMatrix: without
// setmaxnreg its kernels spill, which TestMLAMatrixAssembles forbids.)
func TestMLAProducerRole(t *testing.T) {
	for i, c := range []struct {
		producer, tile, split int
		bf16p                 bool
	}{
		{2, 32, 1, false}, {1, 32, 2, false}, {4, 64, 1, false}, {2, 32, 3, true},
	} {
		t.Run(fmt.Sprintf("p%d_t%d_split%d_bf16p%v", c.producer, c.tile, c.split, c.bf16p), func(t *testing.T) {
			t.Parallel()
			s := mlaCaseSpec{T: 2, H: 72, segs: []mla.Segment{seg(64, 64, true), seg(300, 16, true)}, sink: true, split: c.split, hb: 64, target: "sm_90",
				opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, OutOfPool: true, Seed: uint64(900 + i)}}
			cfg := s.config()
			cfg.ProducerWarps, cfg.Tile = c.producer, c.tile
			if c.bf16p {
				cfg.Precision = kernels.PrecisionBF16P
			}
			rolePassesInEmulator(t, s, cfg, ir.Role{Name: "load", First: 8, Warps: c.producer}, 8+c.producer)
		})
	}
}

// TestMLAScoreRole: the 64-head CTA with a score role (-score-warps 4: the
// scores and the online softmax on the first 4 warps, P·V and the
// dequantization on all 8, a phased loop) matches the float64 reference in the
// emulator, in both precisions, split and unsplit, with one and two stages,
// two segments with a partial last tile, poison, invalid and out-of-pool
// candidates, with and without a sink, and from a bf16 cache of 704 dims (one
// stage, 11 column slices).
func TestMLAScoreRole(t *testing.T) {
	for i, c := range []struct {
		tile, split int
		bf16p, sink bool
		bf16Cache   bool
	}{
		{64, 1, false, true, false}, {64, 2, true, false, false}, {32, 3, false, true, false}, {64, 2, false, true, true},
	} {
		t.Run(fmt.Sprintf("t%d_split%d_bf16p%v_sink%v_bf16cache%v", c.tile, c.split, c.bf16p, c.sink, c.bf16Cache), func(t *testing.T) {
			t.Parallel()
			s := mlaCaseSpec{T: 2, H: 72, segs: []mla.Segment{seg(64, 64, true), seg(300, 16, true)}, sink: c.sink, split: c.split, hb: 64, target: "sm_90",
				opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, OutOfPool: true, Seed: uint64(950 + i)}}
			if c.bf16Cache {
				s.cache, s.nope, s.rope = mla.CacheBF16, 640, 64
			}
			cfg := s.config()
			cfg.ScoreWarps, cfg.Tile = 4, c.tile
			if c.bf16p {
				cfg.Precision = kernels.PrecisionBF16P
			}
			rolePassesInEmulator(t, s, cfg, ir.Role{Name: "score", First: 0, Warps: 4}, 8)
		})
	}
}

// rolePassesInEmulator checks that cfg (case s's configuration with a role set)
// plans some kernel of ctaWarps warps with role as given, and that its program
// matches the float64 reference in the emulator on s's inputs.
func rolePassesInEmulator(t *testing.T, s mlaCaseSpec, cfg kernels.MLAConfig, role ir.Role, ctaWarps int) {
	t.Helper()
	p, err := kernels.MLA(cfg, tgt(s.target))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, k := range p.Kernels {
		if r, ok := k.Role(role.Name); ok && r == role && k.Warps == ctaWarps {
			found = true
		}
	}
	if !found {
		t.Fatalf("no kernel of the program has a %s role of %d warps from warp %d in a CTA of %d", role.Name, role.Warps, role.First, ctaWarps)
	}
	mc, err := MLA(cfg, tgt(s.target), s.opts)
	if err != nil {
		t.Fatal(err)
	}
	passesInEmulator(t, mc)
}
