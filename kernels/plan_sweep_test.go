package kernels_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/mla"
	"github.com/ptxgen/ptxgen/plan"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// planSweep is the configuration sweep of issue 19: every decode family the plan
// generates, on the three shared-memory regimes (sm_80 163 KB, sm_90 227 KB, sm_120
// 99 KB), for an fp8ds cache and bf16 caches of widths 512 to 768, short and long
// candidate lists in one or two segments (index preloads of every size up to the
// 8 KB limit and past it), at 64 heads (16- and 64-head CTAs) and 8. Before the
// plan asked the lowering for its figures, 170 of the 64-head families of such a
// sweep planned less shared memory than the smem pass allocates, and bf16 D=512
// K=512 did not generate on sm_80.
func planSweep(short bool) []kernels.MLAConfig {
	type cache struct {
		name       mla.CacheFormat
		nope, rope int
	}
	caches := []cache{{mla.CacheFP8DS, 448, 64}, {mla.CacheBF16, 448, 64}, {mla.CacheBF16, 640, 64}, {mla.CacheBF16, 704, 64}}
	ks := [][2]int{{128, 512}, {512, 0}, {2048, 0}, {4096, 0}, {2048, 2048}, {512, 4096}}
	if short {
		caches, ks = caches[:2], [][2]int{{128, 512}, {512, 0}, {2048, 2048}}
	}
	var out []kernels.MLAConfig
	for ci, c := range caches {
		for ki, k := range ks {
			heads := []int{64}
			if ci < 2 && ki%3 == 0 {
				heads = append(heads, 8) // 16-head CTAs only, one head block
			}
			for _, h := range heads {
				cfg := kernels.MLAConfig{Shape: mla.Shape{T: 1, MaxT: 64, H: h, Nope: c.nope, Rope: c.rope, Cache: c.name, Sink: true, Segments: []mla.Segment{{K: k[0], PageSize: 64, HasLen: true}}}}
				if k[1] > 0 {
					cfg.Segments = append(cfg.Segments, mla.Segment{K: k[1], PageSize: 64, HasLen: true})
				}
				out = append(out, cfg)
			}
		}
	}
	return out
}

// TestPlanFiguresMatchCompiledKernels: every decode kernel of every family the plan
// generates over the sweep compiles, and the figures the plan chose it by are the
// compiled kernel's: its shared memory fits the target, its CTAs per SM (from the
// compiled .maxnreg and shared memory, as the occupancy rule counts them) are the
// family's PerSM for the large kernels, the family's Small kernels exist exactly
// where their PTX differs from the large ones', and a 64-head family takes
// 64-candidate tiles exactly where they fit.
func TestPlanFiguresMatchCompiledKernels(t *testing.T) {
	for _, tname := range []string{"sm_80", "sm_90", "sm_120"} {
		t.Run(tname, func(t *testing.T) {
			t.Parallel()
			tg := target.MustLookup(tname)
			wide := 0
			for _, cfg := range planSweep(testing.Short()) {
				wide += checkPlanFigures(t, cfg, tg)
			}
			// 64-head CTAs need more than sm_120's 99 KB; the sweep must exercise
			// them where they fit.
			if fit := tname != "sm_120"; (wide > 0) != fit {
				t.Errorf("%d 64-head families planned; want some exactly where they fit (%v)", wide, fit)
			}
		})
	}
}

// checkPlanFigures checks cfg's plan on tg and returns its number of 64-head families
// (at H <= 8 the second family is the heads-in-N one).
func checkPlanFigures(t *testing.T, cfg kernels.MLAConfig, tg target.Target) int {
	t.Helper()
	failed := t.Failed()
	name := fmt.Sprintf("%s cache=%s D=%d K=%v H=%d", tg, cfg.Cache, cfg.D(), cfg.Segments, cfg.H)
	p, designs, err := kernels.MLADesign(cfg, tg)
	if err != nil || len(designs) != len(p.Rule.Families) {
		t.Errorf("%s: %d designs, %v", name, len(designs), err)
		return 0
	}
	// The variants are the plan's families, and the layout pass splits their
	// accumulators as the variant says.
	for i, d := range designs {
		f := p.Rule.Families[i]
		carried := kernels.MLAVariant{HeadBlock: f.HeadBlock, Warps: f.Warps, WarpGrid: f.WarpGrid, Tile: f.Tile, Stages: f.Stages, Precision: cfg.Precision, Score: f.ScoreWarps, Producer: f.ProducerWarps,
			HoldQ: f.HeadBlock == 16 && !cfg.SharedQ, HeadsInN: f.HeadBlock == 8,
			KFrags: d.Variant.KFrags, KPerm: d.Variant.KPerm} // not in the family (TestKFragsAuto checks where it is taken)
		if d.Variant != carried || d.Family != f || f.Precision != cfg.Precision.Describe() {
			t.Errorf("%s: variant %v against family %+v", name, d.Variant, f)
		}
		for n, fig := range d.Figures {
			if fig.WarpGrid != d.Variant.WarpGrid || fig.Threads != 32*d.Variant.Warps {
				t.Errorf("%s: %s: the lowering split its accumulators %v over %d threads; the variant says %v over %d warps", name, n, fig.WarpGrid, fig.Threads, d.Variant.WarpGrid, d.Variant.Warps)
			}
		}
	}
	// The decode kernels, each compiled as the program would (its place among the
	// others only adds griddepcontrol); the combines do not depend on the family.
	compiled := map[string]*ptx.Kernel{}
	for _, k := range p.Kernels {
		if !strings.HasPrefix(k.Name, "mla_decode") {
			continue
		}
		res, err := lower.Compile(k, tg, lower.Options{})
		if err != nil {
			t.Errorf("%s: planned kernel %s does not compile: %v", name, k.Name, err)
			return 0
		}
		compiled[k.Name] = res.Kernel
	}
	perSM := func(k *ptx.Kernel) int {
		threads := k.Block
		n := min(tg.RegsPerSM/(threads*k.Module.Funcs[0].MaxNReg), tg.MaxThreadsPerSM/threads)
		if k.SharedBytes > 0 {
			n = min(n, tg.SharedPerSM/k.SharedBytes)
		}
		return n
	}
	for i, f := range p.Rule.Families {
		// A second 16-head family serves only calls whose rows fill the SMs
		// (computed K fragments at more CTAs per SM): they never split, and run
		// its large kernel (no Small ones: replicated scores would have every warp
		// dequantize every dim).
		fill := i == 1 && f.HeadBlock == 16
		if fill && (f.Partial != "" || !designs[i].Variant.KFrags || f.PerSM <= p.Rule.Families[0].PerSM) {
			t.Errorf("%s: second 16-head family %+v (%v): want computed K fragments, more CTAs per SM than family 0 and no Partial kernel", name, f, designs[i].Variant)
		}
		fewest := 0
		for _, n := range []string{f.Direct, f.Partial} {
			if n == "" {
				continue
			}
			k := compiled[n]
			if k.SharedBytes > tg.MaxSharedPerBlock {
				t.Errorf("%s: %s needs %d bytes of shared memory, more than %d", name, n, k.SharedBytes, tg.MaxSharedPerBlock)
			}
			if c := perSM(k); fewest == 0 || c < fewest {
				fewest = c
			}
		}
		if fewest != f.PerSM {
			t.Errorf("%s: family h%d tile %d plans %d CTAs per SM; its compiled kernels hold %d", name, f.HeadBlock, f.Tile, f.PerSM, fewest)
		}
		for _, pair := range [][2]string{{f.Direct, f.DirectSmall}, {f.Partial, f.PartialSmall}} {
			if pair[0] == "" {
				continue
			}
			if hasSmall := pair[1] != ""; hasSmall != (f.HeadBlock == 16 && !fill) {
				t.Errorf("%s: family h%d: Small kernel for %s: %v, want one exactly for 16-head CTAs (replicated score tiles) of calls that may split", name, f.HeadBlock, pair[0], hasSmall)
			}
		}
		if f.HeadBlock == 64 && f.Tile == 32 && compiles(cfg, tg, 64, 64) {
			t.Errorf("%s: the 64-head family takes 32-candidate tiles, but 64 compile", name)
		}
	}
	if len(p.Rule.Families) == 1 && cfg.H >= 64 && compiles(cfg, tg, 64, 32) {
		t.Errorf("%s: no 64-head family, but its kernels compile", name)
	}
	if t.Failed() && !failed {
		t.Logf("%s: plan %s", name, describeRule(p.Rule))
	}
	wide := 0
	for _, f := range p.Rule.Families {
		if f.HeadBlock == 64 {
			wide++
		}
	}
	return wide
}

// compiles reports whether every decode kernel of cfg forced to hb heads per CTA and
// tile candidates per tile compiles on tg (one that does not stops at smem).
func compiles(cfg kernels.MLAConfig, tg target.Target, hb, tile int) bool {
	cfg.HeadBlock, cfg.Tile = hb, tile
	p, err := kernels.MLA(cfg, tg)
	if err != nil {
		return false
	}
	for _, k := range p.Kernels {
		if strings.HasPrefix(k.Name, "mla_decode") {
			if _, err := lower.Compile(k, tg, lower.Options{}); err != nil {
				return false
			}
		}
	}
	return true
}

func describeRule(r *plan.Rule) string {
	var s []string
	for _, f := range r.Families {
		s = append(s, fmt.Sprintf("h%d tile %d perSM %d", f.HeadBlock, f.Tile, f.PerSM))
	}
	return strings.Join(s, "; ")
}
