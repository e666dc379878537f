package ptx

import (
	"fmt"
	"strings"
	"testing"

	arch "github.com/ptxgen/ptxgen/target"
)

func TestValidate(t *testing.T) {
	r := func(n string) Reg { return Reg(n) }
	addr := Addr{Base: Reg("%r1")}
	cases := []struct {
		in              *Instr
		target, version string
		want            string // "" for valid, else a substring of the error
	}{
		{&Instr{Op: "add.s32", Args: []Operand{r("%r0"), r("%r1"), Imm(4)}}, "sm_80", "7.0", ""},
		{&Instr{Op: "mul.lo.s32", Args: []Operand{r("%r0"), Imm(0), Imm(8)}}, "sm_80", "7.0", ""},
		{&Instr{Op: "add.s33", Args: []Operand{r("%r0"), r("%r1"), Imm(4)}}, "sm_80", "7.0", "unknown opcode"},
		{&Instr{Op: "add.s32", Args: []Operand{r("%r0"), r("%r1")}}, "sm_80", "7.0", "2 operands, want 3"},
		{&Instr{Op: "add.s32", Args: []Operand{Imm(1), r("%r1"), r("%r2")}}, "sm_80", "7.0", "operand 0 is an integer immediate, want a register"},
		{&Instr{Op: "add.rn.f32", Args: []Operand{r("%f0"), r("%f1"), Imm(1)}}, "sm_80", "7.0", "want a register or a float immediate"},
		{&Instr{Op: "griddepcontrol.wait"}, "sm_90", "7.8", ""},
		{&Instr{Op: "griddepcontrol.wait"}, "sm_89", "7.8", "needs sm_90"},
		{&Instr{Op: "cvt.rn.f16x2.e4m3x2", Args: []Operand{r("%r0"), r("%h0")}}, "sm_90", "7.8", ""},
		{&Instr{Op: "cvt.rn.f16x2.e4m3x2", Args: []Operand{r("%r0"), r("%h0")}}, "sm_89", "7.8", "needs PTX 8.1 on sm_89"},
		{&Instr{Op: "cvt.rn.f16x2.e4m3x2", Args: []Operand{r("%r0"), r("%h0")}}, "sm_89", "8.1", ""},
		{&Instr{Op: "cvt.rn.f16x2.e4m3x2", Args: []Operand{r("%r0"), r("%h0")}}, "sm_80", "8.1", "needs sm_89"},
		{&Instr{Op: "cvt.f32.bf16", Args: []Operand{r("%f0"), r("%h0")}}, "sm_80", "7.0", "needs PTX 7.1"},
		{&Instr{Op: "cp.async.cg.shared.global", Args: []Operand{addr, addr, Imm(16), r("%r2")}}, "sm_80", "7.0", ""},
		{&Instr{Op: "cp.async.cg.shared.global", Args: []Operand{addr, addr, Imm(8), Imm(8)}}, "sm_80", "7.0", "copy size 8"},
		{&Instr{Op: "cp.async.ca.shared.global", Args: []Operand{addr, addr, Imm(8), Imm(12)}}, "sm_80", "7.0", "src-size 12"},
		{&Instr{Op: "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16", Args: []Operand{Vec{r("%r0"), r("%r1"), r("%r2"), r("%r3")}, addr}}, "sm_80", "7.0", ""},
		{&Instr{Op: "ldmatrix.sync.aligned.m8n8.x2.shared.b16", Args: []Operand{Vec{r("%r0"), r("%r1"), r("%r2"), r("%r3")}, addr}}, "sm_80", "7.0", "4 destination registers, want 2"},
		{&Instr{Op: "st.global.v4.b32", Args: []Operand{addr, Vec{r("%r0"), r("%r1")}}}, "sm_80", "7.0", "vector of 2, want 4"},
		{&Instr{Op: "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", Args: []Operand{Vec{r("a"), r("b"), r("c"), r("d")}, Vec{r("a"), r("b"), r("c"), r("d")}, Vec{r("a")}, Vec{r("a"), r("b"), r("c"), r("d")}}}, "sm_80", "7.0", "operand 2 is a vector of 1, want 2"},
		{&Instr{Op: "add.s32", Args: []Operand{r("%r0"), r("%r1"), Imm(4)}}, "gfx90", "7.0", "bad target"},
		// The instructions of the split-D and warp-role decode designs (issues 20, 21),
		// with the limits ptxas 11.8 enforces.
		{&Instr{Op: "prmt.b32", Args: []Operand{r("%r0"), r("%r1"), Imm(0), Imm(0x9180)}}, "sm_80", "7.0", ""},
		{&Instr{Op: "prmt.b32.rc16", Args: []Operand{r("%r0"), r("%r1"), r("%r2"), r("%r3")}}, "sm_80", "7.0", ""},
		{&Instr{Op: "prmt.b32.f4e", Args: []Operand{r("%r0"), r("%r1"), r("%r2")}}, "sm_80", "7.0", "3 operands, want 4"},
		{&Instr{Op: "movmatrix.sync.aligned.m8n8.trans.b16", Args: []Operand{r("%r0"), r("%r1")}}, "sm_80", "7.8", ""},
		{&Instr{Op: "movmatrix.sync.aligned.m8n8.trans.b16", Args: []Operand{r("%r0"), r("%r1")}}, "sm_80", "7.7", "needs PTX 7.8"},
		// (movmatrix needs sm_75, below every target ptxgen knows: sm_70 is no target.)
		{&Instr{Op: "movmatrix.sync.aligned.m8n8.trans.b16", Args: []Operand{r("%r0"), r("%r1")}}, "sm_70", "7.8", "bad target"},
		{&Instr{Op: "mul.rn.bf16x2", Args: []Operand{r("%r0"), r("%r1"), r("%r2")}}, "sm_90", "7.8", ""},
		{&Instr{Op: "mul.rn.bf16x2", Args: []Operand{r("%r0"), r("%r1"), r("%r2")}}, "sm_89", "7.8", "needs sm_90"},
		{&Instr{Op: "mul.rn.bf16x2", Args: []Operand{r("%r0"), r("%r1"), Imm(0x3f803f80)}}, "sm_90", "7.8", "operand 2 is an integer immediate"},
		{&Instr{Op: "fma.rn.bf16x2", Args: []Operand{r("%r0"), r("%r1"), r("%r2"), r("%r3")}}, "sm_80", "7.0", ""},
		{&Instr{Op: "bar.warp.sync", Args: []Operand{Imm(-1)}}, "sm_80", "7.0", ""},
		{&Instr{Op: "bar.sync", Args: []Operand{Imm(0)}}, "sm_80", "7.0", ""},
		{&Instr{Op: "bar.sync", Args: []Operand{Imm(1), Imm(128)}}, "sm_80", "7.0", ""},
		{&Instr{Op: "bar.sync", Args: []Operand{r("%r0"), r("%r1")}}, "sm_80", "7.0", ""},
		{&Instr{Op: "bar.sync", Args: []Operand{}}, "sm_80", "7.0", "0 operands, want 1 to 2"},
		{&Instr{Op: "bar.sync", Args: []Operand{Imm(16)}}, "sm_80", "7.0", "barrier 16, want 0..15"},
		{&Instr{Op: "bar.sync", Args: []Operand{Imm(1), Imm(65)}}, "sm_80", "7.0", "thread count 65, want a multiple of 32"},
		{&Instr{Op: "bar.arrive", Args: []Operand{Imm(1), Imm(256)}}, "sm_80", "7.0", ""},
		{&Instr{Op: "bar.arrive", Args: []Operand{Imm(1)}}, "sm_80", "7.0", "1 operands, want 2"},
		{&Instr{Op: "bar.arrive", Args: []Operand{Imm(1), Imm(0)}}, "sm_80", "7.0", "thread count 0"},
		// Architecture-specific forms: setmaxnreg on sm_90a and sm_120a only.
		{&Instr{Op: "setmaxnreg.inc.sync.aligned.u32", Args: []Operand{Imm(232)}}, "sm_90a", "8.0", ""},
		{&Instr{Op: "setmaxnreg.dec.sync.aligned.u32", Args: []Operand{Imm(40)}}, "sm_120a", "8.7", ""},
		{&Instr{Op: "setmaxnreg.dec.sync.aligned.u32", Args: []Operand{Imm(40)}}, "sm_90", "8.0", "needs sm_90a or another architecture-specific target"},
		{&Instr{Op: "setmaxnreg.dec.sync.aligned.u32", Args: []Operand{Imm(40)}}, "sm_120", "8.7", "(target sm_120)"},
		{&Instr{Op: "setmaxnreg.inc.sync.aligned.u32", Args: []Operand{Imm(236)}}, "sm_90a", "8.0", "register count 236"},
		{&Instr{Op: "setmaxnreg.inc.sync.aligned.u32", Args: []Operand{Imm(232)}}, "sm_90a", "7.8", "needs PTX 8.0"},
	}
	for _, c := range cases {
		err := Validate(c.in, c.target, c.version)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s on %s %s: %v", c.in.Op, c.target, c.version, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s on %s %s: error %v, want one containing %q", c.in.Op, c.target, c.version, err, c.want)
		}
	}
}

// TestTargetFeatures: a target has the SM features up to its compute capability,
// and ArchSpecific only in its 'a' form.
func TestTargetFeatures(t *testing.T) {
	for _, c := range []struct {
		target string
		want   Features
	}{
		{"sm_80", SM75 | SM80},
		{"sm_86", SM75 | SM80},
		{"sm_89", SM75 | SM80 | SM89},
		{"sm_90", SM75 | SM80 | SM89 | SM90},
		{"sm_90a", SM75 | SM80 | SM89 | SM90 | ArchSpecific},
		{"sm_120a", SM75 | SM80 | SM89 | SM90 | ArchSpecific},
		{"sm_100f", SM75 | SM80 | SM89 | SM90},
	} {
		id, err := arch.ParseID(c.target)
		if err != nil {
			t.Fatal(err)
		}
		if got := TargetFeatures(id); got != c.want {
			t.Errorf("%s: features %b, want %b", c.target, got, c.want)
		}
	}
}

// TestFormOperands: a leading = marks the operands an instruction writes, and
// Validate reads the kinds after it.
func TestFormOperands(t *testing.T) {
	got := FormOf("mad.lo.s32").Operands()
	want := []FormOperand{{"r", true}, {"ri", false}, {"ri", false}, {"ri", false}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("mad.lo.s32 operands %v, want %v", got, want)
	}
	if got := FormOf("st.shared.v4.f32").Operands(); got[0].Written || got[1].Written {
		t.Errorf("st.shared.v4.f32 operands %v: a store writes no operand", got)
	}
	if FormOf("mad.lo.s33") != nil {
		t.Error("FormOf(mad.lo.s33) is a form")
	}
}

// TestFormsExpand: every pattern expands to distinct opcodes, none with braces
// or empty modifiers left, and writes only registers.
func TestFormsExpand(t *testing.T) {
	n := 0
	for _, f := range Forms {
		for _, o := range f.Operands() {
			if o.Kinds == "" || o.Written && strings.Trim(o.Kinds, "rv") != "" {
				t.Errorf("%s: operand %+v: want kinds, and only registers or vectors written", f.Op, o)
			}
		}
		for _, op := range expand(f.Op) {
			n++
			if strings.ContainsAny(op, "{}|") || strings.Contains(op, "..") || strings.HasSuffix(op, ".") {
				t.Errorf("%s expands to %q", f.Op, op)
			}
		}
	}
	if got := len(expand("a.{b|c}.{d|e|f}")); got != 6 {
		t.Errorf("a.{b|c}.{d|e|f}: %d opcodes, want 6", got)
	}
	if len(forms) != n {
		t.Errorf("%d opcodes in the map, %d expanded", len(forms), n)
	}
}

// TestTargetFlagsAgree: the targets' instruction flags, which the emitter reads to
// choose a lowering, say what Forms says of the instruction they stand for.
func TestTargetFlagsAgree(t *testing.T) {
	for _, name := range arch.Names() {
		tg := arch.MustLookup(name)
		has := func(op string) bool { return FormOf(op).Needs&^TargetFeatures(tg.ID) == 0 }
		if got := has("griddepcontrol.wait"); got != tg.GridDependency {
			t.Errorf("%s: GridDependency %v, Forms say griddepcontrol.wait %v", name, tg.GridDependency, got)
		}
		if got := has("cvt.rn.f16x2.e4m3x2"); got != tg.FP8Convert {
			t.Errorf("%s: FP8Convert %v, Forms say cvt.rn.f16x2.e4m3x2 %v", name, tg.FP8Convert, got)
		}
	}
}

// TestTypedConstructors: a typed constructor with a type (and comparison) Forms
// lists builds what the opcode's own constructor builds; with any other it builds an
// instruction Validate refuses, naming the opcode.
func TestTypedConstructors(t *testing.T) {
	d, a, b := Reg("%r1"), Reg("%r2"), Reg("%r3")
	for _, c := range []struct{ typed, exact *Instr }{
		{Mov("b32", d, a), MovB32(d, a)},
		{Setp("lt", "f32", Reg("%p1"), Reg("%f1"), Reg("%f2")), SetpLtF32(Reg("%p1"), Reg("%f1"), Reg("%f2"))},
		{Shr("s64", Reg("%rd1"), Reg("%rd2"), Imm(3)), ShrS64(Reg("%rd1"), Reg("%rd2"), Imm(3))},
		{StSharedV2("f32", Addr{Base: a}, Vec{Reg("%f1"), Reg("%f2")}), StSharedV2F32(Addr{Base: a}, Vec{Reg("%f1"), Reg("%f2")})},
	} {
		if instrString(c.typed) != instrString(c.exact) {
			t.Errorf("typed %s, want %s", instrString(c.typed), instrString(c.exact))
		}
		if err := Validate(c.typed, "sm_90", "7.8"); err != nil {
			t.Error(err)
		}
	}
	for _, in := range []*Instr{Mov("s32", d, a), Setp("lo", "s32", Reg("%p1"), a, b), Neg("b16", Reg("%h1"), Reg("%h2"))} {
		err := Validate(in, "sm_90", "7.8")
		if err == nil || !strings.Contains(err.Error(), `unknown opcode "`+in.Op+`"`) {
			t.Errorf("%s: error %v, want unknown opcode %q", instrString(in), err, in.Op)
		}
	}
}

// TestValidateRefusesHandWritten: a hand-written form (one the emulator decodes for
// hand-written PTX) is refused in a module, the error naming the instruction as a
// form ptxgen never emits, and gives the emitter no PTX version to raise to.
func TestValidateRefusesHandWritten(t *testing.T) {
	addr := Addr{Base: Reg("%r1")}
	for _, in := range []*Instr{
		{Op: "fma.rn.f32", Args: []Operand{Reg("%f0"), Reg("%f1"), Reg("%f2"), Reg("%f3")}},
		{Op: "barrier.sync.aligned", Args: []Operand{Imm(1), Imm(128)}},
		// cp.async without src-size: its form's, but shorter than ptxgen writes it.
		{Op: "cp.async.cg.shared.global", Args: []Operand{addr, addr, Imm(16)}},
	} {
		fn := &Func{Name: "k", Body: []Stmt{in, &Instr{Op: "ret"}}}
		err := ValidateModule(&Module{Version: "8.7", Target: "sm_120", AddressSize: 64, Funcs: []*Func{fn}})
		if err == nil || !strings.Contains(err.Error(), instrString(in)) || !strings.Contains(err.Error(), "ptxgen never emits it") {
			t.Errorf("%s: error %v, want one naming it as a hand-written form ptxgen never emits", instrString(in), err)
		}
		if FormOf(in.Op) == nil {
			t.Errorf("%s: no form (the emulator needs one)", in.Op)
		}
		if _, ok := MinVersion(in.Op, "sm_120"); ok && FormOf(in.Op).HandWritten {
			t.Errorf("%s: MinVersion knows a hand-written form", in.Op)
		}
	}
}
