package emu

import (
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ptx"
)

// TestFormsDecode: the emulator decodes every instruction form of ptx.Forms (the
// table ptx.Validate checks the generator against, and the hand-written forms only
// hand-written PTX uses), so what validates also runs.
// Operands are synthesized from each form's operand kinds, with registers of the
// width the opcode's types imply; a form with optional operands also without them.
func TestFormsDecode(t *testing.T) {
	for _, f := range ptx.Forms {
		for _, op := range f.Opcodes() {
			args := formOperands(op, f.Operands())
			for n := len(args) - f.Optional - f.HandWrittenOptional; n <= len(args); n++ {
				decodeOne(t, &ptx.Instr{Op: op, Args: args[:n]})
			}
		}
	}
}

// TestFormsWritten: the emulator treats as a destination every operand ptx.Forms
// marks written: the form with that operand an immediate (a vector of them) does
// not decode.
func TestFormsWritten(t *testing.T) {
	for _, f := range ptx.Forms {
		for _, op := range f.Opcodes() {
			args := formOperands(op, f.Operands())
			for i, o := range f.Operands() {
				if !o.Written {
					continue
				}
				bad := append([]ptx.Operand(nil), args...)
				bad[i] = ptx.Imm(1)
				if v, ok := args[i].(ptx.Vec); ok {
					bad[i] = append(ptx.Vec{ptx.Imm(1)}, v[1:]...)
				}
				in := &ptx.Instr{Op: op, Args: bad}
				if _, err := Load(oneInstr(in)); err == nil {
					t.Errorf("%s: decodes with its written operand %d an immediate", in, i)
				}
			}
		}
	}
}

// decodeOne loads a kernel of the one instruction in.
func decodeOne(t *testing.T, in *ptx.Instr) {
	if _, err := Load(oneInstr(in)); err != nil {
		t.Errorf("%s: %v", in, err)
	}
}

// oneInstr is a module of one kernel running in.
func oneInstr(in *ptx.Instr) *ptx.Module {
	fn := &ptx.Func{
		Name:   "k",
		Params: []ptx.Param{{Name: "param_x", Type: ptx.Type(paramType(in.Op))}},
		Regs: []ptx.RegDecl{{Type: "pred", Prefix: "%p", Count: 4}, {Type: "b16", Prefix: "%h", Count: 8},
			{Type: "b32", Prefix: "%r", Count: 8}, {Type: "b64", Prefix: "%rd", Count: 8}, {Type: "f32", Prefix: "%f", Count: 8}},
		Shared: []ptx.SharedDecl{{Name: "smem", Align: 128, Extern: true}},
		Body:   []ptx.Stmt{&ptx.Label{Name: "$L0"}, in, &ptx.Instr{Op: "ret"}},
	}
	return &ptx.Module{Version: "8.7", Target: "sm_120", AddressSize: 64, Funcs: []*ptx.Func{fn}}
}

func paramType(op string) string {
	if strings.HasPrefix(op, "ld.param.") {
		return strings.TrimPrefix(op, "ld.param.")
	}
	return "u64"
}

// regFor is a register holding a value of PTX type ty.
func regFor(ty string, n int) ptx.Reg {
	i := string(rune('0' + n))
	switch ty {
	case "pred":
		return ptx.Reg("%p" + i)
	case "b16", "f16", "bf16", "u16", "s16":
		return ptx.Reg("%h" + i)
	case "b64", "s64", "u64":
		return ptx.Reg("%rd" + i)
	case "f32":
		return ptx.Reg("%f" + i)
	}
	return ptx.Reg("%r" + i)
}

// operandTypes is the PTX type of each operand of op, as far as the operands
// are registers.
func operandTypes(op string, n int) []string {
	parts := strings.Split(op, ".")
	last := parts[len(parts)-1]
	ts := make([]string, n)
	for i := range ts {
		ts[i] = last
	}
	switch {
	case parts[0] == "setp":
		ts[0] = "pred"
		if n == 4 { // setp.<cmp>.<and|or|xor> combines with a predicate
			ts[3] = "pred"
		}
	case parts[0] == "selp":
		ts[n-1] = "pred"
	case parts[0] == "shl" || parts[0] == "shr":
		ts[2] = "b32"
	case parts[0] == "cvt" || parts[0] == "cvta":
		var types []string
		for _, p := range parts[1:] {
			if p != "rn" && p != "rzi" && p != "to" && p != "global" {
				types = append(types, p)
			}
		}
		ts[0] = types[0]
		for i := 1; i < n; i++ {
			ts[i] = types[len(types)-1]
		}
		if op == "cvt.rn.f16x2.e4m3x2" {
			ts[0], ts[1] = "b32", "b16"
		}
		if op == "cvt.rn.bf16x2.f32" {
			ts[0] = "b32"
		}
	case parts[0] == "mul" && parts[1] == "hi", parts[0] == "mad" && last == "s64":
	case parts[0] == "shfl":
		ts = []string{"b32", "b32", "b32", "b32", "b32"}
	case parts[0] == "movmatrix":
		ts = []string{"b32", "b32"}
	}
	return ts
}

func formOperands(op string, ops []ptx.FormOperand) []ptx.Operand {
	ts := operandTypes(op, len(ops))
	global := strings.Contains(op, ".global") || strings.HasPrefix(op, "cvta")
	var args []ptx.Operand
	for i, o := range ops {
		switch o.Kinds[0] {
		case 'r':
			args = append(args, regFor(ts[i], i))
		case 'i':
			args = append(args, ptx.Imm(16))
		case 'f':
			args = append(args, ptx.F32(1))
		case 'a':
			switch {
			case strings.HasPrefix(op, "ld.param"):
				args = append(args, ptx.Addr{Base: ptx.Sym("param_x")})
			case global && !(strings.HasPrefix(op, "cp.async") && i == 0):
				args = append(args, ptx.Addr{Base: ptx.Reg("%rd1")})
			default:
				args = append(args, ptx.Addr{Base: ptx.Reg("%r1")})
			}
		case 'v':
			n := 2
			switch {
			case strings.Contains(op, ".v4.") || strings.Contains(op, ".x4.") || strings.HasPrefix(op, "mma") && i != 2:
				n = 4
			case strings.Contains(op, ".x1."):
				n = 1
			}
			ty := ts[i]
			if strings.HasPrefix(op, "mma") || strings.HasPrefix(op, "ldmatrix") {
				ty = "b32"
				if strings.HasPrefix(op, "mma") && (i == 0 || i == 3) {
					ty = "f32"
				}
			}
			var v ptx.Vec
			for j := 0; j < n; j++ {
				v = append(v, regFor(ty, j))
			}
			args = append(args, v)
		case 's':
			args = append(args, ptx.Sym("$L0"))
		}
	}
	return args
}

// TestDecodeNeedsForm: the decoder runs only what ptx.Forms lists. Each of these
// opcodes, one per decoder, has code in it (a type, space or hint it handles) but no
// form, and is refused naming the opcode and the missing form.
func TestDecodeNeedsForm(t *testing.T) {
	a := ptx.Addr{Base: ptx.Reg("%rd1")}
	s := ptx.Addr{Base: ptx.Reg("%r1")}
	v4 := ptx.Vec{ptx.Reg("%r1"), ptx.Reg("%r2"), ptx.Reg("%r3"), ptx.Reg("%r4")}
	for _, in := range []*ptx.Instr{
		{Op: "mov.s16", Args: []ptx.Operand{ptx.Reg("%h0"), ptx.Reg("%h1")}},
		{Op: "mul.wide.s16", Args: []ptx.Operand{ptx.Reg("%r0"), ptx.Reg("%h1"), ptx.Reg("%h2")}},
		{Op: "setp.lt.s16", Args: []ptx.Operand{ptx.Reg("%p0"), ptx.Reg("%h1"), ptx.Reg("%h2")}},
		{Op: "selp.s16", Args: []ptx.Operand{ptx.Reg("%h0"), ptx.Reg("%h1"), ptx.Reg("%h2"), ptx.Reg("%p0")}},
		{Op: "cvt.u32.s64", Args: []ptx.Operand{ptx.Reg("%r0"), ptx.Reg("%rd1")}},
		{Op: "cvta.global.u64", Args: []ptx.Operand{ptx.Reg("%rd0"), ptx.Reg("%rd1")}},
		{Op: "ld.global.ca.u32", Args: []ptx.Operand{ptx.Reg("%r0"), a}},
		{Op: "st.global.wb.u32", Args: []ptx.Operand{a, ptx.Reg("%r0")}},
		{Op: "cp.async.ca.shared::cta.global", Args: []ptx.Operand{s, a, ptx.Imm(4)}},
		{Op: "ldmatrix.sync.aligned.m8n8.x4.shared::cta.b16", Args: []ptx.Operand{v4, s}},
		{Op: "bar.arrive.aligned", Args: []ptx.Operand{ptx.Imm(1), ptx.Imm(64)}},
		{Op: "fence.proxy.async"},
	} {
		_, err := Load(oneInstr(in))
		if err == nil || !strings.Contains(err.Error(), "unknown instruction "+in.Op+" (no form in ptx.Forms)") {
			t.Errorf("%s: error %v, want one naming it and the missing form", in, err)
		}
	}
}
