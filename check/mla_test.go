package check

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/internal/ptxas"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
)

// mlaCase is one row of the mla_decode matrix: every value the issue lists
// (H, K, page size, cache format, sink, empty rows, poison, T, split) appears in
// at least one row; the cross product is sampled to keep CI time reasonable.
type mlaCaseSpec struct {
	T, H    int
	segs    []kernels.MLASegment
	cache   string
	nope    int
	rope    int
	sink    bool
	split   int
	hb      int // heads per CTA; 0 = automatic
	sms     int // SM count the plan assumes; 0 = the target's
	target  string
	opts    golden.MLAGenOptions
	comment string
}

func seg(k, page int, hasLen bool) kernels.MLASegment {
	return kernels.MLASegment{K: k, PageSize: page, HasLen: hasLen}
}

var mlaMatrix = []mlaCaseSpec{
	{T: 1, H: 64, segs: []kernels.MLASegment{seg(128, 64, true), seg(512, 64, true)}, sink: true, split: 1, target: "sm_120", comment: "DeepSeek-V4-Flash default, unsplit"},
	{T: 1, H: 64, segs: []kernels.MLASegment{seg(128, 64, true), seg(512, 64, true)}, sink: true, target: "sm_90", comment: "default, split for 132 SMs"},
	{T: 1, H: 1, segs: []kernels.MLASegment{seg(1, 1, false)}, sink: true, target: "sm_80", comment: "one head, one candidate, page size 1"},
	{T: 3, H: 8, segs: []kernels.MLASegment{seg(63, 2, true), seg(100, 53, true)}, sink: true, split: 1, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.2, EmptyRows: []int{1}, Poison: true, SinkEdges: true}, comment: "empty row, poison, sink +inf/-inf"},
	{T: 3, H: 24, segs: []kernels.MLASegment{seg(64, 256, true), seg(1152, 64, true)}, sink: true, split: 5, target: "sm_120",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, LenOutOfRange: true}, comment: "24 heads padded to 32, K 1152, split 5"},
	{T: 2, H: 128, segs: []kernels.MLASegment{seg(128, 64, true)}, sink: false, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.3, EmptyRows: []int{0}}, comment: "128 heads, no sink, empty row, split"},
	{T: 64, H: 16, segs: []kernels.MLASegment{seg(63, 53, true)}, sink: true, split: 1, target: "sm_80",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, SinkEdges: true}, comment: "64 rows"},
	{T: 1, H: 16, segs: []kernels.MLASegment{seg(100, 64, false), seg(512, 256, true)}, cache: kernels.CacheBF16, nope: 512, rope: 64, sink: true, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true}, comment: "bf16 cache, 512+64 (V3.2 widths), split"},
	{T: 3, H: 8, segs: []kernels.MLASegment{seg(64, 2, true)}, cache: kernels.CacheBF16, nope: 200, rope: 40, sink: true, split: 1, target: "sm_120",
		opts: golden.MLAGenOptions{InvalidFrac: 0.2, EmptyRows: []int{2}, SinkEdges: true}, comment: "bf16 cache, 200+40: the last slice is padded"},
	{T: 1, H: 24, segs: []kernels.MLASegment{seg(512, 64, true)}, sink: true, split: 4, target: "sm_90",
		opts: golden.MLAGenOptions{EmptyRows: []int{0}}, comment: "every candidate invalid, split: partials all empty"},
	{T: 2, H: 40, segs: []kernels.MLASegment{seg(128, 64, true), seg(100, 53, true)}, sink: true, hb: 32, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, SinkEdges: true}, comment: "32 heads per CTA (8 warps), 40 heads padded to 64"},
	// Planned for one SM, these launches count as several waves: score tiles are
	// split across warps and reduced through shared memory instead of replicated.
	{T: 3, H: 24, segs: []kernels.MLASegment{seg(100, 64, true), seg(64, 53, true)}, sink: true, split: 2, sms: 1, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, SinkEdges: true}, comment: "several waves: split score tiles"},
	{T: 2, H: 40, segs: []kernels.MLASegment{seg(128, 64, true)}, sink: true, hb: 32, sms: 1, target: "sm_80",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, EmptyRows: []int{1}}, comment: "several waves, 32 heads per CTA"},
	// 64 heads per CTA (16 warps) and 64-candidate tiles, chosen automatically: the
	// CTAs fill the 2 SMs planned for and each walks 9 tiles. 72 heads pad to two
	// blocks of 64; the second segment's last tile is partial (460 = 7x64 + 12).
	{T: 2, H: 72, segs: []kernels.MLASegment{seg(64, 64, true), seg(460, 16, true)}, sink: true, sms: 2, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true}, comment: "automatic 64 heads per CTA, 64-candidate tiles, 72 heads padded to 128"},
	// More candidates than a CTA preloads (2112 > 2048 indices): each tile loads its
	// own indices.
	{T: 1, H: 8, segs: []kernels.MLASegment{seg(2100, 64, true)}, sink: true, split: 1, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true}, comment: "2100 candidates unsplit: per-tile index loads"},
}

func (s mlaCaseSpec) config() kernels.MLAConfig {
	c := kernels.MLAConfig{T: s.T, H: s.H, Nope: 448, Rope: 64, Cache: kernels.CacheFP8DS, Sink: s.sink, Segments: s.segs, Split: s.split, HeadBlock: s.hb, SMs: s.sms}
	if s.cache != "" {
		c.Cache, c.Nope, c.Rope = s.cache, s.nope, s.rope
	}
	return c
}

func TestMLAMatrix(t *testing.T) {
	for i, s := range mlaMatrix {
		t.Run(fmt.Sprintf("%d_%s", i, s.comment), func(t *testing.T) {
			t.Parallel()
			opts := s.opts
			opts.Seed = uint64(100 + i)
			c, err := MLA(s.config(), s.target, opts)
			if err != nil {
				t.Fatal(err)
			}
			passesInEmulator(t, c)
		})
	}
}

// TestMLAMatrixCoversTheIssue keeps the matrix honest: every value the issue
// names appears in some row.
func TestMLAMatrixCoversTheIssue(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range mlaMatrix {
		c := s.config()
		seen[fmt.Sprint("H", c.H)] = true
		seen[fmt.Sprint("T", c.T)] = true
		seen["cache "+c.Cache] = true
		if c.Split == 1 {
			seen["unsplit"] = true
		} else {
			seen["split"] = true
		}
		if c.Sink {
			seen["sink"] = true
			if s.opts.SinkEdges {
				seen["sink inf"] = true
			}
		} else {
			seen["no sink"] = true
		}
		if len(s.opts.EmptyRows) > 0 {
			seen["empty row"] = true
		}
		if s.opts.Poison {
			seen["poison"] = true
		}
		for _, g := range c.Segments {
			seen[fmt.Sprint("K", g.K)] = true
			seen[fmt.Sprint("B", g.PageSize)] = true
		}
	}
	var want []string
	for _, h := range []int{1, 8, 16, 24, 64, 128} {
		want = append(want, fmt.Sprint("H", h))
	}
	for _, k := range []int{1, 63, 64, 100, 128, 512, 1152} {
		want = append(want, fmt.Sprint("K", k))
	}
	for _, b := range []int{1, 2, 53, 64, 256} {
		want = append(want, fmt.Sprint("B", b))
	}
	want = append(want, "T1", "T3", "T64", "cache fp8ds", "cache bf16", "split", "unsplit", "sink", "no sink", "sink inf", "empty row", "poison")
	for _, w := range want {
		if !seen[w] {
			t.Errorf("the matrix has no row with %s", w)
		}
	}
}

// TestVectors runs every shared test vector (copied into golden/testdata) through
// the generated kernel, unsplit and split.
func TestVectors(t *testing.T) {
	dirs, err := filepath.Glob("../golden/testdata/vectors/mla_decode/*")
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no test vectors found (%v)", err)
	}
	for _, d := range dirs {
		for _, split := range []int{1, 0} {
			t.Run(fmt.Sprintf("%s/split%d", filepath.Base(d), split), func(t *testing.T) {
				c, err := Vectors(d, "sm_90", kernels.MLAConfig{Split: split}, 0)
				if err != nil {
					t.Fatal(err)
				}
				passesInEmulator(t, c)
			})
		}
	}
}

// TestMLAMatrixAssembles: ptxas 11.8 assembles every sm_80 and sm_90 variant of
// the matrix with no warning, no spill and no local memory.
func TestMLAMatrixAssembles(t *testing.T) {
	ptxas.Require(t)
	for i, s := range mlaMatrix {
		for _, target := range []string{"sm_80", "sm_90"} {
			t.Run(fmt.Sprintf("%d_%s", i, target), func(t *testing.T) {
				t.Parallel()
				p, err := kernels.MLA(s.config(), target)
				if err != nil {
					t.Fatal(err)
				}
				comp, err := lower.CompileProgram(p, target)
				if err != nil {
					t.Fatal(err)
				}
				res, err := ptxas.Assemble(comp.Module.Print(), target)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.Warnings) > 0 || res.SpillStores+res.SpillLoads+res.LocalBytes > 0 {
					t.Errorf("%s: warnings %q, spills %d+%d bytes, local %d bytes, %d registers",
						s.comment, res.Warnings, res.SpillStores, res.SpillLoads, res.LocalBytes, res.Registers)
				}
			})
		}
	}
}
