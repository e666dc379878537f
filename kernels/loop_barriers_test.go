package kernels_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/mla"
	"github.com/ptxgen/ptxgen/target"
)

var (
	reLabel   = regexp.MustCompile(`^(\$L\d+):$`)
	reBackBra = regexp.MustCompile(`bra\.uni (\$L\d+);$`)
)

// loopBarriers returns the bar.sync count of each loop of ptx: the statements from
// a label to the last branch back to it (the generator's loops do not nest here).
func loopBarriers(ptx string) []int {
	lines := strings.Split(ptx, "\n")
	at := map[string]int{}
	var counts []int
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if m := reLabel.FindStringSubmatch(t); m != nil {
			at[m[1]] = i
			continue
		}
		if m := reBackBra.FindStringSubmatch(t); m != nil {
			if start, ok := at[m[1]]; ok && start < i {
				n := 0
				for _, b := range lines[start:i] {
					if strings.Contains(b, "bar.sync") {
						n++
					}
				}
				counts = append(counts, n)
			}
		}
	}
	return counts
}

// TestDecodeLoopBarriers holds the 16-head decode's candidate loops to the
// structure DESIGN.md describes ("The 16-head loop, per 32-candidate tile"):
// three CTA barriers per iteration with the scores split along the reduction
// (the stage landed, the K tile published, the scores all-reduced; on sm_120 at
// top-k 1152 the split's scratch fits with the copied tiles swizzled), seven where
// the split's scratch does not fit even with every tile swizzled and
// the scores are split by columns (the row max and sum crossed warps, P staged for
// ldmatrix).
func TestDecodeLoopBarriers(t *testing.T) {
	for _, c := range []struct {
		target string
		less   bool // a limit below the split kernel's shared memory
		k1     int
		want   int
	}{{"sm_90", false, 512, 3}, {"sm_120", false, 512, 3}, {"sm_120", false, 1152, 3}, {"sm_120", true, 1152, 7}} {
		// The bf16-tile path (-k-frags=false): on sm_120 auto computes the fragments.
		cfg := kernels.MLAConfig{Shape: mla.Shape{T: 256, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true,
			Segments: []mla.Segment{{K: 128, PageSize: 64, HasLen: true}, {K: c.k1, PageSize: 64, HasLen: true}}}, KFrags: kernels.KFragsOff}
		tg := target.MustLookup(c.target)
		if c.less {
			cfg.Stages = 2 // the family as planned with the whole limit; only the lowering gets less
		}
		p, err := kernels.MLA(cfg, tg)
		if err != nil {
			t.Fatal(err)
		}
		// Less shared memory for the lowering, step by step, until even the split
		// kernel with every tile it can swizzled (three classes, lower/smem.go) does
		// not fit.
		for step := 0; c.less && step < 3; step++ {
			fig, err := lower.Measure(p.Kernels[0], tg)
			if err != nil {
				t.Fatal(err)
			}
			tg.MaxSharedPerBlock = fig.SharedBytes - 128
		}
		found := false
		for _, k := range p.Kernels {
			if k.Name != "mla_decode_h16" {
				continue
			}
			found = true
			res, err := lower.Compile(k, tg, lower.Options{Check: true})
			if err != nil {
				t.Fatal(err)
			}
			got := loopBarriers(res.Kernel.Module.Print())
			if len(got) != 1 {
				t.Fatalf("%s K1=%d: %d loops found, want one over both segments' tiles (barriers %v)", c.target, c.k1, len(got), got)
			}
			if got[0] != c.want {
				t.Errorf("%s K1=%d: the loop has %d barriers per iteration, want %d", c.target, c.k1, got[0], c.want)
			}
		}
		if !found {
			t.Errorf("%s K1=%d: no mla_decode_h16 kernel", c.target, c.k1)
		}
	}
}
