package check

import (
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/golden"
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
	}{
		{mla.CacheFP8DS, 3, 100, 300, 1},   // one chunk per row
		{mla.CacheFP8DS, 2, 128, 512, 132}, // one tile per CTA
		{mla.CacheBF16, 3, 70, 200, 2},
		{mla.CacheBF16, 1, 0, 130, 0},
	} {
		s := mla.Shape{T: tc.T, H: 16, Nope: 448, Rope: 64, Cache: tc.cache, Sink: true}
		if tc.k0 > 0 {
			s.Segments = append(s.Segments, mla.Segment{K: tc.k0, PageSize: 64, HasLen: true})
		}
		s.Segments = append(s.Segments, mla.Segment{K: tc.k1, PageSize: 64, HasLen: true})
		g := golden.PackedMLAConfig(s, golden.MLAPoolPages(s))
		seed := uint64(tc.T*1000 + tc.k1)
		in, err := golden.GenMLA(g, golden.MLAGenOptions{Seed: seed, InvalidFrac: 0.2, Poison: true})
		if err != nil {
			t.Fatal(err)
		}
		c, err := MLAGather(g, in, tgt("sm_90"), tc.sms)
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
		if text := c.Compiled.Module.Print(); !strings.Contains(text, "cp.async.cg.shared.global") {
			t.Errorf("%s: no 16-byte cp.async gathers", c.Name)
		}
	}
}
