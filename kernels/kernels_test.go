package kernels_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ptxgen/ptxgen/internal/ptxas"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/mla"
	"github.com/ptxgen/ptxgen/plan"
	"github.com/ptxgen/ptxgen/target"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// goldenGEMM is the fixed set of gemm configurations whose PTX is pinned: the
// padding cases of the foundation issue plus an aligned one and an f32 output.
var goldenGEMM = []kernels.GEMMConfig{
	{M: 1, N: 1, K: 1, Out: ir.BF16},
	{M: 17, N: 9, K: 33, Out: ir.BF16},
	{M: 100, N: 72, K: 448, Out: ir.BF16},
	{M: 128, N: 128, K: 512, Out: ir.F32},
}

var goldenTargets = []string{"sm_80", "sm_90", "sm_120"}

func gemmName(c kernels.GEMMConfig, target string) string {
	return fmt.Sprintf("gemm_%dx%dx%d_%s_%s", c.M, c.N, c.K, c.Out, target)
}

func compileGEMM(t *testing.T, c kernels.GEMMConfig, tname string) string {
	t.Helper()
	k, err := kernels.GEMM(c)
	if err != nil {
		t.Fatal(err)
	}
	res, err := lower.Compile(k, target.MustLookup(tname), lower.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return res.Kernel.Module.Print()
}

// goldenMLA pins mla_decode PTX: the DeepSeek-V4-Flash default (split for each
// target's SM count), a small padded head count with one segment and no split,
// and a bf16 cache of an odd width.
var goldenMLA = []struct {
	name string
	cfg  kernels.MLAConfig
}{
	{"mla_default", mlaDefault()},
	{"mla_h8_k63_page53_unsplit", kernels.MLAConfig{Shape: mla.Shape{T: 3, H: 8, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true, Segments: []mla.Segment{{K: 63, PageSize: 53, HasLen: true}}}, Split: 1}},
	{"mla_bf16_200x40", kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 24, Nope: 200, Rope: 40, Cache: mla.CacheBF16, Segments: []mla.Segment{{K: 100, PageSize: 2}, {K: 64, PageSize: 256, HasLen: true}}}}},
}

func mlaDefault() kernels.MLAConfig {
	return kernels.MLAConfig{Shape: mla.Shape{T: 1, H: 64, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true, Segments: []mla.Segment{{K: 128, PageSize: 64, HasLen: true}, {K: 512, PageSize: 64, HasLen: true}}}}
}

// compileMLA is the PTX of what a call of c.T rows runs (dump -tokens T).
func compileMLA(t *testing.T, c kernels.MLAConfig, tname string) string {
	t.Helper()
	tg := target.MustLookup(tname)
	p, _, err := kernels.MLACall(c, tg)
	if err != nil {
		t.Fatal(err)
	}
	comp, err := lower.CompileProgram(p.Program, p.Sequences(), tg)
	if err != nil {
		t.Fatal(err)
	}
	return comp.Module.Print()
}

// goldenCases lists every pinned configuration as (file name, PTX generator).
func goldenCases() []struct {
	name string
	gen  func(t *testing.T) string
} {
	var out []struct {
		name string
		gen  func(t *testing.T) string
	}
	for _, target := range goldenTargets {
		for _, c := range goldenGEMM {
			out = append(out, struct {
				name string
				gen  func(t *testing.T) string
			}{gemmName(c, target), func(t *testing.T) string { return compileGEMM(t, c, target) }})
		}
		for _, m := range goldenMLA {
			out = append(out, struct {
				name string
				gen  func(t *testing.T) string
			}{m.name + "_" + target, func(t *testing.T) string { return compileMLA(t, m.cfg, target) }})
		}
	}
	return out
}

func TestGoldenPTX(t *testing.T) {
	for _, gc := range goldenCases() {
		{
			name := gc.name
			t.Run(name, func(t *testing.T) {
				got := gc.gen(t)
				path := filepath.Join("testdata", name+".ptx")
				if *update {
					if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				want, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./kernels -update to create it)", err)
				}
				if d := cmp.Diff(string(want), got); d != "" {
					t.Errorf("PTX differs from %s (-want +got); if intended, run go test ./kernels -update:\n%s", path, d)
				}
			})
		}
	}
}

// TestCodegenMLA: the default decode uses bf16 mma.sync, 16-byte cp.async
// gathers, ldmatrix, and no local memory, on every target; fp8 dequantization
// converts e4m3 in hardware where the target has it.
func TestCodegenMLA(t *testing.T) {
	for _, target := range target.TargetNames() {
		got := compileMLA(t, mlaDefault(), target)
		for _, s := range []string{
			"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
			"cp.async.cg.shared.global",
			"ldmatrix.sync.aligned.m8n8.x4.shared.b16",
			"ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
			".entry mla_decode_h16_split_small(", ".entry mla_combine_20(",
			"ex2.approx.f32",
		} {
			if !strings.Contains(got, s) {
				t.Errorf("%s: missing %q", target, s)
			}
		}
		if strings.Contains(got, ".local") {
			t.Errorf("%s: uses local memory", target)
		}
		hw := strings.Contains(got, "cvt.rn.f16x2.e4m3x2")
		if want := target != "sm_80" && target != "sm_86"; hw != want {
			t.Errorf("%s: hardware e4m3 conversion = %v, want %v", target, hw, want)
		}
	}
}

// TestCodegen asserts properties of the PTX that survive cosmetic changes.
func TestCodegen(t *testing.T) {
	versions := map[string]string{"sm_80": "7.0", "sm_86": "7.1", "sm_89": "7.8", "sm_90": "7.8", "sm_120": "8.7"}
	for _, c := range goldenGEMM {
		for target, version := range versions {
			got := compileGEMM(t, c, target)
			name := gemmName(c, target)
			must := []string{
				"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32",
				".version " + version + "\n",
				".target " + target + "\n",
				"ldmatrix.sync.aligned.m8n8.x4.shared.b16",
				"bra.uni",
			}
			for _, s := range must {
				if !strings.Contains(got, s) {
					t.Errorf("%s: missing %q", name, s)
				}
			}
			for _, re := range []string{`\.local`, `ld\.local`, `st\.local`, `(?m)^\s*(add|sub|mul|fma)\.f32`} {
				if regexp.MustCompile(re).MatchString(got) {
					t.Errorf("%s: must not match %q (float math needs an explicit rounding mode, and nothing may use local memory)", name, re)
				}
			}
		}
	}
	// Tiles whose rows are 16-byte aligned are gathered with 16-byte cp.async.
	if got := compileGEMM(t, kernels.GEMMConfig{M: 100, N: 72, K: 448, Out: ir.BF16}, "sm_90"); !strings.Contains(got, "cp.async.cg.shared.global") {
		t.Errorf("gemm 100x72x448: want 16-byte cp.async.cg gathers")
	}
}

// TestPaddingIsGranular checks that legalization pads to the mma granule, never to a
// power of two: 17 rows become 32 (two m16 tiles), 9 columns 16 (two n8 tiles), 448
// stays 448.
func TestPaddingIsGranular(t *testing.T) {
	k, err := kernels.GEMM(kernels.GEMMConfig{M: 17, N: 9, K: 33, Out: ir.BF16})
	if err != nil {
		t.Fatal(err)
	}
	res, err := lower.Compile(k, target.MustLookup("sm_90"), lower.Options{After: "legalize"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"tile<32x16xf32>  // logical 17x9", "tile<32x32xbf16>  // logical 17x32", "tile<32x16xbf16>  // logical 32x9"} {
		if !strings.Contains(res.Dump, s) {
			t.Errorf("legalize dump lacks %q:\n%s", s, res.Dump)
		}
	}
	k, _ = kernels.GEMM(kernels.GEMMConfig{M: 100, N: 72, K: 448, Out: ir.BF16})
	res, err = lower.Compile(k, target.MustLookup("sm_90"), lower.Options{After: "legalize"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(res.Dump, "logical") {
		t.Errorf("100x72x448 needs no padding (64-row tiles, 72 = 9 n8 tiles, k32 steps), but legalize padded:\n%s", res.Dump)
	}
}

// TestDeterministic: the same kernel compiled twice, and from its parsed IR text,
// gives identical bytes.
func TestDeterministic(t *testing.T) {
	for _, c := range goldenGEMM {
		k, err := kernels.GEMM(c)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := ir.Parse(ir.Print(k))
		if err != nil {
			t.Fatal(err)
		}
		var outs []string
		for _, kk := range []*ir.Kernel{k, k, parsed} {
			res, err := lower.Compile(kk, target.MustLookup("sm_90"), lower.Options{})
			if err != nil {
				t.Fatal(err)
			}
			outs = append(outs, res.Kernel.Module.Print())
		}
		if outs[0] != outs[1] || outs[0] != outs[2] {
			t.Errorf("%v: output differs between compilations", c)
		}
	}
}

// TestPTXAssembles assembles every sm_80 and sm_90 golden with ptxas 11.8: no error,
// no warning, no spill or local memory, and HMMA in the machine code.
func TestPTXAssembles(t *testing.T) {
	ptxas.Require(t)
	files, err := filepath.Glob("testdata/*.ptx")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		arch := ""
		for _, a := range []string{"sm_80", "sm_90"} {
			if strings.HasSuffix(f, "_"+a+".ptx") {
				arch = a
			}
		}
		if arch == "" {
			continue
		}
		n++
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := ptxas.Assemble(string(src), arch)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Warnings) > 0 {
				t.Errorf("ptxas warnings:\n%s", strings.Join(res.Warnings, "\n"))
			}
			if res.SpillStores+res.SpillLoads+res.LocalBytes > 0 {
				t.Errorf("spills %d+%d bytes, local memory %d bytes", res.SpillStores, res.SpillLoads, res.LocalBytes)
			}
			sass, err := ptxas.SASS(res.Cubin)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(sass, "HMMA.16816.F32.BF16") {
				t.Errorf("machine code lacks HMMA.16816.F32.BF16")
			}
		})
	}
	if n == 0 {
		t.Fatal("no sm_80/sm_90 goldens found")
	}
}

// TestAutomaticHeadBlock: a call runs 64 heads per CTA (8 warps, or 16 with Warps64)
// where the target has the shared memory and the CTAs fill the SMs with enough tiles
// each (the plan's measured rule); 16 otherwise, and an explicit choice stands.
func TestAutomaticHeadBlock(t *testing.T) {
	seg := []mla.Segment{{K: 128, PageSize: 64}, {K: 512, PageSize: 64}}
	for _, c := range []struct {
		T, H, hb, w64 int
		target        string
		wantWarps     int
	}{
		{T: 256, H: 64, target: "sm_90", wantWarps: 8},
		{T: 256, H: 64, w64: 16, target: "sm_90", wantWarps: 16},
		{T: 256, H: 64, target: "sm_80", wantWarps: 8},
		{T: 256, H: 64, target: "sm_120", wantWarps: 8}, // 99 KB per block: the 64-head CTA of computed fragments, rows >= 188 SMs
		{T: 128, H: 64, target: "sm_120", wantWarps: 4}, // 128 rows < 188 SMs: the 16-head CTAs
		{T: 64, H: 64, target: "sm_90", wantWarps: 8},   // split 2: 128 CTAs of 5 64-candidate tiles
		{T: 64, H: 64, target: "sm_80", wantWarps: 4},   // 32-candidate tiles: the rows must fill the SMs
		{T: 8, H: 64, target: "sm_90", wantWarps: 4},    // 1 tile per CTA
		{T: 32, H: 64, target: "sm_90", wantWarps: 8},   // split 4: 3 tiles per CTA
		{T: 8, H: 128, target: "sm_90", wantWarps: 8},   // split 5: 2 tiles per CTA
		{T: 256, H: 16, target: "sm_90", wantWarps: 4},
		{T: 256, H: 64, hb: 16, target: "sm_90", wantWarps: 4},
	} {
		cfg := kernels.MLAConfig{Shape: mla.Shape{T: c.T, H: c.H, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: seg}, HeadBlock: c.hb, Warps64: c.w64}
		p, _, err := kernels.MLACall(cfg, target.MustLookup(c.target))
		if err != nil {
			t.Fatal(err)
		}
		if got := p.Kernels[0].Warps; got != c.wantWarps {
			t.Errorf("T=%d H=%d head-block=%d %s: %d warps per CTA, want %d", c.T, c.H, c.hb, c.target, got, c.wantWarps)
		}
	}
}

// TestWideCTAWarpRules: a 64-head CTA of 8 warps (255 registers) computes its
// scores on a score role of 4 warps in 2x2 quadrants of 32 heads x 32 candidates
// (the grid reading the fewest operand bytes), and
// with the scores on all 8 (-score-warps 8) splits them over the two warps of
// each row group even where the launch is latency-bound (replication lost 6-11%
// there); either way its P·V is split 2x4 by shared-memory traffic, emitted as
// one dot group (one dot at a time, ptxas spilled 48-72 bytes: lower/schedule.go
// groupHoldsLess); with 16 warps (128 registers) P·V stays one dot group. The
// rules read the same H=64, T=64 decode (split 2: 128 CTAs, a latency-bound
// launch on 132 SMs), lowered as latency-bound: the dots' schedules as dump -ir
// states them, the dot groups from the schedule pass's dump.
func TestWideCTAWarpRules(t *testing.T) {
	seg := []mla.Segment{{K: 128, PageSize: 64}, {K: 512, PageSize: 64}}
	dump := func(w64, score int, after string) string {
		t.Helper()
		cfg := kernels.MLAConfig{Shape: mla.Shape{T: 64, H: 64, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: seg}, Warps64: w64, ScoreWarps: score}
		p, _, err := kernels.MLACall(cfg, target.MustLookup("sm_90"))
		if err != nil {
			t.Fatal(err)
		}
		k := *p.Kernels[0]
		k.Latency = ir.LatencySmall
		res, err := lower.Compile(&k, target.MustLookup("sm_90"), lower.Options{After: after})
		if err != nil {
			t.Fatal(err)
		}
		return res.Dump
	}
	for _, c := range []struct {
		score       int
		role        string
		scores, pvs [2]int
	}{{0, "score", [2]int{2, 2}, [2]int{2, 4}}, {8, "", [2]int{4, 2}, [2]int{2, 4}}} {
		if got := dotGrids(t, c.score); len(got) != 2 || got["q·k on "+c.role] != c.scores || got["P·V"] != c.pvs {
			t.Errorf("8-warp 64-head CTA, -score-warps %d: the lowering's schedules %v; want q·k on role %q split %v, never replicated, and P·V %v (by shared-memory traffic)", c.score, got, c.role, c.scores, c.pvs)
		}
	}
	for _, score := range []int{0, 8} {
		if d := dump(8, score, "schedule"); !strings.Contains(d, "dot group") {
			t.Errorf("8-warp 64-head CTA, -score-warps %d: want P·V as one dot group (split 2x4, a group holds fewer fragments); schedule dump:\n%s", score, firstLines(d, "= dot", 3))
		}
	}
	if d := dump(16, 0, "schedule"); !strings.Contains(d, "dot group") {
		t.Errorf("16-warp 64-head CTA: want P·V as one dot group; schedule dump:\n%s", firstLines(d, "= dot", 3))
	}
}

// dotGrids are the warp grids the lowering gives the 8-warp 64-head CTA's dots
// (H=64, T=64, -score-warps score), as dump -ir states them: "q·k on ROLE" for the
// scores, "P·V" for the rest; a replicated or split-K dot is named as such.
func dotGrids(t *testing.T, score int) map[string][2]int {
	t.Helper()
	seg := []mla.Segment{{K: 128, PageSize: 64}, {K: 512, PageSize: 64}}
	cfg := kernels.MLAConfig{Shape: mla.Shape{T: 64, H: 64, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: seg}, Warps64: 8, ScoreWarps: score}
	tg := target.MustLookup("sm_90")
	p, _, err := kernels.MLACall(cfg, tg)
	if err != nil {
		t.Fatal(err)
	}
	latencyBound := *p.Kernels[0]
	latencyBound.Latency = ir.LatencySmall
	k, err := lower.FillSchedule(&latencyBound, tg)
	if err != nil {
		t.Fatal(err)
	}
	grids := map[string][2]int{}
	var walk func(b *ir.Block)
	walk = func(b *ir.Block) {
		for _, o := range b.Ops {
			if o.Body != nil {
				walk(o.Body)
			}
			if o.Kind != ir.OpDot {
				continue
			}
			name := "P·V"
			if d := o.Args[1].Def; d != nil && d.Kind == ir.OpTrans {
				name = "q·k on " + o.Role
			}
			if o.Dot.Replicate > 1 || o.Dot.SplitK > 0 {
				name += " " + o.Dot.String()
			}
			grids[name] = o.Dot.Warps
		}
	}
	walk(k.Body)
	return grids
}

// TestReplicableMatchesLowering: the plan generates Small kernels exactly for the
// head blocks whose PTX the lowering changes when launches are latency-bound (the
// plan asks lower.Measure whether the Small kernel replicates its score tiles).
func TestReplicableMatchesLowering(t *testing.T) {
	seg := []mla.Segment{{K: 128, PageSize: 64}, {K: 512, PageSize: 64}}
	for _, hb := range []int{16, 32, 64} {
		cfg := kernels.MLAConfig{Shape: mla.Shape{T: 8, H: 64, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: seg}, HeadBlock: hb}
		p, err := kernels.MLA(cfg, target.MustLookup("sm_90"))
		if err != nil {
			t.Fatal(err)
		}
		f := p.Rule.Families[0]
		var direct *ir.Kernel
		for _, k := range p.Kernels {
			if k.Name == f.Direct {
				direct = k
			}
		}
		ptxOf := func(l ir.Latency) string {
			k := *direct
			k.Latency = l
			res, err := lower.Compile(&k, target.MustLookup("sm_90"), lower.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return res.Kernel.Module.Print()
		}
		differs := ptxOf(ir.LatencySmall) != ptxOf(ir.LatencyLarge)
		if hasSmall := f.DirectSmall != ""; hasSmall != differs {
			t.Errorf("head block %d: plan has a Small kernel: %v; latency-bound lowering differs: %v", hb, hasSmall, differs)
		}
	}
}

// firstLines returns the first n lines of s that contain sub.
func firstLines(s, sub string, n int) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) && len(out) < n {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestCombineChunks: each split a call may have gets its own combine, and only those
// (-split 5 over 6 tiles fills 3 chunks of 2, so it runs the 3-chunk combine).
func TestCombineChunks(t *testing.T) {
	seg := []mla.Segment{{K: 100, PageSize: 64, HasLen: true}, {K: 64, PageSize: 2, HasLen: true}}
	for _, c := range []struct {
		T, split, sms int
		want          string // the call's kernels
		all           string // every combine generated
	}{
		// The pipelined 16-head CTAs hold 2 per SM on sm_90: 4 SMs have 8 slots, so 3
		// rows split 2 ways (6 CTAs; 3 ways would be 9) and 1 row all 6 ways.
		{T: 3, sms: 4, want: "mla_decode_h16_split mla_combine_2", all: "mla_combine_2 mla_combine_3 mla_combine_6"},
		{T: 1, sms: 4, want: "mla_decode_h16_split mla_combine_6", all: "mla_combine_2 mla_combine_3 mla_combine_6"},
		{T: 1, want: "mla_decode_h16_split_small mla_combine_6", all: "mla_combine_2 mla_combine_3 mla_combine_6"},
		{T: 3, split: 5, want: "mla_decode_h16_split_small mla_combine_3", all: "mla_combine_3"},
	} {
		cfg := kernels.MLAConfig{Shape: mla.Shape{T: c.T, MaxT: 3, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: seg}, Split: c.split, SMs: c.sms}
		call, _, err := kernels.MLACall(cfg, target.MustLookup("sm_90"))
		if err != nil {
			t.Fatal(err)
		}
		p, err := kernels.MLA(cfg, target.MustLookup("sm_90"))
		if err != nil {
			t.Fatal(err)
		}
		if got, all := kernelNames(call, ""), kernelNames(p, "mla_combine_"); got != c.want || all != c.all {
			t.Errorf("T=%d split=%d sms=%d: runs %q of combines %q; want %q of %q", c.T, c.split, c.sms, got, all, c.want, c.all)
		}
	}
	// 128 + 2048 candidates on sm_90: 68 tiles of 32 for 16-head CTAs (2 per SM) and
	// 34 of 64 for 64-head CTAs (1 per SM); a lone row splits 34 ways (64 capped,
	// filled: 2 tiles a chunk).
	cfg := kernels.MLAConfig{Shape: mla.Shape{T: 1, H: 64, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: []mla.Segment{{K: 128, PageSize: 64}, {K: 2048, PageSize: 64}}}}
	p, err := kernels.MLA(cfg, target.MustLookup("sm_90"))
	if err != nil {
		t.Fatal(err)
	}
	want := "mla_combine_2 mla_combine_3 mla_combine_4 mla_combine_5 mla_combine_6 mla_combine_7 mla_combine_8 mla_combine_9 " +
		"mla_combine_10 mla_combine_12 mla_combine_14 mla_combine_17 mla_combine_23 mla_combine_34"
	if got := kernelNames(p, "mla_combine_"); got != want {
		t.Errorf("K=2176: combines %q, want %q", got, want)
	}
}

// kernelNames lists p's kernels whose names start with prefix.
func kernelNames(p *plan.Program, prefix string) string {
	var names []string
	for _, k := range p.Kernels {
		if strings.HasPrefix(k.Name, prefix) {
			names = append(names, k.Name)
		}
	}
	return strings.Join(names, " ")
}

// -stages fixes every family's ring: one stage where the plan pipelines (16 heads on
// sm_90), two where it does not (the heads-in-N family with -k-frags planned under
// sm_120's 99 KB, which one stage keeps at 2 CTAs per SM); 0 leaves the plan's choice.
func TestStagesOverride(t *testing.T) {
	seg := []mla.Segment{{K: 128, PageSize: 64}, {K: 512, PageSize: 64}}
	sm90 := target.MustLookup("sm_90")
	for _, c := range []struct {
		H, stages int
		kFrags    bool
		t         target.Target
		want      []int // stages per family
	}{
		{H: 16, t: sm90, want: []int{2}},
		{H: 16, stages: 1, t: sm90, want: []int{1}},
		// Under sm_120's limits each family's one stage holds 2 CTAs per SM where two
		// stages hold 1 (the 16-head CTA's loop takes held Q's bytes: 33 KB).
		{H: 8, kFrags: true, t: sm90.WithLimitsOf(target.MustLookup("sm_120")), want: []int{1, 1}},
		{H: 8, kFrags: true, stages: 2, t: sm90.WithLimitsOf(target.MustLookup("sm_120")), want: []int{2, 2}},
	} {
		cfg := kernels.MLAConfig{Shape: mla.Shape{T: 256, H: c.H, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: seg}, KFrags: kfrags(c.kFrags), Stages: c.stages}
		p, err := kernels.MLA(cfg, c.t)
		if err != nil {
			t.Fatal(err)
		}
		var got []int
		for _, f := range p.Rule.Families {
			got = append(got, f.Stages)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("H%d -stages %d -k-frags=%v on %s (planned for %q): stages %v, want %v", c.H, c.stages, c.kFrags, c.t.Name, c.t.PlannedFor, got, c.want)
		}
	}
	cfg := kernels.MLAConfig{Shape: mla.Shape{T: 1, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: seg}, Stages: 3}
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "stages") {
		t.Errorf("-stages 3: %v, want an error naming -stages", err)
	}
}

func kfrags(on bool) kernels.MLAKFrags {
	if on {
		return kernels.KFragsOn
	}
	return kernels.KFragsOff
}

// -k-frags auto (the default) gives the heads-in-N family computed K fragments where
// that adds a CTA per SM (sm_90: 3 against 2 at two stages; sm_120's 99 KB: 2 at one
// stage against 1 at two), and nothing else: not the 16-head family, not sm_80 (no
// e4m3 pair conversion), not with -k-frags=false; true takes it for both.
func TestKFragsAuto(t *testing.T) {
	seg := []mla.Segment{{K: 128, PageSize: 64}, {K: 512, PageSize: 64}}
	sm90 := target.MustLookup("sm_90")
	for _, c := range []struct {
		name   string
		t      target.Target
		kFrags kernels.MLAKFrags
		want   []bool // per family: 16 heads, heads in N
	}{
		{"sm_90", sm90, kernels.KFragsAuto, []bool{false, true}},
		{"sm_90 false", sm90, kernels.KFragsOff, []bool{false, false}},
		{"sm_90 true", sm90, kernels.KFragsOn, []bool{true, true}},
		{"sm_120", target.MustLookup("sm_120"), kernels.KFragsAuto, []bool{false, true}},
		{"sm_90 planned as sm_120", sm90.WithLimitsOf(target.MustLookup("sm_120")), kernels.KFragsAuto, []bool{false, true}},
		{"sm_80", target.MustLookup("sm_80"), kernels.KFragsAuto, []bool{false, false}},
	} {
		cfg := kernels.MLAConfig{Shape: mla.Shape{T: 256, H: 8, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: seg}, KFrags: c.kFrags}
		_, designs, err := kernels.MLADesign(cfg, c.t)
		if err != nil {
			t.Fatal(err)
		}
		var got []bool
		for _, d := range designs {
			got = append(got, d.Variant.KFrags)
		}
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("%s -k-frags=%s: KFrags per family %v, want %v", c.name, c.kFrags, got, c.want)
		}
	}
}

// With -k-frags=true the 16-head CTA's large kernels read K by `b computed`, and its
// Small kernels (replicated scores: every warp would dequantize every dim) keep the
// bf16 tile.
func TestKFragsSmallKernelsKeepTheTile(t *testing.T) {
	seg := []mla.Segment{{K: 128, PageSize: 64}, {K: 512, PageSize: 64}}
	cfg := kernels.MLAConfig{Shape: mla.Shape{T: 1, MaxT: 64, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: seg}, KFrags: kernels.KFragsOn}
	p, err := kernels.MLA(cfg, target.MustLookup("sm_90"))
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, k := range p.Kernels {
		if !strings.HasPrefix(k.Name, "mla_decode_h16") {
			continue
		}
		computed := 0
		var walk func(b *ir.Block)
		walk = func(b *ir.Block) {
			for _, o := range b.Ops {
				if o.Kind == ir.OpDot && o.Dot != nil && o.Dot.BHome == ir.HomeComputed {
					computed++
				}
				if o.Body != nil {
					walk(o.Body)
				}
			}
		}
		walk(k.Body)
		if small := strings.HasSuffix(k.Name, "_small"); small != (computed == 0) {
			t.Errorf("%s: %d dots state b computed", k.Name, computed)
		}
		seen++
	}
	if seen != 4 {
		t.Errorf("%d 16-head kernels, want 4 (direct, split and their Small versions)", seen)
	}
}

// fillCase is a plan of the default segments for a capacity of maxT rows of h heads
// on t, and whether a family of the rows that fill the SMs is wanted in it.
type fillCase struct {
	name    string
	t       target.Target
	h, maxT int
	kFrags  kernels.MLAKFrags
	want    bool
}

func (c fillCase) design(t *testing.T) (*plan.Rule, []kernels.MLAFamilyDesign) {
	t.Helper()
	seg := []mla.Segment{{K: 128, PageSize: 64}, {K: 512, PageSize: 64}}
	cfg := kernels.MLAConfig{Shape: mla.Shape{T: 1, MaxT: c.maxT, H: c.h, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: seg}, KFrags: c.kFrags}
	p, designs, err := kernels.MLADesign(cfg, c.t)
	if err != nil {
		t.Fatal(err)
	}
	return p.Rule, designs
}

// Under sm_120's limits (99 KB) -k-frags auto plans a second 16-head family, its K and
// V fragments computed from the raw ring at 2 CTAs per SM against the tile family's
// 1, for the calls whose rows fill the SMs, and keeps the two-stage tile family, with
// its splits and Small kernels, for the rest. Nowhere else: not on sm_90 (both hold
// 2), not at 8 heads (the heads-in-N family), not with -k-frags given, not when no
// call of the capacity fills the SMs.
func TestFillFamily(t *testing.T) {
	sm90, sm120 := target.MustLookup("sm_90"), target.MustLookup("sm_120")
	planned := sm90.WithLimitsOf(sm120)
	for _, c := range []fillCase{
		{"sm_120 H16", sm120, 16, 256, kernels.KFragsAuto, true},
		{"sm_120 H64", sm120, 64, 64, kernels.KFragsAuto, true},
		{"sm_90 planned as sm_120 H32", planned, 32, 256, kernels.KFragsAuto, true},
		{"sm_120 H16 capacity below the SMs", sm120, 16, sm120.SMs - 1, kernels.KFragsAuto, false},
		{"sm_120 H16 -k-frags=true", sm120, 16, 256, kernels.KFragsOn, false},
		{"sm_120 H16 -k-frags=false", sm120, 16, 256, kernels.KFragsOff, false},
		{"sm_120 H8", sm120, 8, 256, kernels.KFragsAuto, false},
		{"sm_90 H16", sm90, 16, 256, kernels.KFragsAuto, false},
		{"sm_80 H16", target.MustLookup("sm_80"), 16, 256, kernels.KFragsAuto, false},
	} {
		r, designs := c.design(t)
		fill := len(designs) >= 2 && designs[1].Variant.HeadBlock == 16
		if fill != c.want {
			t.Errorf("%s: a second 16-head family %v, want %v (plan %s)", c.name, fill, c.want, describeRule(r))
			continue
		}
		if !fill {
			continue
		}
		f0, f1 := r.Families[0], r.Families[1]
		if !designs[1].Variant.KFrags || designs[0].Variant.KFrags || f1.PerSM <= f0.PerSM || f0.Stages != 2 || f1.Direct != "mla_decode_h16_kf" ||
			f1.Partial != "" || f1.DirectSmall != "" || f0.DirectSmall == "" || f0.Partial == "" {
			t.Errorf("%s: families %v / %+v and %v / %+v", c.name, designs[0].Variant, f0, designs[1].Variant, f1)
		}
		// The rows that fill the SMs run it unsplit; one row fewer runs the tile family.
		sms := c.t.SMs
		fillRows := (sms + f0.HeadBlocks - 1) / f0.HeadBlocks
		for _, rows := range []int{1, fillRows - 1, fillRows, c.maxT} {
			ch, err := r.Choose(rows, sms)
			if err != nil {
				t.Fatalf("%s: %d rows: %v", c.name, rows, err)
			}
			if ch.Family == 2 {
				continue // the 64-head family's calls (TestWideFillFamily)
			}
			if want := rows >= fillRows; (ch.Family == 1) != want || ch.Family == 1 && (ch.Split != 1 || ch.Kernels[0] != f1.Direct) {
				t.Errorf("%s: %d rows on %d SMs: %+v, want the computed-fragment family %v", c.name, rows, sms, ch, want)
			}
		}
	}
}

// Under sm_120's limits, where no 64-head CTA of the bf16 tile fits, -k-frags auto
// plans at 64 heads or more a third family, the 64-head CTA computing its K and V
// fragments (one stage, 32-candidate tiles, within 99 KB), for the calls whose rows
// alone fill the SMs: unsplit, Direct only. The 16-head families keep the rest.
// Not on sm_90 (its 64-head CTA of the bf16 tile fits), not below 64 heads, not with
// -k-frags given, not when no call of the capacity fills the SMs.
func TestWideFillFamily(t *testing.T) {
	sm90, sm120 := target.MustLookup("sm_90"), target.MustLookup("sm_120")
	planned := sm90.WithLimitsOf(sm120)
	for _, c := range []fillCase{
		{"sm_120 H64", sm120, 64, 256, kernels.KFragsAuto, true},
		{"sm_90 planned as sm_120 H64", planned, 64, 256, kernels.KFragsAuto, true},
		{"sm_120 H128", sm120, 128, 256, kernels.KFragsAuto, true},
		{"sm_120 H128 capacity 100 (200 CTAs)", sm120, 128, 100, kernels.KFragsAuto, true},
		{"sm_120 H64 capacity below the SMs", sm120, 64, sm120.SMs - 1, kernels.KFragsAuto, false},
		{"sm_120 H48", sm120, 48, 256, kernels.KFragsAuto, false},
		{"sm_120 H64 -k-frags=true", sm120, 64, 256, kernels.KFragsOn, false},
		{"sm_120 H64 -k-frags=false", sm120, 64, 256, kernels.KFragsOff, false},
		{"sm_90 H64", sm90, 64, 256, kernels.KFragsAuto, false},
	} {
		r, designs := c.design(t)
		wide := len(designs) == 3 && designs[2].Variant.HeadBlock == 64
		if wide != c.want {
			t.Errorf("%s: a 64-head family of computed fragments %v, want %v (plan %s)", c.name, wide, c.want, describeRule(r))
			continue
		}
		if !wide {
			for _, d := range designs {
				if d.Variant.HeadBlock == 64 && d.Variant.KFrags && c.kFrags == kernels.KFragsAuto {
					t.Errorf("%s: family %v computes its fragments", c.name, d.Variant)
				}
			}
			continue
		}
		f1, f2, v := r.Families[1], r.Families[2], designs[2].Variant
		fig := designs[2].Figures[f2.Direct]
		if !v.KFrags || v.Stages != 1 || v.Tile != 32 || f2.Direct != "mla_decode_h64_kf" || f2.Partial != "" || f2.DirectSmall != "" ||
			f1.HeadBlock != 16 || !designs[1].Variant.KFrags || fig.SharedBytes > sm120.MaxSharedPerBlock || fig.SharedBytes == 0 {
			t.Errorf("%s: family 2 %v / %+v (%d bytes), family 1 %v", c.name, v, f2, fig.SharedBytes, designs[1].Variant)
		}
		// From the rows that fill the SMs with its head blocks it runs them unsplit;
		// one row fewer runs the 16-head family of computed fragments.
		sms := c.t.SMs
		wideRows := (sms + f2.HeadBlocks - 1) / f2.HeadBlocks
		for _, rows := range []int{1, wideRows - 1, wideRows, c.maxT} {
			ch, err := r.Choose(rows, sms)
			if err != nil {
				t.Fatalf("%s: %d rows: %v", c.name, rows, err)
			}
			want := rows >= wideRows
			if (ch.Family == 2) != want || want && (ch.Split != 1 || ch.Kernels[0] != f2.Direct) || !want && rows > 1 && ch.Family != 1 {
				t.Errorf("%s: %d rows on %d SMs: %+v, want the 64-head family %v", c.name, rows, sms, ch, want)
			}
		}
	}
}
