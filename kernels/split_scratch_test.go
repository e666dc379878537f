package kernels_test

import (
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/mla"
	"github.com/ptxgen/ptxgen/target"
)

// TestSplitScratchKeepsStages: the 16-head decode's score dots are split along
// the reduction (an 8 KB all-reduce scratch) only where the kernel still fits
// with its pipeline stages; on sm_120 the wider top-k lists (1024, 1152) fit with
// their copied tiles padded, since the loop's arrays take held Q's bytes (the smem
// pass), and both stages stay. Where the padding costs the fit the tiles are
// swizzled, and where even that does not fit the scores are split by columns
// (lower.Compile and Measure lay the kernel out again without the split:
// TestDecodeLoopBarriers).
func TestSplitScratchKeepsStages(t *testing.T) {
	for _, c := range []struct {
		k1       int
		swizzled bool
	}{{512, false}, {1024, false}, {1152, false}} {
		// The bf16-tile path (-k-frags=false): on sm_120 auto computes the fragments.
		cfg := kernels.MLAConfig{Shape: mla.Shape{T: 256, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true,
			Segments: []mla.Segment{{K: 128, PageSize: 64, HasLen: true}, {K: c.k1, PageSize: 64, HasLen: true}}}, KFrags: kernels.KFragsOff}
		tg := target.MustLookup("sm_120")
		p, designs, err := kernels.MLADesign(cfg, tg)
		if err != nil {
			t.Fatalf("K1=%d: %v", c.k1, err)
		}
		if got := designs[0].Variant.Stages; got != 2 {
			t.Errorf("K1=%d: %d pipeline stages on sm_120, want 2", c.k1, got)
		}
		for _, k := range p.Kernels {
			if k.Name != "mla_decode_h16" {
				continue
			}
			res, err := lower.Compile(k, tg, lower.Options{Check: true})
			if err != nil {
				t.Fatalf("K1=%d: %v", c.k1, err)
			}
			fig, err := lower.Measure(k, tg)
			if err != nil || !fig.Fits || fig.SharedBytes > tg.MaxSharedPerBlock {
				t.Errorf("K1=%d: %s measures %d bytes (fits %v, %v)", c.k1, k.Name, fig.SharedBytes, fig.Fits, err)
			}
			if !strings.Contains(res.Kernel.Module.Print(), "all-reduce the partial sums") {
				t.Errorf("K1=%d: scores not split along the reduction", c.k1)
			}
			dump, err := lower.Compile(k, tg, lower.Options{After: "smem"})
			if err != nil {
				t.Fatal(err)
			}
			if swizzled := strings.Contains(dump.Dump, "swizzled"); swizzled != c.swizzled {
				t.Errorf("K1=%d: tiles swizzled %v, want %v", c.k1, swizzled, c.swizzled)
			}
		}
	}
}
