package emu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// TestFMA32Exact compares fma32 with a big.Float single rounding on random and
// adversarial inputs (cancellation, halfway cases, subnormals, overflow).
func TestFMA32Exact(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	rnd := func() float32 {
		switch rng.IntN(4) {
		case 0: // any bit pattern
			return math.Float32frombits(rng.Uint32())
		case 1: // near 1
			return math.Float32frombits(0x3F800000 + rng.Uint32()%4096 - 2048)
		case 2: // subnormal-ish
			return math.Float32frombits(rng.Uint32() % 0x01000000)
		}
		return float32(rng.NormFloat64())
	}
	ref := func(a, b, c float32) float32 {
		if math.IsNaN(float64(a)) || math.IsNaN(float64(b)) || math.IsNaN(float64(c)) ||
			math.IsInf(float64(a), 0) || math.IsInf(float64(b), 0) || math.IsInf(float64(c), 0) {
			return float32(float64(a)*float64(b) + float64(c))
		}
		x := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		x.Mul(x, new(big.Float).SetFloat64(float64(b)))
		x.Add(x, new(big.Float).SetFloat64(float64(c)))
		if x.Sign() == 0 {
			return float32(float64(a)*float64(b) + float64(c)) // sign of an exact zero
		}
		f, _ := x.Float32() // rounds to nearest even, with subnormals and overflow
		return f
	}
	check := func(a, b, c float32) {
		got, want := fma32(a, b, c), ref(a, b, c)
		if math.Float32bits(got) != math.Float32bits(want) && !(got != got && want != want) {
			t.Fatalf("fma32(%g, %g, %g) = %g (%#x), want %g (%#x)", a, b, c, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	for i := 0; i < 300000; i++ {
		a, b := rnd(), rnd()
		check(a, b, rnd())
		// c close to -a*b: heavy cancellation.
		check(a, b, -float32(float64(a)*float64(b)))
	}
	// Double rounding: a*b is an exact f32 halfway point (a 25-bit product) and c is
	// far below float64 precision, so a float64 sum lands on the tie and rounding it
	// again to f32 goes to even, while the exact sum lies just off the tie.
	check(1+0x1p-12, 1+0x1p-12, 0x1p-70)
	for i := 0; i < 100000; i++ {
		a := float32(math.Ldexp(float64(1<<12+rng.IntN(1<<12)), rng.IntN(40)-20))
		b := float32(math.Ldexp(float64(1<<12|rng.IntN(1<<12)|1), rng.IntN(40)-20))
		p := float64(a) * float64(b)
		c := float32(math.Ldexp(p, -60-rng.IntN(20)))
		if rng.IntN(2) == 0 {
			c = -c
		}
		check(a, b, c)
	}
}

// op runs one instruction for lane 0 of one warp and returns the 64-bit register
// stored by out ("%r9", "%rd9", "%f9"; "%p9" stores 0/1).
func op(t *testing.T, setup, instr, out string) uint64 {
	t.Helper()
	st := "st.global.b32 [%rd0], " + out + ";"
	switch {
	case out[:3] == "%rd":
		st = "st.global.b64 [%rd0], " + out + ";"
	case out[:2] == "%p":
		st = "selp.u32 %r63, 1, 0, " + out + ";\n\tst.global.b32 [%rd0], %r63;"
	case out[:2] == "%h":
		st = "st.global.b16 [%rd0], " + out + ";"
	}
	src := kernel(".param .u64 out", "\tld.param.u64 %rd0, [out];\n\t"+setup+"\n\t"+instr+"\n\t"+st)
	mem := NewMemory()
	p := mem.Alloc("out", make([]byte, 8))
	if err := run(t, src, Launch{Block: 32, Args: []any{p}}, mem); err != nil {
		t.Fatalf("%s: %v", instr, err)
	}
	return binary.LittleEndian.Uint64(mem.Bytes("out"))
}

func fimm(x float32) string { return fmt.Sprintf("0f%08X", math.Float32bits(x)) }

func TestInstructionTable(t *testing.T) {
	nan := "0f7FC00000"
	ninf, pinf := "0fFF800000", "0f7F800000"
	sub := "0f00000001" // smallest subnormal
	cases := []struct {
		setup, instr, out string
		want              uint64
	}{
		// integer
		{"mov.u32 %r1, 7; mov.u32 %r2, -3;", "div.s32 %r9, %r1, %r2;", "%r9", uint64(uint32(0xFFFFFFFE))},
		{"mov.u32 %r1, 7; mov.u32 %r2, -3;", "rem.s32 %r9, %r1, %r2;", "%r9", 1},
		{"mov.u32 %r1, 7; mov.u32 %r2, 0;", "div.u32 %r9, %r1, %r2;", "%r9", 0xFFFFFFFF},
		{"mov.u32 %r1, -8;", "shr.s32 %r9, %r1, 1;", "%r9", 0xFFFFFFFC},
		{"mov.u32 %r1, -8;", "shr.u32 %r9, %r1, 1;", "%r9", 0x7FFFFFFC},
		{"mov.u32 %r1, -8;", "shr.s32 %r9, %r1, 40;", "%r9", 0xFFFFFFFF},
		{"mov.u32 %r1, 1;", "shl.b32 %r9, %r1, 32;", "%r9", 0},
		{"mov.u32 %r1, -2; mov.u32 %r2, 3;", "mul.hi.s32 %r9, %r1, %r2;", "%r9", 0xFFFFFFFF},
		{"mov.u32 %r1, -2; mov.u32 %r2, 3;", "mul.hi.u32 %r9, %r1, %r2;", "%r9", 2},
		{"mov.u32 %r1, -2; mov.u32 %r2, 3;", "mul.wide.s32 %rd9, %r1, %r2;", "%rd9", uint64(0xFFFFFFFFFFFFFFFA)},
		{"mov.u32 %r1, -2; mov.u32 %r2, 3;", "mul.wide.u32 %rd9, %r1, %r2;", "%rd9", 3 * 0xFFFFFFFE},
		{"mov.b64 %rd1, -2; mov.b64 %rd2, 3;", "mul.hi.s64 %rd9, %rd1, %rd2;", "%rd9", math.MaxUint64},
		{"mov.b64 %rd1, -2; mov.b64 %rd2, 3;", "mul.hi.u64 %rd9, %rd1, %rd2;", "%rd9", 2},
		{"mov.u32 %r1, 5; mov.u32 %r2, 6; mov.b64 %rd2, 100;", "mad.wide.u32 %rd9, %r1, %r2, %rd2;", "%rd9", 130},
		{"mov.u32 %r1, 5; mov.u32 %r2, -6;", "min.s32 %r9, %r1, %r2;", "%r9", 0xFFFFFFFA},
		{"mov.u32 %r1, 5; mov.u32 %r2, -6;", "min.u32 %r9, %r1, %r2;", "%r9", 5},
		{"mov.u32 %r1, -5;", "abs.s32 %r9, %r1;", "%r9", 5},
		{"mov.u32 %r1, 0x7FFFFFFF;", "add.sat.s32 %r9, %r1, 1;", "%r9", 0x7FFFFFFF},
		{"mov.u32 %r1, 0xF0;", "popc.b32 %r9, %r1;", "%r9", 4},
		{"mov.u32 %r1, 0xF0;", "clz.b32 %r9, %r1;", "%r9", 24},
		{"mov.u32 %r1, 0x44332211; mov.u32 %r2, 0x88776655;", "prmt.b32 %r9, %r1, %r2, 0x7531;", "%r9", 0x88664422},
		{"mov.u32 %r1, 0x44332211; mov.u32 %r2, 0x88776655;", "prmt.b32 %r9, %r1, %r2, 0x000F;", "%r9", 0x111111FF},
		{"mov.u32 %r1, -1;", "cvt.u64.u32 %rd9, %r1;", "%rd9", 0xFFFFFFFF},
		{"mov.u32 %r1, -1;", "cvt.s64.s32 %rd9, %r1;", "%rd9", math.MaxUint64},
		{"mov.b64 %rd1, 0x123456789;", "cvt.u32.u64 %r9, %rd1;", "%r9", 0x23456789},
		{"mov.u32 %r1, 0x1FF;", "cvt.s32.s8 %r9, %r1;", "%r9", 0xFFFFFFFF},
		{"mov.u32 %r1, 300;", "cvt.sat.u8.u32 %r9, %r1;", "%r9", 255},
		{"mov.u32 %r1, 7;", "setp.lt.s32 %p1|%p2, %r1, -1;", "%p2", 1},
		{"mov.u32 %r1, 7;", "setp.lo.u32 %p1, %r1, -1;", "%p1", 1},
		{"setp.eq.u32 %p3, 1, 1; mov.u32 %r1, 7;", "setp.gt.and.s32 %p1, %r1, 3, %p3;", "%p1", 1},
		{"setp.eq.u32 %p3, 1, 2; mov.u32 %r1, 7;", "setp.gt.or.s32 %p1|%p2, %r1, 3, %p3;", "%p2", 0},
		{"setp.eq.u32 %p3, 1, 1; setp.eq.u32 %p4, 1, 2;", "xor.pred %p1, %p3, %p4;", "%p1", 1},
		{"mov.u32 %r1, 0x1234; mov.u32 %r2, 0xABCD;", "mov.b32 %r9, {%h1, %h2};", "%r9", 0},
		{"mov.u32 %r1, 0xABCD1234;", "mov.b32 {%h1, %h2}, %r1;", "%h2", 0xABCD},
		{"mov.u32 %r1, 0x11; mov.u32 %r2, 0x22;", "mov.b64 %rd9, {%r1, %r2};", "%rd9", 0x2200000011},
		// f32 arithmetic
		{"mov.f32 %f1, " + fimm(1) + "; mov.f32 %f2, " + fimm(0x1p-24) + ";", "add.rn.f32 %f9, %f1, %f2;", "%f9", 0x3F800000},
		{"mov.f32 %f1, " + fimm(1) + "; mov.f32 %f2, " + fimm(3) + ";", "div.rn.f32 %f9, %f1, %f2;", "%f9", uint64(math.Float32bits(1.0 / 3))},
		{"mov.f32 %f1, " + sub + ";", "add.ftz.f32 %f9, %f1, %f1;", "%f9", 0},
		{"mov.f32 %f1, " + sub + ";", "add.f32 %f9, %f1, %f1;", "%f9", 2},
		{"mov.f32 %f1, " + fimm(2) + "; mov.f32 %f2, " + fimm(0.25) + ";", "mul.rn.sat.f32 %f9, %f1, %f2;", "%f9", uint64(math.Float32bits(0.5))},
		{"mov.f32 %f1, " + nan + "; mov.f32 %f2, " + fimm(3) + ";", "max.f32 %f9, %f1, %f2;", "%f9", uint64(math.Float32bits(3))},
		{"mov.f32 %f1, " + nan + "; mov.f32 %f2, " + fimm(3) + ";", "min.f32 %f9, %f2, %f1;", "%f9", uint64(math.Float32bits(3))},
		{"mov.f32 %f1, " + nan + "; mov.f32 %f2, " + fimm(3) + ";", "max.NaN.f32 %f9, %f1, %f2;", "%f9", canonNaN32},
		{"mov.f32 %f1, 0f80000000; mov.f32 %f2, 0f00000000;", "max.f32 %f9, %f1, %f2;", "%f9", 0},
		{"mov.f32 %f1, 0f80000000; mov.f32 %f2, 0f00000000;", "min.f32 %f9, %f2, %f1;", "%f9", 0x80000000},
		{"mov.f32 %f1, " + fimm(-2) + ";", "neg.f32 %f9, %f1;", "%f9", uint64(math.Float32bits(2))},
		{"mov.f32 %f1, " + fimm(-2) + ";", "abs.f32 %f9, %f1;", "%f9", uint64(math.Float32bits(2))},
		{"mov.f32 %f1, " + ninf + ";", "ex2.approx.f32 %f9, %f1;", "%f9", 0},
		{"mov.f32 %f1, 0f80000000;", "ex2.approx.ftz.f32 %f9, %f1;", "%f9", 0x3F800000},
		{"mov.f32 %f1, " + fimm(-140) + ";", "ex2.approx.f32 %f9, %f1;", "%f9", uint64(math.Float32bits(0x1p-140))},
		{"mov.f32 %f1, " + fimm(-140) + ";", "ex2.approx.ftz.f32 %f9, %f1;", "%f9", 0},
		{"mov.f32 %f1, " + fimm(10) + ";", "ex2.approx.ftz.f32 %f9, %f1;", "%f9", uint64(math.Float32bits(1024))},
		{"mov.f32 %f1, " + fimm(8) + ";", "lg2.approx.f32 %f9, %f1;", "%f9", uint64(math.Float32bits(3))},
		{"mov.f32 %f1, 0f80000000;", "rcp.approx.f32 %f9, %f1;", "%f9", 0xFF800000},
		{"mov.f32 %f1, " + fimm(4) + ";", "rcp.rn.f32 %f9, %f1;", "%f9", uint64(math.Float32bits(0.25))},
		{"mov.f32 %f1, " + fimm(2) + ";", "sqrt.rn.f32 %f9, %f1;", "%f9", uint64(math.Float32bits(float32(math.Sqrt2)))},
		{"mov.f32 %f1, 0f80000000;", "sqrt.rn.f32 %f9, %f1;", "%f9", 0x80000000},
		{"mov.f32 %f1, " + pinf + ";", "sqrt.rn.f32 %f9, %f1;", "%f9", 0x7F800000},
		{"mov.f32 %f1, " + sub + ";", "sqrt.rn.f32 %f9, %f1;", "%f9", uint64(math.Float32bits(float32(math.Sqrt(0x1p-149))))},
		{"mov.f32 %f1, " + fimm(4) + ";", "rsqrt.approx.f32 %f9, %f1;", "%f9", uint64(math.Float32bits(0.5))},
		{"mov.f32 %f1, 0f00000000;", "rsqrt.approx.f32 %f9, %f1;", "%f9", 0x7F800000},
		{"mov.f32 %f1, " + pinf + ";", "rsqrt.approx.f32 %f9, %f1;", "%f9", 0},
		{"mov.f32 %f1, " + fimm(2) + "; mov.f32 %f2, " + fimm(3) + "; mov.f32 %f3, " + fimm(1) + ";", "fma.rn.f32 %f9, %f1, %f2, %f3;", "%f9", uint64(math.Float32bits(7))},
		// compares with NaN
		{"mov.f32 %f1, " + nan + "; mov.f32 %f2, " + fimm(1) + ";", "setp.lt.f32 %p1, %f1, %f2;", "%p1", 0},
		{"mov.f32 %f1, " + nan + "; mov.f32 %f2, " + fimm(1) + ";", "setp.ltu.f32 %p1, %f1, %f2;", "%p1", 1},
		{"mov.f32 %f1, " + nan + "; mov.f32 %f2, " + fimm(1) + ";", "setp.ne.f32 %p1, %f1, %f2;", "%p1", 0},
		{"mov.f32 %f1, " + nan + "; mov.f32 %f2, " + fimm(1) + ";", "setp.neu.f32 %p1, %f1, %f2;", "%p1", 1},
		{"mov.f32 %f1, " + nan + "; mov.f32 %f2, " + fimm(1) + ";", "setp.nan.f32 %p1, %f1, %f2;", "%p1", 1},
		{"mov.f32 %f1, " + pinf + "; mov.f32 %f2, " + fimm(1) + ";", "setp.num.f32 %p1, %f1, %f2;", "%p1", 1},
		{"mov.f32 %f1, " + fimm(1) + "; mov.f32 %f2, " + fimm(1) + ";", "setp.geu.f32 %p1, %f1, %f2;", "%p1", 1},
		// conversions
		{"mov.f32 %f1, " + fimm(1) + "; mov.f32 %f2, " + fimm(2) + ";", "cvt.rn.bf16x2.f32 %r9, %f1, %f2;", "%r9", 0x3F804000},
		{"mov.f32 %f1, " + fimm(1) + "; mov.f32 %f2, " + nan + ";", "cvt.rn.bf16x2.f32 %r9, %f1, %f2;", "%r9", 0x3F807FC0},
		{"mov.f32 %f1, " + fimm(1+0x1p-8) + ";", "cvt.rn.bf16.f32 %h1, %f1;", "%h1", 0x3F80},   // tie to even
		{"mov.f32 %f1, " + fimm(1+3*0x1p-8) + ";", "cvt.rn.bf16.f32 %h1, %f1;", "%h1", 0x3F82}, // tie to even, up
		{"mov.f32 %f1, " + fimm(-1) + ";", "cvt.rn.relu.bf16.f32 %h1, %f1;", "%h1", 0},
		{"mov.f32 %f1, " + pinf + ";", "cvt.rn.satfinite.bf16.f32 %h1, %f1;", "%h1", 0x7F7F},
		{"mov.u32 %r1, 0xC0A0;", "cvt.u16.u32 %h1, %r1; cvt.f32.bf16 %f9, %h1;", "%f9", uint64(math.Float32bits(-5))},
		{"mov.f32 %f1, " + fimm(1.5) + ";", "cvt.rn.f16.f32 %h1, %f1;", "%h1", 0x3E00},
		{"mov.u32 %r1, 0x3E00;", "cvt.u16.u32 %h1, %r1; cvt.f32.f16 %f9, %h1;", "%f9", uint64(math.Float32bits(1.5))},
		{"mov.f32 %f1, " + fimm(1000) + "; mov.f32 %f2, " + fimm(-0.5) + ";", "cvt.rn.satfinite.e4m3x2.f32 %h1, %f1, %f2;", "%h1", 0x7EB0},
		{"mov.u32 %r1, 0x7EB0;", "cvt.u16.u32 %h1, %r1; cvt.rn.f16x2.e4m3x2 %r9, %h1;", "%r9", 0x5F00B800},
		{"mov.u32 %r1, -7;", "cvt.rn.f32.s32 %f9, %r1;", "%f9", uint64(math.Float32bits(-7))},
		{"mov.u32 %r1, 16777217;", "cvt.rn.f32.u32 %f9, %r1;", "%f9", uint64(math.Float32bits(16777216))},
		{"mov.b64 %rd1, -3;", "cvt.rn.f32.s64 %f9, %rd1;", "%f9", uint64(math.Float32bits(-3))},
		{"mov.f32 %f1, " + fimm(-2.5) + ";", "cvt.rni.s32.f32 %r9, %f1;", "%r9", 0xFFFFFFFE},
		{"mov.f32 %f1, " + fimm(-2.5) + ";", "cvt.rzi.s32.f32 %r9, %f1;", "%r9", 0xFFFFFFFE},
		{"mov.f32 %f1, " + fimm(-2.5) + ";", "cvt.rmi.s32.f32 %r9, %f1;", "%r9", 0xFFFFFFFD},
		{"mov.f32 %f1, " + fimm(3e9) + ";", "cvt.rzi.s32.f32 %r9, %f1;", "%r9", 0x7FFFFFFF},
		{"mov.f32 %f1, " + nan + ";", "cvt.rzi.s32.f32 %r9, %f1;", "%r9", 0},
		{"mov.f32 %f1, " + fimm(-1) + ";", "cvt.rzi.u32.f32 %r9, %f1;", "%r9", 0},
		{"mov.f32 %f1, " + fimm(2.5) + ";", "cvt.rni.f32.f32 %f9, %f1;", "%f9", uint64(math.Float32bits(2))},
		{"mov.f32 %f1, " + fimm(2.5) + ";", "cvt.sat.f32.f32 %f9, %f1;", "%f9", uint64(math.Float32bits(1))},
		{"mov.u32 %r1, smem;", "add.u32 %r9, %r1, 0;", "%r9", 0},
	}
	for _, c := range cases {
		got := op(t, c.setup, c.instr, c.out)
		want := c.want
		if c.instr == "mov.b32 %r9, {%h1, %h2};" {
			// needs %h set from %r: set up via cvt
			got = op(t, "mov.u32 %r1, 0x1234; mov.u32 %r2, 0xABCD; cvt.u16.u32 %h1, %r1; cvt.u16.u32 %h2, %r2;", c.instr, c.out)
			want = 0xABCD1234
		}
		if got != want {
			t.Errorf("%s %s: got %#x, want %#x", c.setup, c.instr, got, want)
		}
	}
}

// TestCvtBF16x2Order pins the PTX gotcha: a goes to the upper half.
func TestCvtBF16x2Order(t *testing.T) {
	got := op(t, "mov.f32 %f1, "+fimm(-3)+"; mov.f32 %f2, "+fimm(0.5)+";", "cvt.rn.bf16x2.f32 %r9, %f1, %f2;", "%r9")
	if got != 0xC0403F00 {
		t.Errorf("got %#x", got)
	}
}

// TestSqrtRNExact: sqrt.rn.f32 is IEEE correctly rounded on the GPU, so the
// emulator must be bit-exact: compared with big.Float's square root rounded once
// to 24 bits, over random bit patterns (normal and subnormal) in one launch.
func TestSqrtRNExact(t *testing.T) {
	const n = 64 * 256
	rng := rand.New(rand.NewPCG(11, 12))
	in := make([]byte, 4*n)
	xs := make([]float32, n)
	for i := range xs {
		bits := rng.Uint32() & 0x7FFFFFFF // non-negative
		if i%4 == 0 {
			bits %= 0x00800000 // subnormal
		}
		if x := math.Float32frombits(bits); math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			bits = 0x3F800000 + uint32(i)
		}
		xs[i] = math.Float32frombits(bits)
		binary.LittleEndian.PutUint32(in[4*i:], bits)
	}
	src := kernel(".param .u64 in, .param .u64 out", `	ld.param.u64 %rd0, [in];
	ld.param.u64 %rd1, [out];
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %tid.x;
	mad.lo.s32 %r3, %r1, 256, %r2;
	mul.wide.u32 %rd2, %r3, 4;
	add.s64 %rd3, %rd0, %rd2;
	add.s64 %rd4, %rd1, %rd2;
	ld.global.f32 %f1, [%rd3];
	sqrt.rn.f32 %f2, %f1;
	st.global.f32 [%rd4], %f2;`)
	mem := NewMemory()
	pin := mem.Alloc("in", in)
	pout := mem.Alloc("out", make([]byte, 4*n))
	if err := run(t, src, Launch{Grid: [3]int{n / 256}, Block: 256, Args: []any{pin, pout}}, mem); err != nil {
		t.Fatal(err)
	}
	out := mem.Bytes("out")
	for i, x := range xs {
		z := new(big.Float).SetPrec(24).SetMode(big.ToNearestEven)
		z.Sqrt(new(big.Float).SetFloat64(float64(x)))
		want, _ := z.Float32()
		if got := binary.LittleEndian.Uint32(out[4*i:]); got != math.Float32bits(want) {
			t.Fatalf("sqrt.rn.f32(%g = %#x) = %#x, want %#x (seed 11,12)", x, math.Float32bits(x), got, math.Float32bits(want))
		}
	}
}
