package check

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/internal/ptxas"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/mla"
)

// mlaCase is one row of the mla_decode matrix: every value the issue lists
// (H, K, page size, cache format, sink, empty rows, poison, T, split) appears in
// at least one row; the cross product is sampled to keep CI time reasonable.
type mlaCaseSpec struct {
	T, H    int
	segs    []mla.Segment
	cache   mla.CacheFormat
	nope    int
	rope    int
	sink    bool
	split   int
	hb      int // heads per CTA; 0 = automatic
	tile    int // candidates per tile; 0 = automatic
	stages  int // candidate tiles in flight; 0 = automatic
	kfrags  kernels.MLAKFrags
	sms     int // SM count the plan assumes; 0 = the target's
	target  string
	opts    golden.MLAGenOptions
	comment string
}

func seg(k, page int, hasLen bool) mla.Segment {
	return mla.Segment{K: k, PageSize: page, HasLen: hasLen}
}

var mlaMatrix = []mlaCaseSpec{
	{T: 1, H: 64, segs: []mla.Segment{seg(128, 64, true), seg(512, 64, true)}, sink: true, split: 1, target: "sm_120", comment: "DeepSeek-V4-Flash default, unsplit"},
	{T: 1, H: 64, segs: []mla.Segment{seg(128, 64, true), seg(512, 64, true)}, sink: true, target: "sm_90", comment: "default, split for 132 SMs"},
	{T: 1, H: 1, segs: []mla.Segment{seg(1, 1, false)}, sink: true, target: "sm_80", comment: "one head, one candidate, page size 1"},
	{T: 3, H: 8, segs: []mla.Segment{seg(63, 2, true), seg(100, 53, true)}, sink: true, split: 1, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.2, EmptyRows: []int{1}, Poison: true, SinkEdges: true}, comment: "empty row, poison, sink +inf/-inf"},
	{T: 3, H: 24, segs: []mla.Segment{seg(64, 256, true), seg(1152, 64, true)}, sink: true, split: 5, target: "sm_120",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, LenOutOfRange: true}, comment: "24 heads padded to 32, K 1152, split 5"},
	{T: 2, H: 128, segs: []mla.Segment{seg(128, 64, true)}, sink: false, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.3, EmptyRows: []int{0}}, comment: "128 heads, no sink, empty row, split"},
	{T: 64, H: 16, segs: []mla.Segment{seg(63, 53, true)}, sink: true, split: 1, target: "sm_80",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, SinkEdges: true}, comment: "64 rows"},
	{T: 1, H: 16, segs: []mla.Segment{seg(100, 64, false), seg(512, 256, true)}, cache: mla.CacheBF16, nope: 512, rope: 64, sink: true, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true}, comment: "bf16 cache, 512+64 (V3.2 widths), split"},
	{T: 3, H: 8, segs: []mla.Segment{seg(64, 2, true)}, cache: mla.CacheBF16, nope: 200, rope: 40, sink: true, split: 1, target: "sm_120",
		opts: golden.MLAGenOptions{InvalidFrac: 0.2, EmptyRows: []int{2}, SinkEdges: true}, comment: "bf16 cache, 200+40: the last slice is padded"},
	{T: 1, H: 24, segs: []mla.Segment{seg(512, 64, true)}, sink: true, split: 4, target: "sm_90",
		opts: golden.MLAGenOptions{EmptyRows: []int{0}}, comment: "every candidate invalid, split: partials all empty"},
	{T: 2, H: 40, segs: []mla.Segment{seg(128, 64, true), seg(100, 53, true)}, sink: true, hb: 32, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, SinkEdges: true}, comment: "32 heads per CTA (8 warps), 40 heads padded to 64"},
	// Planned for one SM, these launches count as several waves: score tiles are
	// split across warps and reduced through shared memory instead of replicated.
	{T: 3, H: 24, segs: []mla.Segment{seg(100, 64, true), seg(64, 53, true)}, sink: true, split: 2, sms: 1, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, SinkEdges: true}, comment: "several waves: split score tiles"},
	{T: 2, H: 40, segs: []mla.Segment{seg(128, 64, true)}, sink: true, hb: 32, sms: 1, target: "sm_80",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, EmptyRows: []int{1}}, comment: "several waves, 32 heads per CTA"},
	// 64 heads per CTA (16 warps) and 64-candidate tiles, chosen automatically: the
	// CTAs fill the 2 SMs planned for and each walks 9 tiles. 72 heads pad to two
	// blocks of 64; the second segment's last tile is partial (460 = 7x64 + 12).
	{T: 2, H: 72, segs: []mla.Segment{seg(64, 64, true), seg(460, 16, true)}, sink: true, sms: 2, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, OutOfPool: true}, comment: "automatic 64 heads per CTA, 64-candidate tiles, 72 heads padded to 128, out-of-pool indices"},
	// More candidates than a CTA preloads (2112 > 2048 indices): each tile loads its
	// own indices.
	{T: 1, H: 8, segs: []mla.Segment{seg(2100, 64, true)}, sink: true, split: 1, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, OutOfPool: true}, comment: "2100 candidates unsplit: per-tile index loads, out-of-pool indices"},
	// Indices slots, slots+1 and INT_MAX inside every row's valid prefix: invalid
	// like -1 (never read: the emulator fails a read past a buffer, and with
	// poison the pages behind the pool's end are NaN).
	{T: 3, H: 16, segs: []mla.Segment{seg(100, 64, true), seg(64, 2, true)}, sink: true, split: 3, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, OutOfPool: true}, comment: "out-of-pool indices, split"},
	// Planned for 4 SMs, 3 rows split 3 ways and 1 row 6.
	{T: 3, H: 16, segs: []mla.Segment{seg(100, 64, true), seg(64, 2, true)}, sink: true, sms: 4, target: "sm_90",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, SinkEdges: true}, comment: "split 3 planned for 4 SMs"},
	// Planned for 2 SMs, the rows fill them: the 16-head CTA with K and V fragments
	// computed from the raw ring (2 CTAs per SM under sm_120's 99 KB), unsplit.
	{T: 3, H: 24, segs: []mla.Segment{seg(100, 64, true), seg(70, 16, true)}, sink: true, sms: 2, target: "sm_120",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, SinkEdges: true}, comment: "rows that fill the SMs: computed K fragments"},
	// The 64-head CTA under sm_120's 99 KB: K and V fragments computed from the raw
	// ring, one stage, 32-candidate tiles; 72 heads pad to two blocks of 64, split.
	{T: 2, H: 72, segs: []mla.Segment{seg(100, 64, true), seg(70, 16, true)}, sink: true, hb: 64, tile: 32, stages: 1, kfrags: kernels.KFragsOn, split: 2, target: "sm_120",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, SinkEdges: true}, comment: "64-head CTA with computed K fragments under sm_120's limits"},
	{T: 2, H: 8, segs: []mla.Segment{seg(40, 53, false)}, sink: false, split: 1, target: "sm_120",
		opts: golden.MLAGenOptions{OutOfPool: true}, comment: "out-of-pool indices, no len, unsplit"},
	{T: 2, H: 8, segs: []mla.Segment{seg(64, 16, true)}, cache: mla.CacheBF16, nope: 512, rope: 64, sink: true, split: 1, target: "sm_80",
		opts: golden.MLAGenOptions{InvalidFrac: 0.1, Poison: true, OutOfPool: true}, comment: "out-of-pool indices, bf16 cache"},
}

func (s mlaCaseSpec) config() kernels.MLAConfig {
	c := kernels.MLAConfig{Shape: mla.Shape{T: s.T, H: s.H, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: s.sink, Segments: s.segs}, Split: s.split, HeadBlock: s.hb, Tile: s.tile, Stages: s.stages, KFrags: s.kfrags, SMs: s.sms}
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
			c, err := MLA(s.config(), tgt(s.target), opts)
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
		seen["cache "+string(c.Cache)] = true
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
		if s.opts.OutOfPool {
			seen["out of pool "+string(c.Cache)] = true
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
	want = append(want, "T1", "T3", "T64", "cache fp8ds", "cache bf16", "split", "unsplit", "sink", "no sink", "sink inf", "empty row", "poison", "out of pool fp8ds", "out of pool bf16")
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
				c, err := Vectors(d, tgt("sm_90"), kernels.MLAConfig{Split: split}, 0)
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
				p, err := kernels.MLA(s.config(), tgt(target))
				if err != nil {
					t.Fatal(err)
				}
				comp, err := lower.CompileProgram(p.Program, p.Sequences(), tgt(target))
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

// TestVectorsIndexPastPool: a vector folder whose idx0.i32 holds an index far
// past the pool inside the valid prefix (issue 15, item 1: it panicked in
// golden.MLAConfig.LoadK) loads, runs in the emulator without reading it, and
// still matches the folder's outputs: one candidate of 160 dropped stays within
// the spec's tolerance once meta.json counts it out. The candidate counts show it
// was dropped.
func TestVectorsIndexPastPool(t *testing.T) {
	src := "../golden/testdata/vectors/mla_decode/h4_sink_edges"
	dir := t.TempDir()
	files, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(src, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if f.Name() == "idx0.i32" {
			binary.LittleEndian.PutUint32(b, 1000000000)
		}
		if err := os.WriteFile(filepath.Join(dir, f.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	v, err := golden.LoadVectors(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := len(v.Config.Candidates(v.Inputs, 0, 0)) + len(v.Config.Candidates(v.Inputs, 1, 0))
	if got != v.ValidPerRow[0]-1 {
		t.Fatalf("row 0 has %d valid candidates, want %d (the folder's %d less the one past the pool)", got, v.ValidPerRow[0]-1, v.ValidPerRow[0])
	}
	// The folder's own count still includes the dropped candidate, which the check
	// reports as a mismatch (a clear failure, not a crash); a folder written for
	// the new rule says 159.
	c, err := Vectors(dir, tgt("sm_90"), kernels.MLAConfig{Split: 1}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if res, err := Run(Emulator{}, c); err != nil || res.OK() || !strings.Contains(res.String(), "valid_candidates_per_row") {
		t.Errorf("meta.json's count of 160 should fail the check (err %v), got:\n%s", err, res)
	}
	metaPath := filepath.Join(dir, "meta.json")
	var meta map[string]any
	b, err := os.ReadFile(metaPath)
	if err == nil {
		err = json.Unmarshal(b, &meta)
	}
	if err != nil {
		t.Fatal(err)
	}
	meta["valid_candidates_per_row"].([]any)[0] = v.ValidPerRow[0] - 1
	if b, err = json.Marshal(meta); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(metaPath, b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, split := range []int{1, 0} {
		c, err := Vectors(dir, tgt("sm_90"), kernels.MLAConfig{Split: split}, 0)
		if err != nil {
			t.Fatal(err)
		}
		passesInEmulator(t, c)
	}
}

// TestMLAPool: MLAPool sizes each pool in whole pages of at least the bytes asked
// for, passes the slots to the kernel, puts every valid candidate in the pools' last
// pages, and the case passes in the emulator at a small size (the GPU check runs
// 4.5 GiB). A pool of more than 2^31-1 slots, or past MaxPoolBytes, is refused
// before anything is allocated.
func TestMLAPool(t *testing.T) {
	const seed = 0x9001
	cfg := kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 8, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true, Segments: []mla.Segment{seg(70, 64, true), seg(40, 16, true)}}, Split: 2}
	const poolBytes = 3 << 20
	c, err := MLAPool(cfg, tgt("sm_90"), golden.MLAGenOptions{Seed: seed, InvalidFrac: 0.1, Poison: true, OutOfPool: true}, poolBytes)
	if err != nil {
		t.Fatal(err)
	}
	// MLAPool writes as many last pages as the largest small pool MLA would use.
	tailPages := 0
	for _, sg := range cfg.Segments {
		tailPages = max(tailPages, 2*((sg.K+sg.PageSize-1)/sg.PageSize)+4)
	}
	for s, sg := range cfg.Segments {
		stride := c.Scalars[fmt.Sprintf("page_stride%d", s)].(int64)
		pages := int64(len(c.Buffers[fmt.Sprintf("cache%d", s)])) / stride
		if pages*stride < poolBytes || (pages-1)*stride >= poolBytes {
			t.Errorf("segment %d: %d pages of %d bytes for a pool of %d bytes", s, pages, stride, poolBytes)
		}
		if got, want := c.Scalars[fmt.Sprintf("slots%d", s)], int32(pages)*int32(sg.PageSize); got != want {
			t.Errorf("segment %d: slots = %v, want %d", s, got, want)
		}
		idx := f32sAsI32(c.Buffers[fmt.Sprintf("idx%d", s)])
		lens := f32sAsI32(c.Buffers[fmt.Sprintf("len%d", s)])
		tail := pages - int64(tailPages)
		for row := 0; row < cfg.T; row++ {
			for _, id := range idx[row*sg.K : row*sg.K+min(max(int(lens[row]), 0), sg.K)] {
				if id >= 0 && int64(id) < pages*int64(sg.PageSize) && int64(id)/int64(sg.PageSize) < tail {
					t.Errorf("seed %#x: segment %d row %d: candidate %d on page %d, before the last pages (from %d)", seed, s, row, id, int64(id)/int64(sg.PageSize), tail)
				}
			}
		}
	}
	passesInEmulator(t, c)

	tiny := kernels.MLAConfig{Shape: mla.Shape{T: 1, H: 1, Nope: 1, Rope: 0, Cache: mla.CacheBF16, Segments: []mla.Segment{seg(1, 1, false)}}}
	if _, err := MLAPool(tiny, tgt("sm_90"), golden.MLAGenOptions{Seed: seed}, MaxPoolBytes); err == nil || !strings.Contains(err.Error(), "2^31-1 slots") {
		t.Errorf("2^31 slots of 16 bytes: err = %v", err)
	}
	if _, err := MLAPool(cfg, tgt("sm_90"), golden.MLAGenOptions{Seed: seed}, MaxPoolBytes+1); err == nil || !strings.Contains(err.Error(), "-pool-gib") {
		t.Errorf("past MaxPoolBytes: err = %v", err)
	}
}

func f32sAsI32(b []byte) []int32 {
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
