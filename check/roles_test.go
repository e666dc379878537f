package check

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
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

// TestScoreRoleRaceReported: the 64-head CTA as 0972ef8 generated it (issue 29;
// testdata/race), whose score role synchronized on its named barrier inside the
// phased loop's region: compute-sanitizer's racecheck reported hazards between
// the role's warps and the other four across the CTA barriers, and so does the
// emulator, on the same inputs on which today's kernel (whose score warps take
// their barrier again before each CTA barrier that publishes their accesses)
// runs clean.
func TestScoreRoleRaceReported(t *testing.T) {
	cfg := kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 64, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true,
		Segments: []mla.Segment{{K: 128, PageSize: 64, HasLen: true}, {K: 512, PageSize: 64, HasLen: true}}}, HeadBlock: 64, Split: 1}
	c, err := MLA(cfg, tgt("sm_90"), golden.MLAGenOptions{Seed: 1, InvalidFrac: 0.1, Poison: true})
	if err != nil {
		t.Fatal(err)
	}
	if v := runEmu(c); v.kind != verdictPass {
		t.Fatalf("today's kernel: %s: %s", v.kind, shortDetail(v))
	}
	if text := c.Compiled.Module.Print(); !regexp.MustCompile(`@%p\d+ bar\.sync 1, 128;`).MatchString(text) {
		t.Errorf("today's 64-head CTA never closes the score role's accesses with its barrier before a CTA barrier")
	}
	raw, err := os.ReadFile("testdata/race/mla_decode_h64_t2_split1_0972ef8.ptx.gz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	text, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	old, err := withText(c, string(text))
	if err != nil {
		t.Fatal(err)
	}
	v := runEmu(old)
	if v.kind != verdictRace || !strings.Contains(v.detail, "had used a named barrier of fewer threads") {
		t.Errorf("0972ef8's kernel: %s, want the named-barrier race: %s", v.kind, shortDetail(v))
	}
}
