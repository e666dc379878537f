package emu

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// decodeLike builds a synthetic kernel shaped like the DeepSeek decode kernel's main
// loop, for one CTA of 256 threads: a two-stage cp.async pipeline (8 KB per stage,
// two 16-byte copies per thread), then per warp and iteration 4 k-steps of
// ldmatrix.x4 (A) + ldmatrix.x4 (two B n8 blocks) + 2 mma.sync, followed by
// softmax-style fma/ex2/max work and a quad shfl reduction.
func decodeLike(iters int) string {
	var ks strings.Builder
	for kk := 0; kk < 4; kk++ {
		fmt.Fprintf(&ks, `
	ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%%r30, %%r31, %%r32, %%r33}, [%%r24+%d];
	ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%%r34, %%r35, %%r36, %%r37}, [%%r25+%d];
	mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%%f0, %%f1, %%f2, %%f3}, {%%r30, %%r31, %%r32, %%r33}, {%%r34, %%r35}, {%%f0, %%f1, %%f2, %%f3};
	mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%%f4, %%f5, %%f6, %%f7}, {%%r30, %%r31, %%r32, %%r33}, {%%r36, %%r37}, {%%f4, %%f5, %%f6, %%f7};`, 32*kk, 32*kk)
	}
	var sm strings.Builder
	for i := 0; i < 8; i++ {
		fmt.Fprintf(&sm, `
	fma.rn.f32 %%f%d, %%f%d, 0f3FB8AA3B, %%f20;
	ex2.approx.ftz.f32 %%f%d, %%f%d;
	max.f32 %%f21, %%f21, %%f%d;
	fma.rn.f32 %%f22, %%f%d, 0f3C000000, %%f22;`, 10+i, i, 10+i, 10+i, 10+i, 10+i)
	}
	return kernel(".param .u64 pg, .param .u64 pout, .param .u32 iters", `
	ld.param.u64 %rd0, [pg];
	ld.param.u64 %rd1, [pout];
	ld.param.u32 %r1, [iters];
	mov.u32 %r2, %tid.x;
	mov.u32 %r3, %laneid;
	mov.u32 %r4, smem;
	// cp.async chunks tid and tid+256 (16 bytes each) of an 8 KB stage
	shl.b32 %r5, %r2, 4;
	cvt.u64.u32 %rd2, %r5;
	add.u64 %rd3, %rd0, %rd2;
	// A lane offset: (l&15)*128 + (l>>4)*16
	and.b32 %r6, %r3, 15;
	shl.b32 %r6, %r6, 7;
	shr.u32 %r7, %r3, 4;
	shl.b32 %r7, %r7, 4;
	add.u32 %r20, %r6, %r7;
	// B lane offset: (16 + (l&7) + ((l>>4)&1)*8)*128 + ((l>>3)&1)*16
	and.b32 %r8, %r3, 7;
	shr.u32 %r9, %r3, 4;
	and.b32 %r9, %r9, 1;
	shl.b32 %r9, %r9, 3;
	add.u32 %r8, %r8, %r9;
	add.u32 %r8, %r8, 16;
	shl.b32 %r8, %r8, 7;
	shr.u32 %r10, %r3, 3;
	and.b32 %r10, %r10, 1;
	shl.b32 %r10, %r10, 4;
	add.u32 %r22, %r8, %r10;
	mov.f32 %f0, 0f00000000;
	mov.f32 %f1, 0f00000000;
	mov.f32 %f2, 0f00000000;
	mov.f32 %f3, 0f00000000;
	mov.f32 %f4, 0f00000000;
	mov.f32 %f5, 0f00000000;
	mov.f32 %f6, 0f00000000;
	mov.f32 %f7, 0f00000000;
	mov.f32 %f20, 0fBF800000;
	mov.f32 %f21, 0fFF800000;
	mov.f32 %f22, 0f00000000;
	// prologue: stage 0
	add.u32 %r11, %r4, %r5;
	cp.async.cg.shared.global [%r11], [%rd3], 16;
	cp.async.cg.shared.global [%r11+4096], [%rd3+4096], 16;
	cp.async.commit_group;
	mov.u32 %r12, 0;
LOOP:
	// issue stage (i+1)&1 from global offset ((i+1)*8192) mod 65536
	add.u32 %r13, %r12, 1;
	and.b32 %r14, %r13, 1;
	shl.b32 %r14, %r14, 13;
	add.u32 %r15, %r11, %r14;
	and.b32 %r16, %r13, 7;
	shl.b32 %r16, %r16, 13;
	cvt.u64.u32 %rd4, %r16;
	add.u64 %rd5, %rd3, %rd4;
	cp.async.cg.shared.global.L2::128B [%r15], [%rd5], 16;
	cp.async.cg.shared.global.L2::128B [%r15+4096], [%rd5+4096], 16;
	cp.async.commit_group;
	cp.async.wait_group 1;
	bar.sync 0;
	and.b32 %r17, %r12, 1;
	shl.b32 %r17, %r17, 13;
	add.u32 %r18, %r4, %r17;
	add.u32 %r24, %r18, %r20;
	add.u32 %r25, %r18, %r22;`+ks.String()+sm.String()+`
	mov.b32 %r40, %f21;
	shfl.sync.bfly.b32 %r41, %r40, 1, 31, -1;
	mov.b32 %f23, %r41;
	max.f32 %f21, %f21, %f23;
	mov.b32 %r40, %f22;
	shfl.sync.bfly.b32 %r41, %r40, 2, 31, -1;
	mov.b32 %f23, %r41;
	add.rn.f32 %f22, %f22, %f23;
	bar.sync 0;
	add.u32 %r12, %r12, 1;
	setp.lt.u32 %p0, %r12, %r1;
	@%p0 bra.uni LOOP;
	cp.async.wait_all;
	mul.wide.u32 %rd6, %r2, 16;
	add.u64 %rd7, %rd1, %rd6;
	st.global.v4.f32 [%rd7], {%f0, %f5, %f21, %f22};`)
}

func runDecodeLike(tb testing.TB, iters int) time.Duration {
	m := parse(tb, decodeLike(iters))
	p, err := Load(m)
	if err != nil {
		tb.Fatal(err)
	}
	g := make([]byte, 65536+8192)
	for i := range g {
		g[i] = byte(i*7) & 0x3F // small positive bf16 halves
	}
	mem := NewMemory()
	pg := mem.Alloc("g", g)
	po := mem.Alloc("out", make([]byte, 16*256))
	start := time.Now()
	if err := p.Run("k", Launch{Block: 256, SharedBytes: 16384, Args: []any{pg, po, uint32(iters)}}, mem); err != nil {
		tb.Fatal(err)
	}
	return time.Since(start)
}

func TestDecodeLikeRuns(t *testing.T) { runDecodeLike(t, 20) }

// BenchmarkDecodeLike emulates one CTA (8 warps) of 2500 iterations: 20k mma.sync
// per warp, about 150k instructions per thread.
//
//	go test ./emu -run '^$' -bench DecodeLike -benchtime 3x
func BenchmarkDecodeLike(b *testing.B) {
	const iters = 2500
	for i := 0; i < b.N; i++ {
		runDecodeLike(b, iters)
	}
	b.ReportMetric(float64(8*8*iters*b.N)/b.Elapsed().Seconds(), "mma/s")
}
