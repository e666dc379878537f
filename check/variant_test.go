package check

import (
	"testing"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
)

// TestCaseVariant: an mla_decode case names the design of the CTAs its call runs
// (what the bench's plan column shows); other kernels have none.
func TestCaseVariant(t *testing.T) {
	seg := []mla.Segment{{K: 64, PageSize: 16, HasLen: true}}
	for _, tc := range []struct {
		cfg  kernels.MLAConfig
		want string
	}{
		{kernels.MLAConfig{Shape: mla.Shape{T: 1, H: 8, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: seg}}, "h16 w4 1x4 t32 s2"},
		{kernels.MLAConfig{Shape: mla.Shape{T: 1, H: 64, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: seg}, HeadBlock: 64, Tile: 64}, "h64 w8 2x4 t64 s2 q4"},
		{kernels.MLAConfig{Shape: mla.Shape{T: 1, H: 64, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: seg}, HeadBlock: 64, Tile: 64, ScoreWarps: 8}, "h64 w8 2x4 t64 s2"},
	} {
		c, err := MLA(tc.cfg, tgt("sm_90"), golden.MLAGenOptions{Seed: 7})
		if err != nil {
			t.Fatal(err)
		}
		if c.Variant != tc.want {
			t.Errorf("H=%d head-block=%d: variant %q, want %q", tc.cfg.H, tc.cfg.HeadBlock, c.Variant, tc.want)
		}
	}
	g, err := GEMM(kernels.GEMMConfig{M: 16, N: 8, K: 16, Out: ir.BF16}, tgt("sm_90"), 1)
	if err != nil {
		t.Fatal(err)
	}
	if g.Variant != "" {
		t.Errorf("gemm: variant %q, want none", g.Variant)
	}
}
