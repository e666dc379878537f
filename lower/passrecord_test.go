package lower

import (
	"os"
	"slices"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
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
	walkValues(f.k, func(v *ir.Value) {
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
	if len(rec.pipelines) != 1 || len(rec.notPipelined) != 0 {
		t.Fatalf("%d loops pipelined, %d refusals %v; want 1 and none", len(rec.pipelines), len(rec.notPipelined), rec.notPipelined)
	}
	for loop, p := range rec.pipelines {
		if loop.Kind != ir.OpFor || p.stages != 2 || len(p.tiles) != 2 {
			t.Fatalf("pipeline of %s: %d stages, tiles %v; want 2 stages, 2 tiles", loop.Body.Args[0], p.stages, p.tiles)
		}
		for _, tile := range p.tiles {
			if tile.Def.Kind != ir.OpLoad || rec.pipeTile[tile] != p {
				t.Errorf("tile %s: defined by %s, ring %p; want a load of the loop's ring %p", tile, tile.Def.Kind, rec.pipeTile[tile], p)
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
	if len(rec.dotGroups) != 1 || !slices.Equal(rec.dotGroups[s0], []*ir.Op{s0, s1}) {
		t.Errorf("dot groups %v; want one, at %%s0: %%s0 and %%s1", rec.dotGroups)
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
	for name, want := range map[string]rule{"q": {ruleMagic, 7}, "r": {ruleShift, 8}, "h": {ruleShift, 2}} {
		if got := rec.rules[value(t, f, name).Def]; got != want {
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
		if got := rec.copyBytes[v.Def]; got != want {
			t.Errorf("%%%s: %d-byte copies, want %d", name, got, want)
		}
	}
	tg := f.target
	if rec.threads != 128 || rec.ctasPerSM < 1 || rec.ctasPerSM*target.RegThreads(rec.threads)*rec.maxNReg > tg.RegsPerSM {
		t.Errorf("%d CTAs of %d threads at %d registers exceed the SM's %d", rec.ctasPerSM, rec.threads, rec.maxNReg, tg.RegsPerSM)
	}
	if more := rec.maxNReg/8*8 + 8; more <= target.MaxRegBudget && rec.ctasPerSM*target.RegThreads(rec.threads)*more <= tg.RegsPerSM {
		t.Errorf(".maxnreg %d: %d would keep the %d CTAs per SM too", rec.maxNReg, more, rec.ctasPerSM)
	}
}
