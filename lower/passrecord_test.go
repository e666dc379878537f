package lower

import (
	"os"
	"slices"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/target"
)

// Each pass run alone: the passes before it prepare a kernel parsed from text,
// then the pass itself returns its record, which the test reads.

// beforePass parses src and runs the passes before pass on it (sm_90).
func beforePass(t *testing.T, src, pass string) *fn {
	t.Helper()
	k, err := ir.Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := newFn(k, target.MustLookup("sm_90"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range Passes {
		if p.Name == pass {
			return f
		}
		if err := p.run(f); err != nil {
			t.Fatalf("%s: %v", p.Name, err)
		}
	}
	t.Fatalf("no pass %q", pass)
	return nil
}

// value is the value of f's kernel named name.
func value(t *testing.T, f *fn, name string) *ir.Value {
	t.Helper()
	var found *ir.Value
	ir.WalkValues(f.Kernel, func(v *ir.Value) {
		if v.Name == name {
			found = v
		}
	})
	if found == nil {
		t.Fatalf("no value %%%s", name)
	}
	return found
}

// onePaddedDot is a 17x33 by 33x9 dot, which legalize pads to 32x48 by 48x16,
// and a row maximum of its result.
const onePaddedDot = `kernel one_padded_dot(%a: ptr<bf16> div 16 bytes 1360, %b: ptr<bf16> div 16 bytes 1056, %o: ptr<f32> div 4 bytes 68) grid(1, 1, 1) warps 1 {
  %i = iota : tile<17xi32>
  %ri = cast %i : tile<17xi64>
  %c40 = const 40 : i64
  %ra = mul %ri, %c40 : tile<17xi64>
  %z = const 0 : i64
  %at = load %a[%ra, %z] : tile<17x33xbf16>
  %j = iota : tile<33xi32>
  %rj = cast %j : tile<33xi64>
  %c16 = const 16 : i64
  %rb = mul %rj, %c16 : tile<33xi64>
  %bt = load %b[%rb, %z] : tile<33x9xbf16>
  %acc = const 0.0 : tile<17x9xf32>
  %s = dot %at, %bt, %acc : tile<17x9xf32>
  %mx = reduce max %s, 1 : tile<17xf32>
  store %o[%ri], %mx
}
`

// TestLegalizeRecord: the record keeps the shapes from before the padding, which
// the kernel's types no longer show.
func TestLegalizeRecord(t *testing.T) {
	f := beforePass(t, onePaddedDot, "legalize")
	rec, err := legalize(f)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][2][]int{"at": {{17, 33}, {32, 48}}, "bt": {{33, 9}, {48, 16}}, "s": {{17, 9}, {32, 16}}} {
		v := value(t, f, name)
		if got := rec.logical[v]; !slices.Equal(got, want[0]) || !slices.Equal(v.Type.Shape, want[1]) {
			t.Errorf("%%%s: logical %v, padded %v; want %v padded to %v", name, got, v.Type.Shape, want[0], want[1])
		}
	}
}

// TestRowReduceRecord: the reduction's operand, the dot's result and, through
// it, its accumulator are row-reduced; the dot's operands are not.
func TestRowReduceRecord(t *testing.T) {
	f := beforePass(t, onePaddedDot, "rowreduce")
	rec := markRowReduced(f)
	for name, want := range map[string]bool{"s": true, "acc": true, "at": false, "bt": false} {
		if got := rec[value(t, f, name)]; got != want {
			t.Errorf("%%%s row-reduced: %v, want %v", name, got, want)
		}
	}
	// The one other tile marked is the reduction's operand: the select that
	// legalize put before it, which masks the padded columns.
	mx := value(t, f, "mx").Def.Args[0]
	if len(rec) != 3 || !rec[mx] || mx.Def.Kind != ir.OpSelect {
		t.Errorf("record marks %d tiles, %s (%s) among them: %v; want %%s, %%acc and the masking select", len(rec), mx, mx.Def.Kind, rec)
	}
}

// TestPipelineRecord: of the 2-stage GEMM loop, both operand loads are issued
// ahead, and no load is refused.
func TestPipelineRecord(t *testing.T) {
	src, err := os.ReadFile("testdata/codegen/pipeline_gemm_s2.ir")
	if err != nil {
		t.Fatal(err)
	}
	f := beforePass(t, string(src), "pipeline")
	rec := pipelineLoops(f)
	if len(rec.Pipelines) != 1 || len(rec.NotPipelined) != 0 {
		t.Fatalf("%d loops pipelined, %d refusals %v; want 1 and none", len(rec.Pipelines), len(rec.NotPipelined), rec.NotPipelined)
	}
	for loop, p := range rec.Pipelines {
		if loop.Kind != ir.OpFor || p.Stages != 2 || len(p.Tiles) != 2 {
			t.Fatalf("pipeline of %s: %d stages, tiles %v; want 2 stages, 2 tiles", loop.Body.Args[0], p.Stages, p.Tiles)
		}
		for _, tile := range p.Tiles {
			if tile.Def.Kind != ir.OpLoad || rec.ByTile[tile] != p {
				t.Errorf("tile %s: defined by %s, ring %p; want a load of the loop's ring %p", tile, tile.Def.Kind, rec.ByTile[tile], p)
			}
		}
	}
}

// TestScheduleRecord: two dots sharing their A operand form one group; the
// stores after them are in none.
func TestScheduleRecord(t *testing.T) {
	f := beforePass(t, `kernel two_slices(%a: ptr<bf16> div 16 bytes 8192, %b: ptr<bf16> div 16 bytes 16384, %o: ptr<f32> div 16 bytes 32768) grid(1, 1, 1) warps 16 {
  %i = iota : tile<64xi32>
  %ri = cast %i : tile<64xi64>
  %c64 = const 64 : i64
  %c128 = const 128 : i64
  %ra = mul %ri, %c64 : tile<64xi64>
  %rb = mul %ri, %c128 : tile<64xi64>
  %z = const 0 : i64
  %at = load %a[%ra, %z] : tile<64x64xbf16>
  %b0 = load %b[%rb, %z] : tile<64x64xbf16>
  %b1 = load %b[%rb, %c64] : tile<64x64xbf16>
  %acc = const 0.0 : tile<64x64xf32>
  %s0 = dot %at, %b0, %acc : tile<64x64xf32>
  %s1 = dot %at, %b1, %acc : tile<64x64xf32>
  store %o[%rb, %z], %s0
  store %o[%rb, %c64], %s1
}
`, "schedule")
	rec := scheduleDots(f)
	s0, s1 := value(t, f, "s0").Def, value(t, f, "s1").Def
	if len(rec.DotGroups) != 1 || !slices.Equal(rec.DotGroups[s0], []*ir.Op{s0, s1}) {
		t.Errorf("dot groups %v; want one, at %%s0: %%s0 and %%s1", rec.DotGroups)
	}
}

// TestSimplifyRecord: div_const's divisions by IR constants get their rules.
func TestSimplifyRecord(t *testing.T) {
	src, err := os.ReadFile("testdata/codegen/div_const.ir")
	if err != nil {
		t.Fatal(err)
	}
	f := beforePass(t, string(src), "simplify")
	rec := simplifyOps(f)
	for name, want := range map[string]decision.Rule{"q": {Kind: decision.RuleMagic, Value: 7}, "r": {Kind: decision.RuleShift, Value: 8}, "h": {Kind: decision.RuleShift, Value: 2}} {
		if got := rec.Rules[value(t, f, name).Def]; got != want {
			t.Errorf("%%%s: rule %v, want %v", name, got, want)
		}
	}
}

// threeAlignments loads tiles whose rows start 80, 12 and 6 bytes apart: 16-byte,
// 4-byte and element copies.
const threeAlignments = `kernel three_alignments(%a: ptr<bf16> div 16 bytes 4096, %o: ptr<bf16> div 16 bytes 4096) grid(1, 1, 1) warps 4 {
  %i = iota : tile<16xi32>
  %ri = cast %i : tile<16xi64>
  %z = const 0 : i64
  %c40 = const 40 : i64
  %r40 = mul %ri, %c40 : tile<16xi64>
  %wide = load %a[%r40, %z] : tile<16x16xbf16>
  %c6 = const 6 : i64
  %r6 = mul %ri, %c6 : tile<16xi64>
  %four = load %a[%r6, %z] : tile<16x2xbf16>
  %c3 = const 3 : i64
  %r3 = mul %ri, %c3 : tile<16xi64>
  %narrow = load %a[%r3, %z] : tile<16x2xbf16>
  store %o[%r40, %z], %wide
  store %o[%r6, %z], %four
  store %o[%r3, %z], %narrow
}
`

// TestBudgetRecord: the budget pass gives each copy into shared memory the widest
// chunk its rows' alignment allows, and the largest register budget (a multiple of
// 8, or the most .maxnreg accepts) that keeps its CTAs per SM resident.
func TestBudgetRecord(t *testing.T) {
	f := beforePass(t, threeAlignments, "budget")
	rec := decideBudget(f)
	for name, want := range map[string]int{"wide": 16, "four": 4, "narrow": 2} {
		v := value(t, f, name)
		if got := rec.CopyBytes[v.Def]; got != want {
			t.Errorf("%%%s: %d-byte copies, want %d", name, got, want)
		}
	}
	tg := f.Target
	if rec.Threads != 128 || rec.CTAsPerSM < 1 || rec.CTAsPerSM*target.RegThreads(rec.Threads)*rec.MaxNReg > tg.RegsPerSM {
		t.Errorf("%d CTAs of %d threads at %d registers exceed the SM's %d", rec.CTAsPerSM, rec.Threads, rec.MaxNReg, tg.RegsPerSM)
	}
	if more := rec.MaxNReg/8*8 + 8; more <= target.MaxRegBudget && rec.CTAsPerSM*target.RegThreads(rec.Threads)*more <= tg.RegsPerSM {
		t.Errorf(".maxnreg %d: %d would keep the %d CTAs per SM too", rec.MaxNReg, more, rec.CTAsPerSM)
	}
}

// stagedOperands dots a tile converted from f32 (recomputed, so staged as A) with
// a loaded B (already in shared memory), and stores the result transposed (its
// fragments staged as the transpose's source).
const stagedOperands = `kernel staged_operands(%a: ptr<f32> div 16 bytes 4096, %b: ptr<bf16> div 16 bytes 2048, %o: ptr<f32> div 16 bytes 4096) grid(1, 1, 1) warps 4 {
  %i = iota : tile<32xi32>
  %ri = cast %i : tile<32xi64>
  %c32 = const 32 : i64
  %r = mul %ri, %c32 : tile<32xi64>
  %z = const 0 : i64
  %af = load %a[%r, %z] : tile<32x32xf32>
  %ab = cast %af : tile<32x32xbf16>
  %bt = load %b[%r, %z] : tile<32x32xbf16>
  %acc = const 0.0 : tile<32x32xf32>
  %s = dot %ab, %bt, %acc : tile<32x32xf32>
  %st = trans %s : tile<32x32xf32>
  store %o[%r, %z], %st
}
`

// TestStageRecord: the recomputed A operand and the transposed fragments get
// shared homes; the loaded tiles, in shared memory already, do not.
func TestStageRecord(t *testing.T) {
	f := beforePass(t, stagedOperands, "stage")
	if err := stageTiles(f); err != nil {
		t.Fatal(err)
	}
	rec := f.StageRecord
	for name, want := range map[string]bool{"ab": true, "s": true, "af": false, "bt": false, "st": false} {
		if _, got := rec.Staged[value(t, f, name)]; got != want {
			t.Errorf("%%%s staged: %v, want %v", name, got, want)
		}
	}
	if len(rec.Staged) != 2 {
		t.Errorf("%d tiles staged, want 2: %v", len(rec.Staged), rec.Staged)
	}
}

// TestLayoutRecord: in split_dot's launch (not latency-bound, 4 warps, one row
// group), the score chain %17 -> %23 is split along its reduction over the 4
// warps, %17 stays a per-warp partial sum, and every warp holds the whole score
// tile; P·V (%31) is not split. With noSplitK (smem's feedback) nothing is.
func TestLayoutRecord(t *testing.T) {
	src, err := os.ReadFile("testdata/codegen/split_dot.ir")
	if err != nil {
		t.Fatal(err)
	}
	f := beforePass(t, string(src), "layout")
	if err := assignLayouts(f); err != nil {
		t.Fatal(err)
	}
	rec := f.LayoutRecord
	s17, s23, s31 := value(t, f, "17"), value(t, f, "23"), value(t, f, "31")
	if rec.SplitK[s17.Def] != 4 || rec.SplitK[s23.Def] != 4 || len(rec.SplitK) != 2 {
		t.Errorf("splitK %v; want %%17 and %%23 over 4 warps", rec.SplitK)
	}
	if !rec.SplitPartial[s17] || rec.SplitPartial[s23] || len(rec.SplitPartial) != 1 {
		t.Errorf("SplitPartial %v; want %%17 only", rec.SplitPartial)
	}
	if l := rec.Layouts[s23]; l != (decision.Layout{Kind: decision.Acc, WM: 1, WN: 1, Rep: 4}) {
		t.Errorf("%%23 in %v; want mma fragments replicated 4 times", l)
	}
	if l := rec.Layouts[s31]; l.Kind != decision.Acc || l.Rep != 0 || l.WM*l.WN != 4 {
		t.Errorf("%%31 in %v; want mma fragments split over the 4 warps", l)
	}
	f.noSplitK = true
	if err := assignLayouts(f); err != nil {
		t.Fatal(err)
	}
	if len(f.SplitK) != 0 || len(f.SplitPartial) != 0 || f.Layouts[s23].Rep != 0 {
		t.Errorf("with noSplitK: splitK %v, SplitPartial %v, %%23 in %v; want no split and no replication", f.SplitK, f.SplitPartial, f.Layouts[s23])
	}
}

// TestRolesRecord: the warp-specialized matmul's loop hands its two chunk tiles
// (a's copy and b's dequantized tile) from the load role to the mma role through
// one ring of its 2 stages; the loop's carried sum and result are the mma
// role's, which computes what the loop yields (valueRoles, before any pass).
func TestRolesRecord(t *testing.T) {
	k, err := rolesMatmul(rolesCase{16, 64, 128, 32, 2, 1, 1, false}).Finish()
	if err != nil {
		t.Fatal(err)
	}
	f := beforePass(t, ir.Print(k), "roles")
	rec, err := assignRoles(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Handoffs) != 1 {
		t.Fatalf("%d rings, want 1", len(rec.Handoffs))
	}
	for loop, p := range rec.Handoffs {
		if p.Loop != loop || p.Producer != "load" || p.Consumer != "mma" || p.Stages != 2 || len(p.Tiles) != 2 {
			t.Fatalf("ring from %q to %q, %d stages, tiles %v; want load to mma, 2 stages, 2 tiles", p.Producer, p.Consumer, p.Stages, p.Tiles)
		}
		dot := loop.Body.Yield[0].Def
		for i, tile := range p.Tiles {
			if ir.StorageOf(dot.Args[i]) != tile || rec.HandoffTile[tile] != p || f.ValueRole(tile) != "load" {
				t.Errorf("ring tile %d: %s (role %q, ring %p); want the dot's operand %s of role load in ring %p", i, tile, f.ValueRole(tile), rec.HandoffTile[tile], dot.Args[i], p)
			}
		}
		if r := f.RoleOf[loop.Results[0]]; r != "mma" || f.RoleOf[loop.Body.Args[1]] != "mma" {
			t.Errorf("the loop's carried sum is role %q, its result %q; want mma", f.RoleOf[loop.Body.Args[1]], r)
		}
	}
}

// TestSmemRecord: in split_dot, the score chain's all-reduce has its scratch
// (4 warps' f32 partials of the 16x32 tile) at the chain's last dot only; q's
// tiles, which a dot reads through ldmatrix, get the odd pitch (144 bytes for
// 128-byte rows); a transpose is a view of its source's placed home; and
// layout's record keeps its homes unplaced.
func TestSmemRecord(t *testing.T) {
	src, err := os.ReadFile("testdata/codegen/split_dot.ir")
	if err != nil {
		t.Fatal(err)
	}
	f := beforePass(t, string(src), "smem")
	if err := f.allocShared(); err != nil {
		t.Fatal(err)
	}
	rec := f.SmemRecord
	s17, s23 := value(t, f, "17"), value(t, f, "23")
	if _, ok := rec.Scratch[s17]; ok || len(rec.Scratch) != 1 {
		t.Errorf("scratch %v; want %%23's only", rec.Scratch)
	}
	if off, ok := rec.Scratch[s23]; !ok || off%128 != 0 || off+4*16*32*4 > rec.SmemBytes {
		t.Errorf("%%23's scratch at %d (present %v) in %d bytes; want 8192 bytes, 128-byte aligned, inside", off, ok, rec.SmemBytes)
	}
	q, k, kt := value(t, f, "13"), value(t, f, "15"), value(t, f, "16")
	if h := rec.Homes[q]; h.Kind != decision.Shared || h.Pitch != 144 {
		t.Errorf("%%13's home %v; want pitch 144", h)
	}
	if h, v := rec.Homes[k], rec.Homes[kt]; v.Offset != h.Offset || v.Pitch != h.Pitch || v.Trans == h.Trans {
		t.Errorf("transpose %%16 at %v; want a view of %%15 at %v", v, h)
	}
	if l := f.Layouts[q]; l.Pitch != 0 || l.Offset != 0 {
		t.Errorf("layout's record of %%13 changed to %v", l)
	}
	if f.Placed(q) != rec.Homes[q] {
		t.Errorf("placed(%%13) = %v, want the home %v", f.Placed(q), rec.Homes[q])
	}
}

// TestSmemRingRecord: the 2-stage GEMM loop's ring has each slot hold both
// operand tiles (each 128-byte aligned), and the allocation holds both slots.
func TestSmemRingRecord(t *testing.T) {
	src, err := os.ReadFile("testdata/codegen/pipeline_gemm_s2.ir")
	if err != nil {
		t.Fatal(err)
	}
	f := beforePass(t, string(src), "smem")
	if err := f.allocShared(); err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Pipeline.Pipelines {
		slot := 0
		for _, tile := range p.Tiles {
			h := f.Homes[tile]
			slot = roundUp(slot, 128) + h.Pitch*tile.Type.Shape[0]
		}
		if got := f.SlotBytes[p]; got != roundUp(slot, 128) || slot == 0 || f.SmemBytes < p.Stages*got {
			t.Errorf("ring of %d tiles: %d bytes a slot, %d in all; want %d a slot and room for %d slots", len(p.Tiles), got, f.SmemBytes, roundUp(slot, 128), p.Stages)
		}
	}
	if len(f.SlotBytes) != 1 {
		t.Errorf("%d rings placed, want 1", len(f.SlotBytes))
	}
}

// TestLayoutAgain: where split_dot's all-reduce scratch costs the fit (a target
// whose shared memory holds the kernel only without it), smem sends the
// compilation back to layout with noSplitK, and the PTX is that of a
// compilation laid out with noSplitK from the start.
func TestLayoutAgain(t *testing.T) {
	src, err := os.ReadFile("testdata/codegen/split_dot.ir")
	if err != nil {
		t.Fatal(err)
	}
	k, err := ir.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	tg := target.MustLookup("sm_90")
	unsplit := func(tg target.Target, after string) *fn {
		f, err := newFn(k, tg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		f.noSplitK = true
		if _, err := f.run(k, Options{After: after}); err != nil {
			t.Fatal(err)
		}
		return f
	}
	split, _, err := compile(k, tg, Options{After: "smem"}, false)
	if err != nil {
		t.Fatal(err)
	}
	without := unsplit(tg, "smem").SmemBytes
	if len(split.SplitK) == 0 || without >= split.SmemBytes {
		t.Fatalf("split_dot splits %d dots in %d bytes, %d without; want a split whose scratch costs bytes", len(split.SplitK), split.SmemBytes, without)
	}
	tg.MaxSharedPerBlock = without
	f, res, err := compile(k, tg, Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.SplitK) != 0 || !f.noSplitK {
		t.Errorf("after the feedback: %d dots split, noSplitK %v; want none split", len(f.SplitK), f.noSplitK)
	}
	if got, want := res.Kernel.Module.Print(), unsplit(tg, "").out.Module.Print(); got != want {
		t.Errorf("PTX after the feedback differs from a compilation without the split from the start")
	}
}
