package ptx

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// sampleModules are hand-built modules covering every statement and operand form the
// printer can write.
func sampleModules() []*Module {
	gemm := &Func{
		Name: "gemm_bf16",
		Params: []Param{
			{Name: "a", Type: "u64"},
			{Name: "b", Type: "u64"},
			{Name: "n", Type: "u32"},
			{Name: "scale", Type: "f32"},
		},
		ReqNTid: 128,
		Regs: []RegDecl{
			{Type: "pred", Prefix: "%p", Count: 4},
			{Type: "b16", Prefix: "%h", Count: 2},
			{Type: "b32", Prefix: "%r", Count: 40},
			{Type: "b64", Prefix: "%rd", Count: 8},
			{Type: "f32", Prefix: "%f", Count: 16},
		},
		Shared: []SharedDecl{
			{Name: "tile", Align: 16, Size: 4096},
			{Name: "smem", Align: 128, Extern: true},
		},
		Body: []Stmt{
			&Comment{Text: "prologue"},
			&Comment{Text: ""},
			&Comment{Text: "  indented: with // inside"},
			&Instr{Op: "ld.param.u64", Args: []Operand{Reg("%rd0"), Addr{Base: Sym("a")}}},
			&Instr{Op: "cvta.to.global.u64", Args: []Operand{Reg("%rd1"), Reg("%rd0")}},
			&Instr{Op: "mov.u32", Args: []Operand{Reg("%r0"), Reg("%tid.x")}},
			&Instr{Op: "mov.u32", Args: []Operand{Reg("%r1"), Reg("%ctaid.y")}},
			&Instr{Op: "mov.u32", Args: []Operand{Reg("%r2"), Reg("%laneid")}},
			&Instr{Op: "mov.u32", Args: []Operand{Reg("%r3"), Reg("%ntid.x")}},
			&Instr{Op: "mov.u32", Args: []Operand{Reg("%r4"), Sym("smem")}},
			&Instr{Op: "mov.b32", Args: []Operand{Reg("%r5"), Imm(-7)}},
			&Instr{Op: "mov.b64", Args: []Operand{Reg("%rd2"), Imm(-9223372036854775808)}},
			&Instr{Op: "mov.b64", Args: []Operand{Reg("%rd3"), Imm(9223372036854775807)}},
			&Instr{Op: "mov.f32", Args: []Operand{Reg("%f0"), F32(1)}},
			&Instr{Op: "mov.f32", Args: []Operand{Reg("%f1"), FImm(0xFF800000)}},
			&Instr{Op: "mov.f32", Args: []Operand{Reg("%f2"), FImm(0x7FC00001)}},
			&Instr{Op: "mov.b32", Args: []Operand{Reg("%r6"), Vec{Reg("%h0"), Reg("%h1")}}},
			&Instr{Op: "mov.b32", Args: []Operand{Vec{Reg("%h0"), Sink{}}, Reg("%r6")}},
			&Label{Name: "$L_loop"},
			&Instr{Op: "setp.lt.u32", Args: []Operand{Reg("%p0"), Reg("%r0"), Imm(16)}},
			&Instr{Op: "setp.gtu.f32", Args: []Operand{Reg("%p1|%p2"), Reg("%f0"), Reg("%f1")}},
			&Instr{Guard: "%p0", Op: "ld.global.nc.v4.u32",
				Args: []Operand{Vec{Reg("%r8"), Reg("%r9"), Reg("%r10"), Reg("%r11")}, Addr{Base: Reg("%rd1"), Off: 16}}},
			&Instr{Guard: "%p0", GuardNeg: true, Op: "st.shared.v2.f32",
				Args: []Operand{Addr{Base: Reg("%r4"), Off: -8}, Vec{Reg("%f0"), Reg("%f1")}}},
			&Instr{Op: "ld.shared.u32", Args: []Operand{Reg("%r12"), Addr{Base: Sym("tile"), Off: 64}}},
			&Instr{Op: "cp.async.cg.shared.global.L2::128B",
				Args: []Operand{Addr{Base: Reg("%r4")}, Addr{Base: Reg("%rd1"), Off: 32}, Imm(16), Reg("%r13")}},
			&Instr{Op: "cp.async.commit_group"},
			&Instr{Op: "cp.async.wait_group", Args: []Operand{Imm(1)}},
			&Instr{Op: "bar.sync", Args: []Operand{Imm(0)}},
			&Instr{Op: "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16",
				Args: []Operand{Vec{Reg("%r14"), Reg("%r15"), Reg("%r16"), Reg("%r17")}, Addr{Base: Reg("%r4")}}},
			&Instr{Op: "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32", Args: []Operand{
				Vec{Reg("%f4"), Reg("%f5"), Reg("%f6"), Reg("%f7")},
				Vec{Reg("%r14"), Reg("%r15"), Reg("%r16"), Reg("%r17")},
				Vec{Reg("%r18"), Reg("%r19")},
				Vec{Reg("%f4"), Reg("%f5"), Reg("%f6"), Reg("%f7")}}},
			&Instr{Op: "shfl.sync.bfly.b32", Args: []Operand{Reg("%r20|%p3"), Reg("%r21"), Imm(1), Imm(0x1f), Imm(-1)}},
			&Instr{Op: "fma.rn.f32", Args: []Operand{Reg("%f8"), Reg("%f4"), F32(1.4426950408889634), Reg("%f9")}},
			&Instr{Op: "cvt.rn.bf16x2.f32", Args: []Operand{Reg("%r22"), Reg("%f5"), Reg("%f4")}},
			&Instr{Op: "add.s32", Args: []Operand{Reg("%r0"), Reg("%r0"), Imm(4294967295)}},
			&Instr{Op: "prmt.b32", Args: []Operand{Reg("%r23"), Reg("%r22"), Imm(0), Imm(0x9180)}},
			&Instr{Op: "prmt.b32.ecr", Args: []Operand{Reg("%r24"), Reg("%r22"), Reg("%r23"), Reg("%r0")}},
			&Instr{Op: "movmatrix.sync.aligned.m8n8.trans.b16", Args: []Operand{Reg("%r25"), Reg("%r24")}},
			&Instr{Op: "mul.rn.bf16x2", Args: []Operand{Reg("%r26"), Reg("%r25"), Reg("%r24")}},
			&Instr{Op: "fma.rn.bf16x2", Args: []Operand{Reg("%r27"), Reg("%r26"), Reg("%r25"), Reg("%r24")}},
			&Instr{Op: "bar.warp.sync", Args: []Operand{Imm(-1)}},
			&Instr{Op: "bar.arrive", Args: []Operand{Imm(1), Imm(160)}},
			&Instr{Op: "bar.sync", Args: []Operand{Reg("%r1"), Reg("%r3")}},
			&Instr{Guard: "%p0", Op: "bra.uni", Args: []Operand{Sym("$L_loop")}},
			&Instr{Op: "ret"},
		},
	}
	empty := &Func{Name: "empty", Body: []Stmt{&Instr{Op: "exit"}}}
	noRegs := &Func{
		Name:   "noregs",
		Params: []Param{{Name: "x", Type: "u64"}},
		Body:   []Stmt{&Label{Name: "L0"}, &Instr{Op: "bra", Args: []Operand{Sym("L0")}}},
	}
	return []*Module{
		{Version: "7.8", Target: "sm_90", AddressSize: 64, Funcs: []*Func{gemm, empty}},
		{Version: "8.7", Target: "sm_120", AddressSize: 64, Funcs: []*Func{noRegs}},
		{Version: "7.0", Target: "sm_80", AddressSize: 64},
	}
}

func TestParseRoundTrip(t *testing.T) {
	for _, m := range sampleModules() {
		text := m.Print()
		got, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse: %v\n%s", err, text)
		}
		if d := cmp.Diff(m, got, cmpopts.EquateEmpty()); d != "" {
			t.Errorf("Parse(Print(m)) != m (-want +got):\n%s", d)
		}
		if again := got.Print(); again != text {
			t.Errorf("Print(Parse(Print(m))) != Print(m):\n%s\nvs\n%s", again, text)
		}
	}
}

// TestParseHandWritten reads PTX laid out differently from the printer.
func TestParseHandWritten(t *testing.T) {
	src := `
.version 7.8 .target sm_80
.address_size 64
/* block
   comment */
.visible .entry k(.param .u64 p, .param .s32 n) .reqntid 64
{
	.reg .b32 %r<3>; .reg .pred %p<1>;
	.shared .align 4 .b8 buf[16];
	mov.u32 %r0, 0x10;    // sixteen
	ld.shared.u32 %r1, [buf-4];
	@!%p0 st.shared.u32 [%r0 + 4], %r1;
L:	add.s32 %r2,%r2,-3;
	@%p0 bra L;
	ret;
}
`
	m, err := Parse(src)
	if err != nil {
		t.Fatal(err)
	}
	want := &Module{Version: "7.8", Target: "sm_80", AddressSize: 64, Funcs: []*Func{{
		Name:    "k",
		Params:  []Param{{Name: "p", Type: "u64"}, {Name: "n", Type: "s32"}},
		ReqNTid: 64,
		Regs:    []RegDecl{{Type: "b32", Prefix: "%r", Count: 3}, {Type: "pred", Prefix: "%p", Count: 1}},
		Shared:  []SharedDecl{{Name: "buf", Align: 4, Size: 16}},
		Body: []Stmt{
			&Instr{Op: "mov.u32", Args: []Operand{Reg("%r0"), Imm(16)}},
			&Comment{Text: "sixteen"},
			&Instr{Op: "ld.shared.u32", Args: []Operand{Reg("%r1"), Addr{Base: Sym("buf"), Off: -4}}},
			&Instr{Guard: "%p0", GuardNeg: true, Op: "st.shared.u32", Args: []Operand{Addr{Base: Reg("%r0"), Off: 4}, Reg("%r1")}},
			&Label{Name: "L"},
			&Instr{Op: "add.s32", Args: []Operand{Reg("%r2"), Reg("%r2"), Imm(-3)}},
			&Instr{Guard: "%p0", Op: "bra", Args: []Operand{Sym("L")}},
			&Instr{Op: "ret"},
		},
	}}}
	if d := cmp.Diff(want, m, cmpopts.EquateEmpty()); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestParseErrors(t *testing.T) {
	cases := []struct{ src, want string }{
		{".version 7.8\n.target sm_80\nbogus", `line 3: unexpected "bogus" at top level`},
		{".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k(\n.param .u64 a\n.param .u64 b)\n{\n}", `line 6: expected , or ) after parameter`},
		{".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tadd.s32 %r1, %r2 %r3;\n}", `line 6: expected , or ; after operand, found "%r3": "add.s32 %r1, %r2 %r3;"`},
		{".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tld.u32 %r1, [%r2+x];\n}", `line 6: bad address offset "x"`},
		{".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tmov.u32 %r1, 12z;\n}", `line 6: bad immediate "12z"`},
		{".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n\tret;\n", `unterminated body of k`},
		{".version 7.8\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n.reg .b32 %r;\n}", `line 6: only register ranges`},
		{".target sm_80", `missing .version`},
		// Issue 15: a module needs its whole header, once each, in order; what
		// Print writes for a module without one did not parse back.
		{"//0000000\n.version 0", `bad .version "0"`},
		{".version 7.8", `missing .target before the end`},
		{".version 7.8\n.target sm_80", `missing .address_size before the end`},
		{".version 7.8\n.target sm_80\n.visible .entry k()\n{\n}", `missing .address_size before .visible`},
		{".version 7.8\n.target .address_size\n", `bad .target ".address_size"`},
		{".version 7.8\n.target sm_80\n.address_size 48", `bad .address_size 48`},
		{".version 7.8\n.version 7.8", `bad .version "7.8"`},
		{".version 7.8\n.target sm_80\n.address_size 64\n.target sm_90", `bad .target "sm_90"`},
		{".version 7.8\n.address_size 64", `missing .target before .address_size`},
		{".version 7.8\n.target sm_80\n.address_size 64\n.shared .align 4 .b8 x[4];", `shared array x is declared after the last function`},
	}
	for _, c := range cases {
		_, err := Parse(c.src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q) = %v, want error containing %q", c.src, err, c.want)
		}
	}
}

func BenchmarkParse(b *testing.B) {
	// A large body: the sample kernel's instructions repeated.
	m := sampleModules()[0]
	f := m.Funcs[0]
	body := f.Body
	for len(f.Body) < 20000 {
		f.Body = append(f.Body, body...)
	}
	text := m.Print()
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Parse(text); err != nil {
			b.Fatal(err)
		}
	}
}

// Two kernels of one module that both use the dynamic shared array: it is declared
// once (ptxas refuses a second .extern declaration), and parsing gives it back to both.
func TestSharedDeclaredOncePerModule(t *testing.T) {
	kernel := func(name string) *Func {
		return &Func{Name: name, Shared: []SharedDecl{{Name: "smem", Align: 128, Extern: true}},
			Regs: []RegDecl{{Type: "b32", Prefix: "%r", Count: 1}},
			Body: []Stmt{&Instr{Op: "mov.u32", Args: []Operand{Reg("%r0"), Sym("smem")}}, &Instr{Op: "exit"}}}
	}
	m := &Module{Version: "7.8", Target: "sm_90", AddressSize: 64, Funcs: []*Func{kernel("a"), kernel("b")}}
	text := m.Print()
	if n := strings.Count(text, ".extern .shared"); n != 1 {
		t.Fatalf("%d declarations of smem, want 1:\n%s", n, text)
	}
	back, err := Parse(text)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(m, back); d != "" {
		t.Errorf("Parse(Print(m)) != m (-want +got):\n%s", d)
	}
}
