package check

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
)

// TestHeadsInN runs the heads-in-N decode (-head-block 8: Sᵀ = K·Qᵀ, Oᵀ = Vᵀ·Pᵀ) in the
// emulator against float64: padded heads, odd candidate counts, invalid and
// out-of-pool indices, poisoned outputs, one and two segments, split and unsplit
// launches, both precisions, the bf16 cache and sm_80 (no sm_90 features).
func TestHeadsInN(t *testing.T) {
	two := []mla.Segment{{K: 96, PageSize: 64, HasLen: true}, {K: 40, PageSize: 16}}
	for _, c := range []struct {
		name   string
		cfg    kernels.MLAConfig
		target string
	}{
		{"h8", kernels.MLAConfig{Shape: mla.Shape{T: 3, H: 8, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true, Segments: two}}, "sm_90"},
		{"h5 split 1", kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 5, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true, Segments: two}, Split: 1}, "sm_90"},
		{"h8 split 3 bf16p", kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 8, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: []mla.Segment{{K: 200, PageSize: 64, HasLen: true}}}, Split: 3, Precision: kernels.PrecisionBF16P}, "sm_90"},
		{"h3 bf16 cache", kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 3, Nope: 96, Rope: 32, Cache: mla.CacheBF16, Sink: true, Segments: two}}, "sm_80"},
		{"h16 two head blocks", kernels.MLAConfig{Shape: mla.Shape{T: 1, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: two}}, "sm_120"},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.cfg.HeadBlock = 8
			cs, err := MLA(c.cfg, tgt(c.target), golden.MLAGenOptions{Seed: 8, InvalidFrac: 0.2, Poison: true, OutOfPool: true})
			if err != nil {
				t.Fatal(err)
			}
			text := cs.Compiled.Module.Print()
			if !strings.Contains(text, "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16") || !strings.Contains(text, "mla_decode_h8") {
				t.Fatalf("no 8-head kernel reading Vᵀ with ldmatrix .trans in:\n%.2000s", text)
			}
			passesInEmulator(t, cs)
		})
	}
}

// TestHeadsInNVectors: the heads-in-N decode meets the spec's thresholds on the
// copied test vectors of at most 8 heads.
func TestHeadsInNVectors(t *testing.T) {
	dirs, _ := filepath.Glob("../golden/testdata/vectors/mla_decode/*")
	n := 0
	for _, d := range dirs {
		v, err := golden.LoadVectors(d)
		if err != nil {
			t.Fatal(err)
		}
		if v.Config.H > 8 {
			continue
		}
		n++
		c, err := Vectors(d, tgt("sm_90"), kernels.MLAConfig{HeadBlock: 8}, 0)
		if err != nil {
			t.Fatal(err)
		}
		passesInEmulator(t, c)
	}
	if n == 0 {
		t.Fatal("no test vectors of at most 8 heads")
	}
}
