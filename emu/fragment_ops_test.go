package emu

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/ptxgen/ptxgen/dtype"
)

// laneOp runs one instruction `op %r0, %r1, ...` on 32 lanes whose sources come
// from in[k][lane] (source k is %r(k+1)) and returns %r0 of every lane.
func laneOp(t *testing.T, op string, in ...[32]uint32) [32]uint32 {
	t.Helper()
	body := "\tld.param.u64 %rd0, [pin];\n\tld.param.u64 %rd1, [pout];\n\tmov.u32 %r10, %tid.x;\n\tmul.wide.u32 %rd2, %r10, 4;\n"
	srcs := ""
	for k := range in {
		body += fmt.Sprintf("\tadd.u64 %%rd3, %%rd0, %%rd2;\n\tld.global.u32 %%r%d, [%%rd3+%d];\n", k+1, 128*k)
		srcs += fmt.Sprintf(", %%r%d", k+1)
	}
	body += "\t" + op + " %r0" + srcs + ";\n\tadd.u64 %rd4, %rd1, %rd2;\n\tst.global.u32 [%rd4], %r0;"
	var flat []uint32
	for _, v := range in {
		flat = append(flat, v[:]...)
	}
	mem := NewMemory()
	pin := mem.Alloc("in", u32Bytes(append(flat, 0)))
	pout := mem.Alloc("out", make([]byte, 128))
	if err := run(t, kernel(".param .u64 pin, .param .u64 pout", body), Launch{Block: 32, Args: []any{pin, pout}}, mem); err != nil {
		t.Fatalf("%s: %v", op, err)
	}
	var out [32]uint32
	copy(out[:], bytesU32(mem.Bytes("out")))
	return out
}

func randLanes(r *rand.Rand) (v [32]uint32) {
	for i := range v {
		v[i] = r.Uint32()
	}
	return
}

// TestPrmtExample is the dequantization selector of the split-D design worked by
// hand: bytes 0x80 (sign set) and 0x7F of w go to bytes 0 and 2, bytes 1 and 3
// replicate their sign bits.
func TestPrmtExample(t *testing.T) {
	var w, zero, sel [32]uint32
	for l := range w {
		w[l], sel[l] = 0x12347F80, 0x9180
	}
	if got, want := laneOp(t, "prmt.b32", w, zero, sel)[0], uint32(0x007FFF80); got != want {
		t.Errorf("prmt.b32 0x12347F80, 0, 0x9180 = %#08x, want %#08x", got, want)
	}
	// Selector 0xF26E, nibbles for d.b0..d.b3: E (source byte 6 = 0x00, its sign
	// replicated: 0x00), 6 (0x00), 2 (a's byte 2 = 0x34), F (byte 7 = 0x80, its
	// sign replicated: 0xFF).
	var b [32]uint32
	for l := range w {
		b[l], sel[l] = 0x80000000, 0xF26E
	}
	if got, want := laneOp(t, "prmt.b32", w, b, sel)[0], uint32(0xFF340000); got != want {
		t.Errorf("prmt.b32 0x12347F80, 0x80000000, 0xF26E = %#08x, want %#08x", got, want)
	}
}

// prmtTable is the PTX ISA's table of prmt modes as printed there: for c[1:0] =
// 0..3 the source bytes of d.b3, d.b2, d.b1, d.b0.
var prmtTable = map[string][4]string{
	"f4e":  {"3210", "4321", "5432", "6543"},
	"b4e":  {"5670", "6701", "7012", "0123"},
	"rc8":  {"0000", "1111", "2222", "3333"},
	"ecl":  {"3210", "3211", "3222", "3333"},
	"ecr":  {"0000", "1110", "2210", "3210"},
	"rc16": {"1010", "3232", "1010", "3232"},
}

// TestPrmtModes checks every mode and the default mode on random operands
// against byte-wise references read from the PTX ISA's description.
func TestPrmtModes(t *testing.T) {
	seed := uint64(20)
	r := rand.New(rand.NewPCG(seed, 1))
	a, b, c := randLanes(r), randLanes(r), randLanes(r)
	srcByte := func(l, k int) uint32 {
		if k < 4 {
			return a[l] >> (8 * k) & 0xFF
		}
		return b[l] >> (8 * (k - 4)) & 0xFF
	}
	got := laneOp(t, "prmt.b32", a, b, c)
	for l := range got {
		var want uint32
		for i := 0; i < 4; i++ {
			nib := int(c[l] >> (4 * i) & 0xF)
			v := srcByte(l, nib%8)
			if nib >= 8 { // the sign of the selected byte over all eight bits
				v = 0
				if srcByte(l, nib%8) >= 0x80 {
					v = 0xFF
				}
			}
			want |= v << (8 * i)
		}
		if got[l] != want {
			t.Errorf("seed %d: prmt.b32 %#x, %#x, %#x = %#x, want %#x", seed, a[l], b[l], c[l], got[l], want)
		}
	}
	for mode, rows := range prmtTable {
		got := laneOp(t, "prmt.b32."+mode, a, b, c)
		for l := range got {
			row := rows[c[l]&3]
			var want uint32
			for i := 0; i < 4; i++ { // row[0] is d.b3
				want |= srcByte(l, int(row[3-i]-'0')) << (8 * i)
			}
			if got[l] != want {
				t.Errorf("seed %d: prmt.b32.%s %#x, %#x, %#x = %#x, want %#x", seed, mode, a[l], b[l], c[l], got[l], want)
			}
		}
	}
}

// fragment packs an 8x8 matrix into mma fragment layout: lane l holds row l/4,
// columns 2(l%4) (low half) and 2(l%4)+1.
func fragment(m *[8][8]uint16) (v [32]uint32) {
	for l := range v {
		v[l] = uint32(m[l/4][2*(l%4)]) | uint32(m[l/4][2*(l%4)+1])<<16
	}
	return
}

func TestMovmatrix(t *testing.T) {
	seed := uint64(21)
	r := rand.New(rand.NewPCG(seed, 1))
	var m, tr [8][8]uint16
	for i := range m {
		for j := range m[i] {
			m[i][j] = uint16(r.Uint32())
		}
	}
	for i := range m {
		for j := range m {
			tr[j][i] = m[i][j]
		}
	}
	const op = "movmatrix.sync.aligned.m8n8.trans.b16"
	got := laneOp(t, op, fragment(&m))
	if want := fragment(&tr); got != want {
		t.Fatalf("seed %d: movmatrix of\n%v\n= %x\nwant the transpose %x", seed, m, got, want)
	}
	if back := laneOp(t, op, got); back != fragment(&m) {
		t.Errorf("seed %d: movmatrix twice is not the identity", seed)
	}
}

// TestMovmatrixMatchesLdmatrix: movmatrix of what ldmatrix.x1 loads is what
// ldmatrix.x1.trans loads from the same rows, so a B operand can be reused as a
// transposed one without a second trip through shared memory.
func TestMovmatrixMatchesLdmatrix(t *testing.T) {
	seed := uint64(22)
	r := rand.New(rand.NewPCG(seed, 1))
	rows := make([]uint16, 64)
	for i := range rows {
		rows[i] = uint16(r.Uint32())
	}
	src := kernel(".param .u64 pin, .param .u64 pout", `
	ld.param.u64 %rd0, [pin];
	ld.param.u64 %rd1, [pout];
	mov.u32 %r0, %tid.x;
	shl.b32 %r1, %r0, 2;
	cvt.u64.u32 %rd2, %r1;
	add.u64 %rd3, %rd0, %rd2;
	ld.global.u32 %r2, [%rd3];
	mov.u32 %r3, smem;
	add.u32 %r4, %r3, %r1;
	st.shared.u32 [%r4], %r2;             // the 8 rows of 16 bytes
	bar.sync 0;
	and.b32 %r5, %r0, 7;
	shl.b32 %r5, %r5, 4;
	add.u32 %r5, %r3, %r5;                // lane l < 8 gives row l
	ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r6}, [%r5];
	ldmatrix.sync.aligned.m8n8.x1.trans.shared.b16 {%r7}, [%r5];
	movmatrix.sync.aligned.m8n8.trans.b16 %r8, %r6;
	add.u64 %rd4, %rd1, %rd2;
	st.global.u32 [%rd4], %r7;
	st.global.u32 [%rd4+128], %r8;`)
	mem := NewMemory()
	pin := mem.Alloc("in", u16Bytes(rows))
	pout := mem.Alloc("out", make([]byte, 256))
	if err := run(t, src, Launch{Block: 32, SharedBytes: 128, Args: []any{pin, pout}}, mem); err != nil {
		t.Fatal(err)
	}
	out := bytesU32(mem.Bytes("out"))
	for l := 0; l < 32; l++ {
		if out[l] != out[32+l] {
			t.Errorf("seed %d: lane %d: ldmatrix.trans gives %#x, movmatrix(ldmatrix) %#x", seed, l, out[l], out[32+l])
		}
	}
}

// bf16Ref rounds the exact value x to bf16 by the definition: the multiple of the
// quantum of x's binade (2^-133 below 2^-126) nearest to x, ties to the even
// multiple, and infinity at or past the largest finite value plus half an ulp.
func bf16Ref(x *big.Float) uint16 {
	sign := uint16(0)
	if x.Signbit() {
		sign = 0x8000
	}
	a := new(big.Float).SetPrec(2000).Abs(x)
	if a.Sign() == 0 {
		return sign
	}
	e := a.MantExp(nil) - 1 // a in [2^e, 2^(e+1))
	q := max(e, -126) - 7
	scaled := new(big.Float).SetPrec(2000).SetMantExp(a, -q)
	n, _ := scaled.Int(nil) // floor, a is positive
	frac := new(big.Float).SetPrec(2000).Sub(scaled, new(big.Float).SetInt(n))
	switch c := frac.Cmp(big.NewFloat(0.5)); {
	case c > 0, c == 0 && n.Bit(0) == 1:
		n.Add(n, big.NewInt(1))
	}
	r, _ := new(big.Float).SetMantExp(new(big.Float).SetInt(n), q).Float64()
	if r > float64(dtype.BF16(0x7F7F).F32()) {
		return sign | 0x7F80
	}
	return sign | uint16(math.Float32bits(float32(r))>>16)
}

// randBF16 draws bf16 bits from every class: normal, subnormal, tiny and huge
// exponents, zeros of both signs.
func randBF16(r *rand.Rand) uint16 {
	switch r.IntN(6) {
	case 0:
		return uint16(r.IntN(0x80)) | uint16(r.IntN(2))<<15 // zero or subnormal
	case 1:
		return uint16(r.IntN(0x780)) | uint16(r.IntN(2))<<15 // exponent <= 15
	case 2:
		return uint16(0x7000+r.IntN(0xF80)) | uint16(r.IntN(2))<<15 // exponent >= 224
	}
	v := uint16(r.Uint32())
	for v&0x7F80 == 0x7F80 { // no Inf or NaN here
		v = uint16(r.Uint32())
	}
	return v
}

func TestBF16x2MulFma(t *testing.T) {
	seed := uint64(23)
	r := rand.New(rand.NewPCG(seed, 1))
	exact := func(h uint16) *big.Float {
		return new(big.Float).SetPrec(2000).SetFloat64(dtype.BF16(h).F64())
	}
	for round := 0; round < 40; round++ {
		var a, b, c [32]uint32
		for l := range a {
			a[l] = uint32(randBF16(r)) | uint32(randBF16(r))<<16
			b[l] = uint32(randBF16(r)) | uint32(randBF16(r))<<16
			c[l] = uint32(randBF16(r)) | uint32(randBF16(r))<<16
		}
		mul := laneOp(t, "mul.rn.bf16x2", a, b)
		fma := laneOp(t, "fma.rn.bf16x2", a, b, c)
		for l := range a {
			for h := 0; h < 2; h++ {
				ah, bh, ch := uint16(a[l]>>(16*h)), uint16(b[l]>>(16*h)), uint16(c[l]>>(16*h))
				p := new(big.Float).SetPrec(2000).Mul(exact(ah), exact(bh))
				if want, got := bf16Ref(p), uint16(mul[l]>>(16*h)); got != want {
					t.Errorf("seed %d: mul.rn.bf16 %#04x * %#04x = %#04x, want %#04x", seed, ah, bh, got, want)
				}
				s := new(big.Float).SetPrec(2000).Add(p, exact(ch))
				want := bf16Ref(s)
				if s.Sign() == 0 { // an exact zero sum is +0 unless both terms are -0
					want = 0
					if p.Signbit() && exact(ch).Signbit() {
						want = 0x8000
					}
				}
				if got := uint16(fma[l] >> (16 * h)); got != want {
					t.Errorf("seed %d: fma.rn.bf16 %#04x * %#04x + %#04x = %#04x, want %#04x", seed, ah, bh, ch, got, want)
				}
			}
		}
	}
	// NaN and infinity: Inf*0 is the canonical NaN, Inf*2 stays infinite.
	var a, b [32]uint32
	for l := range a {
		a[l], b[l] = 0x7F80_7F80, 0x4000_0000
	}
	if got := laneOp(t, "mul.rn.bf16x2", a, b)[0]; got != 0x7F80_7FFF {
		t.Errorf("mul.rn.bf16x2 {Inf, Inf} * {0, 2} = %#08x, want 0x7f807fff", got)
	}
}

// TestE4M3DequantSequence reproduces the split-D design's dequantization,
// measured exact on the H200: prmt (selectors 0x9180 and 0xb3a2) puts each e4m3
// byte in the low byte of a bf16 with its sign replicated above, shl 4 and the
// mask 0x87f087f0 move exponent and mantissa into bf16 position (a value
// e4m3 * 2^-120), and mul.rn.bf16x2 by 2^(e-7) gives e4m3 * 2^(e-127) rounded
// once to bf16, subnormal results included.
func TestE4M3DequantSequence(t *testing.T) {
	src := kernel(".param .u64 pin, .param .u64 pout, .param .u32 scale", `
	ld.param.u64 %rd0, [pin];
	ld.param.u64 %rd1, [pout];
	ld.param.u32 %r9, [scale];
	mov.u32 %r0, %tid.x;
	mul.wide.u32 %rd2, %r0, 4;
	add.u64 %rd3, %rd0, %rd2;
	ld.global.u32 %r1, [%rd3];
	prmt.b32 %r2, %r1, 0, 0x9180;
	prmt.b32 %r3, %r1, 0, 0xb3a2;
	shl.b32 %r2, %r2, 4;
	shl.b32 %r3, %r3, 4;
	and.b32 %r2, %r2, 0x87f087f0;
	and.b32 %r3, %r3, 0x87f087f0;
	mul.rn.bf16x2 %r4, %r2, %r9;
	mul.rn.bf16x2 %r5, %r3, %r9;
	mul.wide.u32 %rd4, %r0, 8;
	add.u64 %rd5, %rd1, %rd4;
	st.global.v2.u32 [%rd5], {%r4, %r5};`)
	in := make([]byte, 256)
	for i := range in {
		in[i] = byte(i)
	}
	p := parse(t, src)
	prog, err := Load(p)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []int{0, 1, 7, 100, 120, 127, 134} {
		mem := NewMemory()
		pin := mem.Alloc("in", in)
		pout := mem.Alloc("out", make([]byte, 512))
		h := uint32(e+120) << 7 // bf16 2^(e-7): biased exponent e-7+127
		scale := h | h<<16
		if err := prog.Run("k", Launch{Block: 64, Args: []any{pin, pout, scale}}, mem); err != nil {
			t.Fatal(err)
		}
		out := mem.Bytes("out")
		for v := 0; v < 256; v++ {
			got := uint16(out[2*v]) | uint16(out[2*v+1])<<8
			x := dtype.E4M3(v)
			val := x.F64()
			if x.IsNaN() {
				// The bit sequence has no NaN: 0x7F reads as 1.875 * 2^8.
				val = math.Copysign(480, float64(int8(v)))
			}
			want := bf16Ref(new(big.Float).SetPrec(2000).SetMantExp(big.NewFloat(val), e-127))
			if got != want {
				t.Errorf("e %d byte %#02x (e4m3 %v): bf16 %#04x (%g), want %#04x (%g)", e, v, x.F64(), got,
					dtype.BF16(got).F64(), want, dtype.BF16(want).F64())
			}
		}
	}
}
