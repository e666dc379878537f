package check

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/mla"
)

// TestMLASwizzleClasses: the 64-head CTA's two ring slots fit sm_90 only with
// its copied tiles (q, the rope) swizzled instead of padded; with less shared
// memory per CTA the smem pass swizzles the computed tiles too (the dequantized
// K), then the fragment tiles (P). At each step the kernel keeps two stages,
// passes in the emulator against float64, and its ldmatrix reads take one
// wavefront per matrix.
func TestMLASwizzleClasses(t *testing.T) {
	cfg := kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 64, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true,
		Segments: []mla.Segment{seg(128, 64, true), seg(100, 53, true)}}, HeadBlock: 64}
	tg := tgt("sm_90")
	classes := []struct{ class, prefix string }{{"copied", "%q"}, {"copied", "%rope"}, {"computed", "%k_"}, {"fragments", "%p_"}}
	for step, upTo := range []string{"copied", "computed", "fragments"} {
		p, designs, err := kernels.MLADesign(cfg, tg)
		if err != nil {
			t.Fatalf("%d bytes per CTA: %v", tg.MaxSharedPerBlock, err)
		}
		if got := designs[0].Variant.Stages; got != 2 {
			t.Fatalf("%d bytes per CTA: %d stages, want 2", tg.MaxSharedPerBlock, got)
		}
		k := p.Kernels[0]
		res, err := lower.Compile(k, tg, lower.Options{After: "smem", Check: true})
		if err != nil {
			t.Fatal(err)
		}
		var swizzled []string
		for _, l := range strings.Split(res.Dump, "\n") {
			if strings.Contains(l, "swizzled") && !strings.Contains(l, "transposed") {
				swizzled = append(swizzled, strings.Fields(l)[0])
			}
		}
		for _, c := range classes {
			want := c.class == "copied" || c.class == "computed" && step >= 1 || step == 2
			got := false
			for _, name := range swizzled {
				got = got || strings.HasPrefix(name, c.prefix)
			}
			if got != want {
				t.Errorf("%d bytes per CTA (swizzling up to %s tiles): %s* swizzled %v, want %v; swizzled: %v", tg.MaxSharedPerBlock, upTo, c.prefix, got, want, swizzled)
			}
		}
		c, err := MLA(cfg, tg, golden.MLAGenOptions{Seed: uint64(700 + step), InvalidFrac: 0.1, Poison: true})
		if err != nil {
			t.Fatal(err)
		}
		var sc emu.SharedConflicts
		c.Conflicts = &sc
		t.Run(fmt.Sprintf("up_to_%s", upTo), func(t *testing.T) { passesInEmulator(t, c) })
		if sc.Matrices.Load() == 0 || sc.Wavefronts.Load() != sc.Matrices.Load() {
			t.Errorf("%d bytes per CTA: %v, want ldmatrix reads without bank conflicts", tg.MaxSharedPerBlock, &sc)
		}
		fig, err := lower.Measure(k, tg)
		if err != nil {
			t.Fatal(err)
		}
		tg.MaxSharedPerBlock = fig.SharedBytes - 128 // the next step must swizzle more
	}
}
