package check

import (
	"cmp"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/bench"
	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/internal/ptxas"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/mla"
)

// TestMLAGather: the gather ceiling sums exactly the records the decode reads, on
// random inputs with invalid indices, short rows and poisoned slots past len (which
// it must skip, as the decode does), for both cache formats and for splits from
// one chunk per row to one tile per CTA; and it gathers with cp.async.
func TestMLAGather(t *testing.T) {
	for _, tc := range []struct {
		cache mla.CacheFormat
		T     int
		k0    int
		k1    int
		sms   int
		split int
		page1 int // segment 1's page size; 0: 64, as segment 0's
	}{
		{mla.CacheFP8DS, 3, 100, 300, 1, 0, 0},   // two chunks per row
		{mla.CacheFP8DS, 2, 128, 512, 132, 0, 0}, // one tile per CTA
		{mla.CacheFP8DS, 2, 128, 512, 0, 1, 0},   // one chunk per row: both segments in one CTA
		{mla.CacheFP8DS, 1, 128, 512, 0, 7, 0},   // uneven chunks (20 tiles)
		{mla.CacheFP8DS, 2, 70, 200, 0, 2, 16},   // pages of 16 in segment 1, a chunk across the segments' end
		{mla.CacheFP8DS, 1, 40, 2100, 0, 1, 0},   // more indices than the loop preloads: loaded per tile
		{mla.CacheBF16, 3, 70, 200, 2, 0, 0},
		{mla.CacheBF16, 1, 0, 130, 0, 0, 0},
	} {
		s := mla.Shape{T: tc.T, H: 16, Nope: 448, Rope: 64, Cache: tc.cache, Sink: true}
		if tc.k0 > 0 {
			s.Segments = append(s.Segments, mla.Segment{K: tc.k0, PageSize: 64, HasLen: true})
		}
		page1 := cmp.Or(tc.page1, 64)
		s.Segments = append(s.Segments, mla.Segment{K: tc.k1, PageSize: page1, HasLen: true})
		g := golden.PackedMLAConfig(s, golden.MLAPoolPages(s))
		seed := uint64(tc.T*1000 + tc.k1)
		in, err := golden.GenMLA(g, golden.MLAGenOptions{Seed: seed, InvalidFrac: 0.2, Poison: true})
		if err != nil {
			t.Fatal(err)
		}
		c, err := MLAGather(g, in, tgt("sm_90"), tc.sms, tc.split)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s seed %d", c.Name, seed)
		passesInEmulator(t, c)
		// The reference must depend on the records: a changed word changes a sum.
		want := GatherReference(g, in, 1)
		var nonzero int
		for _, w := range want {
			if w != 0 {
				nonzero++
			}
		}
		if nonzero < len(want)/2 {
			t.Errorf("%s: only %d of %d lane sums nonzero", c.Name, nonzero, len(want))
		}
		text := c.Compiled.Module.Print()
		if !strings.Contains(text, "cp.async.cg.shared.global") {
			t.Errorf("%s: no 16-byte cp.async gathers", c.Name)
		}
		// One loop walks the chunk across both candidate lists, pipelined: its
		// gathers through the preloaded indices, or, past the preload, with each
		// tile's indices issued ahead of it as an index tile (lower/loop_pipeline.go).
		k, err := kernels.Gather(kernels.GatherConfig{Shape: g.Shape, SMs: tc.sms, Split: tc.split})
		if err != nil {
			t.Fatal(err)
		}
		preloaded := strings.Contains(ir.Print(k), "%cta_ids = ")
		if n := strings.Count(ir.Print(k), " = for "); n != 1 {
			t.Errorf("%s: %d loops, want 1", c.Name, n)
		}
		if n := strings.Count(text, "// pipeline:"); n != 1 {
			t.Errorf("%s: %d pipelined loops, want 1 (indices preloaded: %v)", c.Name, n, preloaded)
		}
		if n := strings.Count(text, "// index tile %ids:"); (n > 0) == preloaded {
			t.Errorf("%s: %d index tile comments; indices preloaded: %v", c.Name, n, preloaded)
		}
		if preloaded != (tc.k1 <= 2048) {
			t.Errorf("%s: indices preloaded %v", c.Name, preloaded)
		}
	}
}

// TestMLAGatherAssembles: the gather ceiling of every bench shape assembles with
// ptxas 11.8 for sm_90 with no warning, spill or local memory, and stays within
// sm_120's 99 KB of shared memory (so -plan-target sm_120 runs can time it too).
func TestMLAGatherAssembles(t *testing.T) {
	ptxas.Require(t)
	seen := map[string]bool{}
	for _, s := range bench.Shapes() {
		gc := kernels.GatherConfig{Shape: s.Config().Shape}
		key := describeMLA(kernels.MLAConfig{Shape: gc.Shape})
		if seen[key] {
			continue
		}
		seen[key] = true
		k, err := kernels.Gather(gc)
		if err != nil {
			t.Fatal(err)
		}
		comp, err := lower.CompileProgram(&ir.Program{Name: "mla_gather", Kernels: []*ir.Kernel{k}}, nil, tgt("sm_90").WithLimitsOf(tgt("sm_120")))
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if sh := comp.Kernels[0].SharedBytes; sh > 99*1024 {
			t.Errorf("%s: %d bytes of shared memory", s.Name, sh)
		}
		res, err := ptxas.Assemble(comp.Module.Print(), "sm_90")
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if len(res.Warnings) > 0 || res.SpillStores+res.SpillLoads+res.LocalBytes > 0 {
			t.Errorf("%s: warnings %q, spills %d+%d bytes, local %d bytes, %d registers",
				s.Name, res.Warnings, res.SpillStores, res.SpillLoads, res.LocalBytes, res.Registers)
		}
	}
}
