package emu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/ptxgen/ptxgen/dtype"
)

// mmaFragKernel loads A (16 rows of 32 bytes, row-major), B (8 columns of 32 bytes,
// i.e. [n][k]) and C (16x8 f32, row-major) into registers with the fragment formulas
// of ptx.md 2.1/2.2, runs op and stores D like C. For bf16/f16 m16n8k16 and for
// 8-bit m16n8k32 the byte offsets coincide: register i of a lane covers 4 bytes at
// row g (+8), byte 4t (+16).
func mmaFragKernel(op string) string {
	return kernel(".param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 pd", `
	ld.param.u64 %rd0, [pa];
	ld.param.u64 %rd1, [pb];
	ld.param.u64 %rd2, [pc];
	ld.param.u64 %rd3, [pd];
	mov.u32 %r0, %laneid;
	shr.u32 %r1, %r0, 2;            // g
	and.b32 %r2, %r0, 3;            // t
	shl.b32 %r3, %r1, 5;            // 32g
	shl.b32 %r4, %r2, 2;            // 4t
	add.u32 %r5, %r3, %r4;
	cvt.u64.u32 %rd4, %r5;
	add.u64 %rd5, %rd0, %rd4;
	ld.global.b32 %r10, [%rd5];     // A0: row g
	ld.global.b32 %r11, [%rd5+256]; // A1: row g+8
	ld.global.b32 %r12, [%rd5+16];  // A2: row g, second k half
	ld.global.b32 %r13, [%rd5+272]; // A3
	add.u64 %rd6, %rd1, %rd4;
	ld.global.b32 %r14, [%rd6];     // B0: column g
	ld.global.b32 %r15, [%rd6+16];  // B1
	shl.b32 %r6, %r2, 3;            // 8t = byte offset of C[g][2t]
	add.u32 %r7, %r3, %r6;
	cvt.u64.u32 %rd7, %r7;
	add.u64 %rd8, %rd2, %rd7;
	ld.global.v2.f32 {%f0, %f1}, [%rd8];
	ld.global.v2.f32 {%f2, %f3}, [%rd8+256];
	`+op+` {%f4, %f5, %f6, %f7}, {%r10, %r11, %r12, %r13}, {%r14, %r15}, {%f0, %f1, %f2, %f3};
	add.u64 %rd9, %rd3, %rd7;
	st.global.v2.f32 [%rd9], {%f4, %f5};
	st.global.v2.f32 [%rd9+256], {%f6, %f7};`)
}

func runMMA(t *testing.T, op string, a, b []byte, c []float32) []float32 {
	t.Helper()
	mem := NewMemory()
	pa := mem.Alloc("a", a)
	pb := mem.Alloc("b", b)
	pc := mem.Alloc("c", f32Bytes(c))
	pd := mem.Alloc("d", make([]byte, 4*128))
	if err := run(t, mmaFragKernel(op), Launch{Block: 32, Args: []any{pa, pb, pc, pd}}, mem); err != nil {
		t.Fatal(err)
	}
	return bytesF32(mem.Bytes("d"))
}

func TestMMA16816(t *testing.T) {
	for _, typ := range []string{"bf16", "f16"} {
		enc := func(x float64) uint16 { return uint16(dtype.BF16FromF64(x)) }
		if typ == "f16" {
			enc = func(x float64) uint16 { return uint16(dtype.F16FromF32(float32(x))) }
		}
		// Distinct, exactly representable values; every product and sum is exact.
		var A [16][16]float64
		var B [16][8]float64
		var C [16][8]float64
		for i := range A {
			for k := range A[i] {
				A[i][k] = float64(i*16+k) - 128
			}
		}
		for k := range B {
			for j := range B[k] {
				B[k][j] = (float64(k*8+j) - 64) / 4
			}
		}
		for i := range C {
			for j := range C[i] {
				C[i][j] = float64(i*8+j) * 0.5
			}
		}
		a := make([]uint16, 256) // row-major 16x16
		b := make([]uint16, 128) // [n][k] 8x16
		c := make([]float32, 128)
		for i := range A {
			for k := range A[i] {
				a[i*16+k] = enc(A[i][k])
			}
		}
		for k := range B {
			for j := range B[k] {
				b[j*16+k] = enc(B[k][j])
			}
		}
		for i := range C {
			for j := range C[i] {
				c[i*8+j] = float32(C[i][j])
			}
		}
		op := fmt.Sprintf("mma.sync.aligned.m16n8k16.row.col.f32.%s.%s.f32", typ, typ)
		d := runMMA(t, op, u16Bytes(a), u16Bytes(b), c)
		for i := 0; i < 16; i++ {
			for j := 0; j < 8; j++ {
				want := C[i][j]
				for k := 0; k < 16; k++ {
					want += A[i][k] * B[k][j]
				}
				if float64(d[i*8+j]) != want {
					t.Errorf("%s D[%d][%d] = %v, want %v", typ, i, j, d[i*8+j], want)
				}
			}
		}
	}
}

func TestMMA16832FP8(t *testing.T) {
	// e4m3 and e5m2 values (e5m2 is the upper byte of a binary16), NaN and Inf excluded.
	val := map[string]func(b byte) float64{
		"e4m3": func(b byte) float64 { return dtype.E4M3(b).F64() },
		"e5m2": func(b byte) float64 { return dtype.F16(uint16(b) << 8).F64() },
	}
	for _, types := range [][2]string{{"e4m3", "e4m3"}, {"e5m2", "e4m3"}, {"e4m3", "e5m2"}, {"e5m2", "e5m2"}} {
		rng := rand.New(rand.NewPCG(1, 2))
		code := func(typ string) byte {
			for {
				b := byte(rng.IntN(256))
				if v := val[typ](b); !math.IsNaN(v) && !math.IsInf(v, 0) {
					return b
				}
			}
		}
		var A [16][32]float64
		var B [32][8]float64
		a := make([]byte, 16*32)
		b := make([]byte, 8*32)
		c := make([]float32, 128)
		for i := range A {
			for k := range A[i] {
				a[i*32+k] = code(types[0])
				A[i][k] = val[types[0]](a[i*32+k])
			}
		}
		for k := range B {
			for j := range B[k] {
				b[j*32+k] = code(types[1])
				B[k][j] = val[types[1]](b[j*32+k])
			}
		}
		for i := range c {
			c[i] = float32(i) - 60
		}
		op := fmt.Sprintf("mma.sync.aligned.m16n8k32.row.col.f32.%s.%s.f32", types[0], types[1])
		d := runMMA(t, op, a, b, c)
		for i := 0; i < 16; i++ {
			for j := 0; j < 8; j++ {
				want, mag := float64(c[i*8+j]), math.Abs(float64(c[i*8+j]))
				for k := 0; k < 32; k++ {
					p := A[i][k] * B[k][j]
					want += p
					mag += math.Abs(p)
				}
				if got := float64(d[i*8+j]); math.Abs(got-want) > 1e-6*mag {
					t.Errorf("%s: D[%d][%d] = %v, want %v", op, i, j, got, want)
				}
			}
		}
	}
}

// TestLdmatrix loads 4 matrices of 8 rows (row pitch 48 bytes, so rows are not
// contiguous) with lane l pointing at physical row perm[l], and checks every output
// register against the layouts of ptx.md 2.3.
func TestLdmatrix(t *testing.T) {
	const pitch = 48
	perm := rand.New(rand.NewPCG(3, 4)).Perm(32)
	permBytes := make([]uint32, 32)
	for i, p := range perm {
		permBytes[i] = uint32(p * pitch)
	}
	val := func(row, col int) uint16 { return uint16(row*100 + col + 1) }
	smem := make([]uint16, 32*pitch/2)
	for r := 0; r < 32; r++ {
		for c := 0; c < pitch/2; c++ {
			smem[r*pitch/2+c] = val(r, c)
		}
	}
	for _, num := range []int{1, 2, 4} {
		for _, trans := range []bool{false, true} {
			op := fmt.Sprintf("ldmatrix.sync.aligned.m8n8.x%d", num)
			if trans {
				op += ".trans"
			}
			op += ".shared.b16"
			regs := "{%r20"
			for j := 1; j < num; j++ {
				regs += fmt.Sprintf(", %%r%d", 20+j)
			}
			regs += "}"
			var stores string
			for j := 0; j < num; j++ {
				stores += fmt.Sprintf("\tst.global.u32 [%%rd6+%d], %%r%d;\n", 128*j, 20+j)
			}
			src := kernel(".param .u64 psm, .param .u64 pperm, .param .u64 pout", `
	ld.param.u64 %rd0, [psm];
	ld.param.u64 %rd1, [pperm];
	ld.param.u64 %rd2, [pout];
	mov.u32 %r0, %laneid;
	mov.u32 %r1, smem;
	// copy the table into shared memory: 12 words per lane
	mov.u32 %r2, 0;
COPY:
	mad.lo.u32 %r3, %r2, 32, %r0;
	shl.b32 %r4, %r3, 2;
	cvt.u64.u32 %rd3, %r4;
	add.u64 %rd4, %rd0, %rd3;
	ld.global.u32 %r5, [%rd4];
	add.u32 %r6, %r1, %r4;
	st.shared.u32 [%r6], %r5;
	add.u32 %r2, %r2, 1;
	setp.lt.u32 %p0, %r2, 12;
	@%p0 bra.uni COPY;
	bar.sync 0;
	mul.wide.u32 %rd5, %r0, 4;
	add.u64 %rd7, %rd1, %rd5;
	ld.global.u32 %r7, [%rd7];
	add.u32 %r8, %r1, %r7;
	`+op+` `+regs+`, [%r8];
	add.u64 %rd6, %rd2, %rd5;
`+stores)
			mem := NewMemory()
			psm := mem.Alloc("smem", u16Bytes(smem))
			pp := mem.Alloc("perm", u32Bytes(permBytes))
			po := mem.Alloc("out", make([]byte, 4*32*num))
			if err := run(t, src, Launch{Block: 32, SharedBytes: len(smem) * 2, Args: []any{psm, pp, po}}, mem); err != nil {
				t.Fatal(err)
			}
			out := bytesU32(mem.Bytes("out"))
			for j := 0; j < num; j++ {
				// M_j[r][c] is halfword c of the row lane 8j+r points at.
				M := func(r, c int) uint16 { return val(perm[8*j+r], c) }
				for l := 0; l < 32; l++ {
					g, tt := l>>2, l&3
					var lo, hi uint16
					if trans {
						lo, hi = M(2*tt, g), M(2*tt+1, g)
					} else {
						lo, hi = M(g, 2*tt), M(g, 2*tt+1)
					}
					if got := out[32*j+l]; got != uint32(lo)|uint32(hi)<<16 {
						t.Errorf("%s: reg %d lane %d = %#x, want %#x", op, j, l, got, uint32(lo)|uint32(hi)<<16)
					}
				}
			}
		}
	}
	// A misaligned row address is an error.
	src := kernel("", `
	mov.u32 %r1, smem;
	mov.u32 %r0, %laneid;
	shl.b32 %r2, %r0, 4;
	add.u32 %r3, %r1, %r2;
	st.shared.v4.u32 [%r3], {%r0, %r0, %r0, %r0};
	bar.sync 0;
	add.u32 %r3, %r3, 8;
	ldmatrix.sync.aligned.m8n8.x1.shared.b16 {%r4}, [%r3];`)
	wantErr(t, run(t, src, Launch{Block: 32, SharedBytes: 1024}, nil), "misaligned 16-byte access", "shared address 0x8")
}

// TestLdmatrixMMARecipes runs the decode-kernel recipes of ptx.md 2.5: A from a
// row-major tile with ldmatrix.x4, B from K[token][dim] with ldmatrix.x2 (S = Q·Kᵀ)
// and from V[token][dim] with ldmatrix.x2.trans (O = P·V), then mma, against float64.
func TestLdmatrixMMARecipes(t *testing.T) {
	var Q [16][16]float64 // [m][k]
	var K [8][16]float64  // [n][k]
	var V [16][8]float64  // [k][n]
	for i := range Q {
		for k := range Q[i] {
			Q[i][k] = float64((i*16+k)%61) - 30
		}
	}
	for n := range K {
		for k := range K[n] {
			K[n][k] = float64((n*16+k)%37) - 18
			V[k][n] = float64((k*8+n)%41) - 20
		}
	}
	// smem layout: Q at 0 (pitch 32 B), K at 512 (pitch 32 B), V at 768 (pitch 16 B).
	sm := make([]uint16, 1024/2)
	for i := range Q {
		for k := range Q[i] {
			sm[i*16+k] = uint16(dtype.BF16FromF64(Q[i][k]))
		}
	}
	for n := range K {
		for k := range K[n] {
			sm[256+n*16+k] = uint16(dtype.BF16FromF64(K[n][k]))
			sm[384+k*8+n] = uint16(dtype.BF16FromF64(V[k][n]))
		}
	}
	src := kernel(".param .u64 psm, .param .u64 pout", `
	ld.param.u64 %rd0, [psm];
	ld.param.u64 %rd1, [pout];
	mov.u32 %r0, %laneid;
	mov.u32 %r1, smem;
	mov.u32 %r2, 0;
COPY:
	mad.lo.u32 %r3, %r2, 32, %r0;
	shl.b32 %r4, %r3, 2;
	cvt.u64.u32 %rd3, %r4;
	add.u64 %rd4, %rd0, %rd3;
	ld.global.u32 %r5, [%rd4];
	add.u32 %r6, %r1, %r4;
	st.shared.u32 [%r6], %r5;
	add.u32 %r2, %r2, 1;
	setp.lt.u32 %p0, %r2, 8;
	@%p0 bra.uni COPY;
	bar.sync 0;
	// A: &Q[l&15][(l>>4)*8]
	and.b32 %r7, %r0, 15;
	shl.b32 %r7, %r7, 5;
	shr.u32 %r8, %r0, 4;
	shl.b32 %r8, %r8, 4;
	add.u32 %r9, %r7, %r8;
	add.u32 %r9, %r9, %r1;
	ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r10, %r11, %r12, %r13}, [%r9];
	// B for Q·Kᵀ: &K[l&7][((l>>3)&1)*8]
	and.b32 %r14, %r0, 7;
	shl.b32 %r14, %r14, 5;
	shr.u32 %r15, %r0, 3;
	and.b32 %r15, %r15, 1;
	shl.b32 %r15, %r15, 4;
	add.u32 %r16, %r14, %r15;
	add.u32 %r16, %r16, %r1;
	ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%r17, %r18}, [%r16+512];
	// B for P·V: &V[(l&7) + ((l>>3)&1)*8][0]
	and.b32 %r19, %r0, 15;
	shl.b32 %r19, %r19, 4;
	add.u32 %r19, %r19, %r1;
	ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%r20, %r21}, [%r19+768];
	mov.f32 %f0, 0f00000000;
	mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f4, %f5, %f6, %f7}, {%r10, %r11, %r12, %r13}, {%r17, %r18}, {%f0, %f0, %f0, %f0};
	mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f8, %f9, %f10, %f11}, {%r10, %r11, %r12, %r13}, {%r20, %r21}, {%f0, %f0, %f0, %f0};
	// D fragments out: c0 = D[g][2t] ...; 16x8 f32 row-major, two outputs
	shr.u32 %r22, %r0, 2;
	and.b32 %r23, %r0, 3;
	shl.b32 %r22, %r22, 5;
	shl.b32 %r23, %r23, 3;
	add.u32 %r24, %r22, %r23;
	cvt.u64.u32 %rd5, %r24;
	add.u64 %rd6, %rd1, %rd5;
	st.global.v2.f32 [%rd6], {%f4, %f5};
	st.global.v2.f32 [%rd6+256], {%f6, %f7};
	st.global.v2.f32 [%rd6+512], {%f8, %f9};
	st.global.v2.f32 [%rd6+768], {%f10, %f11};`)
	mem := NewMemory()
	psm := mem.Alloc("sm", u16Bytes(sm))
	po := mem.Alloc("out", make([]byte, 2*4*128))
	if err := run(t, src, Launch{Block: 32, SharedBytes: 1024, Args: []any{psm, po}}, mem); err != nil {
		t.Fatal(err)
	}
	out := bytesF32(mem.Bytes("out"))
	for i := 0; i < 16; i++ {
		for j := 0; j < 8; j++ {
			var s, o float64
			for k := 0; k < 16; k++ {
				s += Q[i][k] * K[j][k]
				o += Q[i][k] * V[k][j]
			}
			if float64(out[i*8+j]) != s {
				t.Errorf("S[%d][%d] = %v, want %v", i, j, out[i*8+j], s)
			}
			if float64(out[128+i*8+j]) != o {
				t.Errorf("O[%d][%d] = %v, want %v", i, j, out[128+i*8+j], o)
			}
		}
	}
}

// TestStmatrix stores 4 fragments with stmatrix (sm_90) and checks the shared
// memory image against the ldmatrix layout it inverts.
func TestStmatrix(t *testing.T) {
	for _, trans := range []bool{false, true} {
		op := "stmatrix.sync.aligned.m8n8.x4.shared.b16"
		if trans {
			op = "stmatrix.sync.aligned.m8n8.x4.trans.shared.b16"
		}
		src := kernel(".param .u64 pout", `
	ld.param.u64 %rd0, [pout];
	mov.u32 %r0, %laneid;
	mov.u32 %r1, smem;
	shl.b32 %r2, %r0, 1;              // lo = j<<8 | 2l, hi = lo | 1
	or.b32 %r3, %r2, 1;
	shl.b32 %r3, %r3, 16;
	or.b32 %r10, %r2, %r3;
	or.b32 %r11, %r10, 0x01000100;
	or.b32 %r12, %r10, 0x02000200;
	or.b32 %r13, %r10, 0x03000300;
	shl.b32 %r4, %r0, 4;
	add.u32 %r5, %r1, %r4;
	`+op+` [%r5], {%r10, %r11, %r12, %r13};
	bar.sync 0;
	ld.shared.v4.u32 {%r20, %r21, %r22, %r23}, [%r5];
	mul.wide.u32 %rd1, %r0, 16;
	add.u64 %rd2, %rd0, %rd1;
	st.global.v4.u32 [%rd2], {%r20, %r21, %r22, %r23};`)
		mem := NewMemory()
		po := mem.Alloc("out", make([]byte, 512))
		if err := run(t, src, Launch{Block: 32, SharedBytes: 512, Args: []any{po}}, mem); err != nil {
			t.Fatal(err)
		}
		out := mem.Bytes("out")
		for j := 0; j < 4; j++ {
			for r := 0; r < 8; r++ {
				for c := 0; c < 8; c++ {
					got := uint16(out[2*((8*j+r)*8+c)]) | uint16(out[2*((8*j+r)*8+c)+1])<<8
					// Which lane and half holds M_j[r][c]?
					lane, half := r*4+c/2, c%2
					if trans {
						lane, half = c*4+r/2, r%2
					}
					want := uint16(j<<8 | 2*lane | half)
					if got != want {
						t.Errorf("%s: matrix %d [%d][%d] = %#x, want %#x", op, j, r, c, got, want)
					}
				}
			}
		}
	}
}
