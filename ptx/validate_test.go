package ptx

import (
	"strings"
	"testing"
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

// TestFormsExpand: every pattern expands to distinct opcodes, none with braces
// or empty modifiers left.
func TestFormsExpand(t *testing.T) {
	n := 0
	for _, f := range Forms {
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
