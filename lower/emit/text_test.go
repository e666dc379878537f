package emit

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// Exact-text tests of emitter functions: each writes into a bare emitter, and the
// instructions it wrote are compared with the PTX they must be, line for line.

// bareEmitter is an emitter for sm_90 with nothing emitted yet.
func bareEmitter() *emitter {
	tg := target.MustLookup("sm_90")
	return &emitter{d: &decision.Set{Target: tg}, nregs: map[string]int{}, version: tg.MinVersion}
}

// bodyText is the PTX of what e wrote, one instruction per line, without the
// function around it.
func bodyText(t *testing.T, e *emitter) string {
	t.Helper()
	m := &ptx.Module{Version: "7.8", Target: "sm_90", AddressSize: 64, Funcs: []*ptx.Func{{Name: "t", Body: e.body}}}
	var lines []string
	in := false
	for _, l := range strings.Split(m.Print(), "\n") {
		switch {
		case strings.HasPrefix(l, "{"):
			in = true
		case strings.HasPrefix(l, "}"):
			in = false
		case in && strings.TrimSpace(l) != "":
			lines = append(lines, strings.TrimSpace(l))
		}
	}
	return strings.Join(lines, "\n")
}

// wantText reports what e wrote where it is not want, naming the case.
func wantText(t *testing.T, e *emitter, name, want string) {
	t.Helper()
	if got := bodyText(t, e); got != want {
		t.Errorf("%s:\n%s\nwant\n%s", name, got, want)
	}
}

// TestDivRemText: division and remainder of a non-negative i32 by constants, as
// divRemU32 writes them: a move, a shift or mask for powers of two, and Granlund
// and Montgomery's multiplication by a magic reciprocal otherwise.
func TestDivRemText(t *testing.T) {
	for _, c := range []struct {
		k    ir.OpKind
		d    int
		want string
	}{
		{ir.OpDiv, 1, "mov.u32 %r0, %r1;"},
		{ir.OpRem, 1, "mov.u32 %r0, 0;"},
		{ir.OpDiv, 8, "shr.u32 %r0, %r1, 3;"},
		{ir.OpRem, 8, "and.b32 %r0, %r1, 7;"},
		{ir.OpDiv, 7, strings.Join([]string{
			"mul.hi.s32 %r2, %r1, -1840700269;",
			"add.s32 %r2, %r2, %r1;",
			"shr.s32 %r2, %r2, 2;",
			"shr.u32 %r3, %r1, 31;",
			"add.s32 %r4, %r2, %r3;",
			"mov.u32 %r0, %r4;",
		}, "\n")},
	} {
		e := bareEmitter()
		r, a := e.reg(ir.I32), e.reg(ir.I32)
		e.divRemU32(c.k, r, a, c.d)
		wantText(t, e, fmt.Sprintf("%s by %d", c.k, c.d), c.want)
	}
}

// TestLoopHeadText: a loop whose bounds are not constants known to run tests its
// first iteration before the top label; one with constant bounds that runs at least
// once enters without the test.
func TestLoopHeadText(t *testing.T) {
	e := bareEmitter()
	iv, hi := e.reg(ir.I32), e.reg(ir.I32)
	e.loopHead(iv, ptx.Imm(0), hi)
	want := strings.Join([]string{
		"setp.ge.s32 %p0, %r0, %r1;",
		"@%p0 bra.uni $L2;",
		"$L1:",
	}, "\n")
	wantText(t, e, "variable bound", want)
	e = bareEmitter()
	e.loopHead(e.reg(ir.I32), ptx.Imm(0), ptx.Imm(4))
	wantText(t, e, "constant bounds 0..4 (just the top label)", "$L1:")
}

// TestE4M3ToF32Text: one e4m3 byte to f32, through the hardware pair conversion
// where the target has it (sm_89+), and on sm_80 by placing the byte's exponent and
// mantissa at f32 bits 20..26 and the sign at bit 31, then scaling by 2^120 to rebias
// the exponent (exact for every finite e4m3, subnormals included), with 0x7f and
// 0xff made NaN.
func TestE4M3ToF32Text(t *testing.T) {
	for _, c := range []struct {
		target, want string
	}{
		{"sm_90", strings.Join([]string{
			"cvt.u16.u32 %h0, %r0;",
			"cvt.rn.f16x2.e4m3x2 %r1, %h0;",
			"cvt.u16.u32 %h1, %r1;",
			"cvt.f32.f16 %f0, %h1;",
		}, "\n")},
		{"sm_80", strings.Join([]string{
			"and.b32 %r1, %r0, 127;",
			"shl.b32 %r2, %r1, 20;",
			"and.b32 %r3, %r0, 128;",
			"shl.b32 %r3, %r3, 24;",
			"or.b32 %r4, %r2, %r3;",
			"mov.b32 %f1, %r4;",
			"mul.rn.f32 %f0, %f1, 0f7B800000;",
			"setp.eq.s32 %p0, %r1, 127;",
			"selp.f32 %f0, 0f7FC00000, %f0, %p0;",
		}, "\n")},
	} {
		e := bareEmitter()
		e.d.Target = target.MustLookup(c.target)
		x := e.reg(ir.E4M3)
		r, err := e.cast(ir.E4M3, ir.F32, x)
		if err != nil {
			t.Fatal(err)
		}
		if r != ptx.Reg("%f0") {
			t.Errorf("%s: result in %v, want %%f0", c.target, r)
		}
		wantText(t, e, c.target, c.want)
	}
}

// TestF16PairToF32Text: two e4m3 bytes of a 16-bit pair (an `a computed` fragment's
// or a staged run's) become two f32 by one pair conversion, the f16 halves split
// out of the 32-bit result (low half first: the pair's first byte), and two widenings.
func TestF16PairToF32Text(t *testing.T) {
	e := bareEmitter()
	pair := e.reg(ir.I32)
	out := make([]ptx.Operand, 2)
	e.f16PairToF32(pair, out)
	want := strings.Join([]string{
		"cvt.rn.f16x2.e4m3x2 %r1, %r0;",
		"mov.b32 {%h0, %h1}, %r1;",
		"cvt.f32.f16 %f0, %h0;",
		"cvt.f32.f16 %f1, %h1;",
	}, "\n")
	wantText(t, e, t.Name(), want)
	if out[0] != ptx.Reg("%f0") || out[1] != ptx.Reg("%f1") {
		t.Errorf("halves in %v, want [%%f0 %%f1]", out)
	}
}

// TestSwizzleBitsText: the XOR a swizzled row's 16-byte chunks take is (row & 7)
// chunks, as a byte offset within the row's 128-byte group.
func TestSwizzleBitsText(t *testing.T) {
	e := bareEmitter()
	e.swizzleBits(e.reg(ir.I32))
	want := "shl.b32 %r1, %r0, 4;\nand.b32 %r1, %r1, 112;"
	wantText(t, e, t.Name(), want)
}

// TestFragCoordText: a computed operand's fragment coordinate is lane + offset plus
// the warp's share, one register per distinct coordinate in the scope. A share
// that counts every warp of the CTA one by one drops its remainder, so the
// scores' split along the dims (warp % 4, 4 warps) and P·V's column groups give
// the same base register, which is what lets them share pairs; a share of 2 of 4
// warps keeps it.
func TestFragCoordText(t *testing.T) {
	e := bareEmitter()
	e.threadView = threadView{nthreads: 128, cache: []map[string]ptx.Operand{{}}, coordScopes: []map[[5]int]*coords{{}}}
	e.warp, e.t = e.reg(ir.I32), e.reg(ir.I32) // %r0, %r1
	red, cols := warpSpan{div: 1, mod: 4, span: 16}, warpSpan{div: 1, mod: 4, span: 16}
	a := e.fragCoord(e.twoT(), red, 8)
	b := e.fragCoord(e.twoT(), cols, 8)
	if a != b {
		t.Errorf("the same share and offset gave %v and %v, want one register", a, b)
	}
	e.fragCoord(e.twoT(), warpSpan{div: 1, mod: 2, span: 32}, 0)
	want := strings.Join([]string{
		"shl.b32 %r2, %r1, 1;",     // 2t, once
		"mul.lo.s32 %r3, %r0, 16;", // warp * 16: the remainder by 4 dropped
		"add.s32 %r4, %r2, 8;",
		"add.s32 %r4, %r4, %r3;",
		"and.b32 %r5, %r0, 1;", // warp % 2
		"mul.lo.s32 %r6, %r5, 32;",
		"add.s32 %r7, %r2, 0;",
		"add.s32 %r7, %r7, %r6;",
	}, "\n")
	wantText(t, e, t.Name(), want)
}
