package check

import (
	"slices"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/mla"
	"github.com/ptxgen/ptxgen/plan"
	"github.com/ptxgen/ptxgen/ptx"
	arch "github.com/ptxgen/ptxgen/target"
)

// filledDecode is the decode a call of cfg runs on target, and its text form with
// every dot's schedule stated, as dump -ir prints it.
func filledDecode(t *testing.T, cfg kernels.MLAConfig, target arch.Target) (*plan.Program, string) {
	t.Helper()
	prog, _, _, err := kernels.MLACallDesign(cfg, target)
	if err != nil {
		t.Fatal(err)
	}
	filled, err := lower.FillScheduleProgram(prog.Program, target)
	if err != nil {
		t.Fatal(err)
	}
	return prog, ir.PrintProgram(filled)
}

// TestChangedScheduleClause: the decode's text form as dump -ir prints it, with
// a clause changed, compiles to other PTX, which still matches the float64
// reference in the emulator: the score dots computed whole by each of the 4 warps
// (as a latency-bound launch gets them) changed to split by columns over the 4
// warps (and P·V then reading P through shared memory), or with their Q slices
// held in registers across the candidate loop instead of read from shared memory
// in every iteration.
func TestChangedScheduleClause(t *testing.T) {
	cfg := kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true,
		Segments: []mla.Segment{{K: 64, PageSize: 64, HasLen: true}}}}
	target := tgt("sm_90")
	const seed = 7
	prog, text := filledDecode(t, cfg, target)
	const whole = " warps 1x1 replicate 4 a shared atom m16n8k16 :"
	if n := strings.Count(text, whole); n != 8 {
		t.Fatalf("the latency-bound 16-head decode has %d score dots computed whole per warp (%q), want 8 (512 dims in k64 slices)", n, whole)
	}
	const pvFromRegs, pvFromShared = " warps 1x4 a regs atom m16n8k16 :", " warps 1x4 a shared atom m16n8k16 :"
	if n := strings.Count(text, pvFromRegs); n != 16 {
		t.Fatalf("the 16-head decode has %d P·V dots reading P from registers (%q), want 16 (two terms of 8 slices)", n, pvFromRegs)
	}
	for _, changed := range []string{" warps 1x4 atom m16n8k16 :", " warps 1x1 replicate 4 a regs atom m16n8k16 :"} {
		c, err := MLA(cfg, target, golden.MLAGenOptions{Seed: seed, InvalidFrac: 0.1})
		if err != nil {
			t.Fatal(err)
		}
		edited := strings.ReplaceAll(text, whole, changed)
		if !strings.Contains(changed, "replicate") {
			// P split by columns is no longer whole rows of each warp: P·V reads it
			// through shared memory (as `a regs` would be refused, naming P).
			edited = strings.ReplaceAll(edited, pvFromRegs, pvFromShared)
		}
		back, err := ir.ParseProgram(edited)
		if err != nil {
			t.Fatal(err)
		}
		comp, err := lower.CompileProgram(back, prog.Sequences(), target)
		if err != nil {
			t.Fatalf("score dots%s: %v", changed, err)
		}
		if comp.Module.Print() == c.Compiled.Module.Print() {
			t.Fatalf("the score dots%s compile to the PTX of%s", changed, whole)
		}
		c.Compiled = comp
		res, err := Run(Emulator{}, c)
		if err != nil {
			t.Fatalf("seed %d, score dots%s: %v", seed, changed, err)
		}
		if !res.OK() {
			t.Errorf("seed %d, score dots%s: %s", seed, changed, res)
		}
	}
}

// TestHeldQuerySplitK: on one SM the 16-head decode's launch is not latency-bound
// and its score dots split the reduction over the 4 warps (splitk 4); generated with
// Q in shared memory (-hold-q=false) and edited to `a regs`, each warp holds only its
// quarter of every Q slice across the candidate loop, and the result still matches
// float64 in the emulator.
func TestHeldQuerySplitK(t *testing.T) {
	cfg := kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true,
		Segments: []mla.Segment{{K: 96, PageSize: 64, HasLen: true}}}, SMs: 1, SharedQ: true}
	target := tgt("sm_90")
	const seed = 11
	prog, text := filledDecode(t, cfg, target)
	const split, held = " warps 1x1 replicate 4 splitk 4 a shared atom m16n8k16 :", " warps 1x1 replicate 4 splitk 4 a regs atom m16n8k16 :"
	if n := strings.Count(text, split); n != 8 {
		t.Fatalf("%d score dots split along the reduction (%q), want 8", n, split)
	}
	back, err := ir.ParseProgram(strings.ReplaceAll(text, split, held))
	if err != nil {
		t.Fatal(err)
	}
	comp, err := lower.CompileProgram(back, prog.Sequences(), target)
	if err != nil {
		t.Fatal(err)
	}
	c, err := MLA(cfg, target, golden.MLAGenOptions{Seed: seed, InvalidFrac: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	if comp.Module.Print() == c.Compiled.Module.Print() {
		t.Fatal("holding Q changed nothing")
	}
	c.Compiled = comp
	res, err := Run(Emulator{}, c)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if !res.OK() {
		t.Errorf("seed %d, score dots%s: %s", seed, held, res)
	}
}

// TestHoldQ: the 16-head decode's large kernels hold Q (score dots stating `a
// regs`), its small ones (replicated scores) and -hold-q=false (SharedQ) read it
// from shared memory; each matches float64 in the emulator, invalid and
// out-of-pool candidates included.
func TestHoldQ(t *testing.T) {
	for _, c := range []struct {
		sms    int
		shared bool
		held   map[string]bool // kernel -> holds Q
	}{
		{1, false, map[string]bool{"mla_decode_h16": true}},
		{0, false, map[string]bool{"mla_decode_h16": true, "mla_decode_h16_small": false, "mla_decode_h16_split_small": false}},
		{0, true, map[string]bool{"mla_decode_h16": false, "mla_decode_h16_small": false}},
	} {
		cfg := kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true,
			Segments: []mla.Segment{{K: 96, PageSize: 64, HasLen: true}, {K: 40, PageSize: 16}}}, SMs: c.sms, SharedQ: c.shared}
		p, err := kernels.MLA(cfg, tgt("sm_90"))
		if err != nil {
			t.Fatal(err)
		}
		comp, err := lower.CompileProgram(p.Program, p.Sequences(), tgt("sm_90"))
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range c.held {
			var text string
			for _, f := range comp.Module.Funcs {
				if f.Name == name {
					text = (&ptx.Module{Version: "8.7", Target: "sm_90", AddressSize: 64, Funcs: []*ptx.Func{f}}).Print()
				}
			}
			if text == "" {
				t.Fatalf("sms %d shared %v: no kernel %s", c.sms, c.shared, name)
			}
			if got := strings.Contains(text, "held in registers across the loop"); got != want {
				t.Errorf("sms %d shared %v: %s holds Q %v, want %v", c.sms, c.shared, name, got, want)
			}
		}
		cs, err := MLA(cfg, tgt("sm_90"), golden.MLAGenOptions{Seed: 5, InvalidFrac: 0.2, Poison: true, OutOfPool: true})
		if err != nil {
			t.Fatal(err)
		}
		passesInEmulator(t, cs)
	}
}

// TestHeldQFreesItsBytes: a dot that holds Q in registers across the candidate loop
// reads Q's shared home once, at the loop's entry, so the loop's arrays take Q's
// bytes (the 16-head CTA: 98 -> 80 KB; with computed K fragments on sm_120 51 -> 33
// KB, two CTAs per SM instead of one); the sync pass orders the fragment loads
// before the loop's first writes there, which the emulator's race detection checks
// against float64.
func TestHeldQFreesItsBytes(t *testing.T) {
	for _, c := range []struct {
		target string
		kfrags kernels.MLAKFrags
	}{{"sm_90", kernels.KFragsAuto}, {"sm_120", kernels.KFragsOn}} {
		cfg := kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true,
			Segments: []mla.Segment{{K: 96, PageSize: 64, HasLen: true}, {K: 40, PageSize: 16}}}, SMs: 1, KFrags: c.kfrags}
		tg := tgt(c.target)
		p, err := kernels.MLA(cfg, tg)
		if err != nil {
			t.Fatal(err)
		}
		var k *ir.Kernel
		for _, x := range p.Program.Kernels {
			if x.Name == "mla_decode_h16" {
				k = x
			}
		}
		if k == nil {
			t.Fatalf("%s: no mla_decode_h16", c.target)
		}
		d, err := lower.Decide(k, tg, lower.Options{})
		if err != nil {
			t.Fatal(err)
		}
		shared := 0
		for loop, dots := range d.HeldA {
			inLoop := map[*ir.Value]bool{}
			ir.WalkOps(loop.Body, func(o *ir.Op) {
				for _, r := range o.Results {
					inLoop[r] = true
				}
			})
			for _, o := range dots {
				for w, with := range d.Aliases { // each array and those placed before it that it overlaps
					if inLoop[w] && slices.Contains(with, o.Args[0]) {
						shared++
					}
				}
			}
		}
		if shared == 0 {
			t.Errorf("%s: no array of the loop takes a held Q slice's bytes (%d bytes of shared memory)", c.target, d.SmemBytes)
		}
		cs, err := MLA(cfg, tg, golden.MLAGenOptions{Seed: 7, InvalidFrac: 0.2})
		if err != nil {
			t.Fatal(err)
		}
		passesInEmulator(t, cs)
	}
}

// TestAheadClause: a decode whose CTA walks more candidates than it preloads loads
// each tile's indices in the loop; dump -ir states how far ahead of the tiles they
// are issued (`ahead 1`, the lowering's choice at 2 stages), and every other depth
// and pipeline it may be given (`ahead 0`: the indices in their own iteration, the
// tiles not pipelined; one stage, only the indices ahead of the iteration's own
// gathers) compiles to other PTX that still matches the float64
// reference in the emulator, whose pending-copy and race checks hold each
// iteration's waits to the groups its reads need.
func TestAheadClause(t *testing.T) {
	cfg := kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true,
		Segments: []mla.Segment{{K: 2200, PageSize: 64, HasLen: true}}}, Split: 1, SMs: 1}
	target := tgt("sm_90")
	const seed = 13
	prog, text := filledDecode(t, cfg, target)
	const filled = " stages 2 ahead 1 iter("
	if n := strings.Count(text, filled); n != 1 {
		t.Fatalf("%d loops state%q, want the candidate loop", n, filled)
	}
	seen := map[string]string{}
	for _, clause := range []string{" stages 2 ahead 1 iter(", " stages 2 ahead 0 iter(", " stages 2 ahead 2 iter(", " stages 2 ahead 3 iter(", " stages 3 ahead 1 iter(", " stages 3 ahead 2 iter(", " stages 3 ahead 3 iter(",
		" ahead 1 iter(", " ahead 2 iter("} {
		c, err := MLA(cfg, target, golden.MLAGenOptions{Seed: seed, InvalidFrac: 0.1, Poison: true, OutOfPool: true})
		if err != nil {
			t.Fatal(err)
		}
		back, err := ir.ParseProgram(strings.Replace(text, filled, clause, 1))
		if err != nil {
			t.Fatal(err)
		}
		comp, err := lower.CompileProgram(back, prog.Sequences(), target)
		if err != nil {
			t.Fatalf("%s: %v", clause, err)
		}
		ptxText := comp.Module.Print()
		if clause == filled && ptxText != c.Compiled.Module.Print() {
			t.Errorf("%s: the filled-in text compiles to other PTX than the kernel it was printed from", clause)
		}
		for other, p := range seen {
			if p == ptxText {
				t.Errorf("%s and %s compile to the same PTX", clause, other)
			}
		}
		seen[clause] = ptxText
		c.Compiled = comp
		res, err := Run(Emulator{}, c)
		if err != nil {
			t.Fatalf("seed %d,%s: %v", seed, clause, err)
		}
		if !res.OK() {
			t.Errorf("seed %d,%s: %s", seed, clause, res)
		}
	}
}

// TestKPermClause: the 16-head decode with computed K and V fragments (`b computed`),
// its dots edited to `kperm`, reads each thread's raw K pairs of a k16 step with one
// 4-byte shared load instead of two 2-byte ones (Q's held fragments and P·V's
// output columns in the same order; the rope slice, a bf16 tile in shared memory,
// pair by pair in that order instead of by ldmatrix), and still matches the float64
// reference in the emulator (race and pending-copy checks on). Without the rope
// slice in that order too the scores came out wrong.
func TestKPermClause(t *testing.T) {
	cfg := kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true,
		Segments: []mla.Segment{{K: 96, PageSize: 64, HasLen: true}, {K: 40, PageSize: 16}}}, SMs: 1, KFrags: kernels.KFragsOn, KPairwise: true}
	target := tgt("sm_120")
	const seed = 17
	prog, text := filledDecode(t, cfg, target)
	const plain, permuted = " b computed atom m16n8k16 :", " b computed kperm atom m16n8k16 :"
	if n := strings.Count(text, plain); n != 8+16 {
		t.Fatalf("%d dots state%q, want 24 (8 score slices, 16 P·V dots)", n, plain)
	}
	back, err := ir.ParseProgram(strings.ReplaceAll(text, plain, permuted))
	if err != nil {
		t.Fatal(err)
	}
	comp, err := lower.CompileProgram(back, prog.Sequences(), target)
	if err != nil {
		t.Fatal(err)
	}
	c, err := MLA(cfg, target, golden.MLAGenOptions{Seed: seed, InvalidFrac: 0.2, Poison: true})
	if err != nil {
		t.Fatal(err)
	}
	before, after := c.Compiled.Module.Print(), comp.Module.Print()
	if b, a := strings.Count(before, "ld.shared.b16"), strings.Count(after, "ld.shared.b16"); b == 0 || a != 0 {
		t.Errorf("ld.shared.b16: %d before kperm, %d after; want some, then none", b, a)
	}
	// The loop's 56 two-byte pair loads become 28 four-byte ones and the rope
	// slice's ldmatrix go (run counted: 1840 -> 1761 instructions in the loop),
	// against 24 more loads of the held Q fragments before it.
	if b, a := strings.Count(longestLoop(before), ";\n"), strings.Count(longestLoop(after), ";\n"); a >= b {
		t.Errorf("%d instructions in the candidate loop before kperm, %d after; want fewer", b, a)
	}
	c.Compiled = comp
	res, err := Run(Emulator{}, c)
	if err != nil {
		t.Fatalf("seed %d, kperm: %v", seed, err)
	}
	if !res.OK() {
		t.Errorf("seed %d, kperm: %s", seed, res)
	}
}

// longestLoop is the text of the longest loop in PTX text: from a label to the
// furthest branch back to it.
func longestLoop(text string) string {
	best := ""
	for i := strings.Index(text, "bra.uni $L"); i >= 0; {
		end := strings.IndexByte(text[i:], ';')
		label := text[i+len("bra.uni ") : i+end]
		if top := strings.Index(text, "\n"+label+":"); top >= 0 && top < i && i-top > len(best) {
			best = text[top:i]
		}
		next := strings.Index(text[i+1:], "bra.uni $L")
		if next < 0 {
			break
		}
		i += 1 + next
	}
	return best
}

// TestKPermDefault: the computed-fragment 16-head family of the rows that fill the
// SMs reads its pairs in kperm order (variant "kp") unless KPairwise (-k-perm=false),
// and either way the call matches float64 in the emulator; the tile family it
// leaves as it is.
func TestKPermDefault(t *testing.T) {
	for _, pairwise := range []bool{false, true} {
		cfg := kernels.MLAConfig{Shape: mla.Shape{T: 3, H: 24, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true,
			Segments: []mla.Segment{{K: 100, PageSize: 64, HasLen: true}, {K: 70, PageSize: 16, HasLen: true}}}, SMs: 2, KPairwise: pairwise}
		c, err := MLA(cfg, tgt("sm_120"), golden.MLAGenOptions{Seed: 19, InvalidFrac: 0.1, Poison: true, SinkEdges: true})
		if err != nil {
			t.Fatal(err)
		}
		if want := map[bool]string{false: " kf kp", true: " kf"}[pairwise]; !strings.HasSuffix(c.Variant, want) {
			t.Fatalf("KPairwise %v: variant %q, want the computed-fragment family ending %q", pairwise, c.Variant, want)
		}
		if text := c.Compiled.Module.Print(); strings.Contains(text, "ld.shared.b16") != pairwise {
			t.Errorf("KPairwise %v: the kernel reads 2-byte pairs %v", pairwise, !pairwise)
		}
		passesInEmulator(t, c)
		_, designs, err := kernels.MLADesign(cfg, tgt("sm_120"))
		if err != nil {
			t.Fatal(err)
		}
		if designs[0].Variant.KPerm || designs[1].Variant.KPerm == pairwise {
			t.Errorf("KPairwise %v: KPerm per family %v, %v", pairwise, designs[0].Variant.KPerm, designs[1].Variant.KPerm)
		}
	}
}

// TestScoreRows: -score-rows 2 gives the sm_120 plan's 64-head CTA of computed
// fragments a 2x4 score grid, so each row group converts its candidates' Kᵀ pairs
// and there are half as many row groups: fewer pair conversions per thread than the
// automatic 4x2, and the call still matches float64 in the emulator.
func TestScoreRows(t *testing.T) {
	conversions := map[int]int{}
	for _, rows := range []int{0, 2} {
		cfg := kernels.MLAConfig{Shape: mla.Shape{T: 3, H: 64, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true,
			Segments: []mla.Segment{{K: 100, PageSize: 64, HasLen: true}, {K: 70, PageSize: 16, HasLen: true}}}, SMs: 2, ScoreRows: rows}
		c, err := MLA(cfg, tgt("sm_120"), golden.MLAGenOptions{Seed: 23, InvalidFrac: 0.1, Poison: true, SinkEdges: true})
		if err != nil {
			t.Fatal(err)
		}
		want := map[int]string{0: "h64 w8 2x4 t32 s1 kf", 2: "h64 w8 2x4 t32 s1 r2 kf"}[rows]
		if c.Variant != want {
			t.Fatalf("-score-rows %d: variant %q, want %q", rows, c.Variant, want)
		}
		conversions[rows] = strings.Count(c.Compiled.Module.Print(), "cvt.rn.f16x2.e4m3x2")
		passesInEmulator(t, c)
	}
	if conversions[2] >= conversions[0] {
		t.Errorf("pair conversions: %d with -score-rows 2, %d automatic; want fewer", conversions[2], conversions[0])
	}
}
