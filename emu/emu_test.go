package emu

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ptx"
)

// TestVecAddWarpSum: c = a + b under a bounds predicate, then a warp sum of c with
// shfl.sync.bfly written by lane 0 of each warp.
func TestVecAddWarpSum(t *testing.T) {
	src := kernel(".param .u64 pa, .param .u64 pb, .param .u64 pc, .param .u64 psum, .param .u32 n", `
	ld.param.u64 %rd0, [pa];
	ld.param.u64 %rd1, [pb];
	ld.param.u64 %rd2, [pc];
	ld.param.u64 %rd3, [psum];
	ld.param.u32 %r9, [n];
	mov.u32 %r0, %tid.x;
	mov.u32 %r1, %ctaid.x;
	mov.u32 %r2, %ntid.x;
	mad.lo.u32 %r3, %r1, %r2, %r0;       // global index i
	mul.wide.u32 %rd4, %r3, 4;
	setp.lt.u32 %p0, %r3, %r9;
	mov.f32 %f0, 0f00000000;
	mov.f32 %f1, 0f00000000;
	add.u64 %rd5, %rd0, %rd4;
	@%p0 ld.global.f32 %f0, [%rd5];
	add.u64 %rd6, %rd1, %rd4;
	@%p0 ld.global.nc.f32 %f1, [%rd6];
	add.rn.f32 %f2, %f0, %f1;
	add.u64 %rd7, %rd2, %rd4;
	@%p0 st.global.f32 [%rd7], %f2;
	// warp sum
	mov.b32 %r4, %f2;
	shfl.sync.bfly.b32 %r5, %r4, 16, 31, -1;
	mov.b32 %f3, %r5;
	add.rn.f32 %f2, %f2, %f3;
	mov.b32 %r4, %f2;
	shfl.sync.bfly.b32 %r5, %r4, 8, 31, -1;
	mov.b32 %f3, %r5;
	add.rn.f32 %f2, %f2, %f3;
	mov.b32 %r4, %f2;
	shfl.sync.bfly.b32 %r5, %r4, 4, 31, -1;
	mov.b32 %f3, %r5;
	add.rn.f32 %f2, %f2, %f3;
	mov.b32 %r4, %f2;
	shfl.sync.bfly.b32 %r5|%p1, %r4, 2, 31, -1;
	mov.b32 %f3, %r5;
	add.rn.f32 %f2, %f2, %f3;
	mov.b32 %r4, %f2;
	shfl.sync.bfly.b32 %r4, %r4, 1, 31, -1;   // destination aliases the source
	mov.b32 %f3, %r4;
	add.rn.f32 %f2, %f2, %f3;
	mov.u32 %r6, %laneid;
	setp.eq.u32 %p2, %r6, 0;
	shr.u32 %r7, %r3, 5;                  // global warp index
	mul.wide.u32 %rd8, %r7, 4;
	add.u64 %rd9, %rd3, %rd8;
	@%p2 st.global.f32 [%rd9], %f2;
	ret;`)
	const n, block, grid = 100, 64, 2
	a, b := make([]float32, n), make([]float32, n)
	for i := range a {
		a[i], b[i] = float32(i), float32(2*i)+0.5
	}
	mem := NewMemory()
	pa := mem.Alloc("a", f32Bytes(a))
	pb := mem.Alloc("b", f32Bytes(b))
	pc := mem.Alloc("c", make([]byte, 4*n))
	ps := mem.Alloc("sum", make([]byte, 4*block*grid/32))
	err := run(t, src, Launch{Grid: [3]int{grid}, Block: block, Args: []any{pa, pb, pc, ps, uint32(n)}}, mem)
	if err != nil {
		t.Fatal(err)
	}
	c := bytesF32(mem.Bytes("c"))
	for i := range c {
		if c[i] != a[i]+b[i] {
			t.Fatalf("c[%d] = %v, want %v", i, c[i], a[i]+b[i])
		}
	}
	sums := bytesF32(mem.Bytes("sum"))
	for wi := range sums {
		var want float32
		for i := wi * 32; i < wi*32+32 && i < n; i++ {
			want += a[i] + b[i]
		}
		if sums[wi] != want {
			t.Errorf("warp %d sum = %v, want %v", wi, sums[wi], want)
		}
	}
}

// TestShflModes checks up, down, idx (with a segment) and the validity predicate.
func TestShflModes(t *testing.T) {
	cases := []struct {
		op   string
		want func(l int) (int, bool)
	}{
		{"shfl.sync.up.b32 %r1|%p0, %r0, 3, 0, -1", func(l int) (int, bool) {
			if l-3 >= 0 {
				return l - 3, true
			}
			return l, false
		}},
		{"shfl.sync.down.b32 %r1|%p0, %r0, 5, 31, -1", func(l int) (int, bool) {
			if l+5 <= 31 {
				return l + 5, true
			}
			return l, false
		}},
		// width 8: c = ((32-8)<<8) | 31 ; idx 3 within each segment of 8
		{"shfl.sync.idx.b32 %r1|%p0, %r0, 3, 6175, -1", func(l int) (int, bool) { return l&^7 | 3, true }},
		// down within segments of 8
		{"shfl.sync.down.b32 %r1|%p0, %r0, 2, 6175, -1", func(l int) (int, bool) {
			if l+2 <= l|7 {
				return l + 2, true
			}
			return l, false
		}},
	}
	for _, c := range cases {
		src := kernel(".param .u64 out", `
	ld.param.u64 %rd0, [out];
	mov.u32 %r2, %laneid;
	mul.lo.u32 %r0, %r2, 10;
	add.u32 %r0, %r0, 1000;
	`+c.op+`;
	selp.u32 %r3, 1, 0, %p0;
	mul.wide.u32 %rd1, %r2, 8;
	add.u64 %rd2, %rd0, %rd1;
	st.global.v2.u32 [%rd2], {%r1, %r3};`)
		mem := NewMemory()
		out := mem.Alloc("out", make([]byte, 8*32))
		if err := run(t, src, Launch{Block: 32, Args: []any{out}}, mem); err != nil {
			t.Fatal(err)
		}
		got := bytesU32(mem.Bytes("out"))
		for l := 0; l < 32; l++ {
			j, ok := c.want(l)
			if got[2*l] != uint32(1000+10*j) || (got[2*l+1] == 1) != ok {
				t.Errorf("%s: lane %d got (%d, %d), want (%d, %v)", c.op, l, got[2*l], got[2*l+1], 1000+10*j, ok)
			}
		}
	}
}

func TestCpAsyncZeroFill(t *testing.T) {
	// Thread i copies 16 bytes of src+16i with src-size 16, 16, 5, 0, 0...; thread 3
	// passes a null source pointer, which must not be touched when src-size is 0.
	// Thread 4 uses the ignore-src predicate form. Each thread reads back its
	// neighbour's chunk after the barrier.
	src := kernel(".param .u64 psrc, .param .u64 pout", `
	ld.param.u64 %rd0, [psrc];
	ld.param.u64 %rd1, [pout];
	mov.u32 %r0, %tid.x;
	mov.u32 %r1, smem;
	shl.b32 %r2, %r0, 4;
	add.u32 %r3, %r1, %r2;               // dst
	cvt.u64.u32 %rd2, %r2;
	add.u64 %rd3, %rd0, %rd2;            // src
	setp.lt.u32 %p0, %r0, 2;
	setp.eq.u32 %p1, %r0, 2;
	selp.u32 %r4, 16, 0, %p0;
	selp.u32 %r4, 5, %r4, %p1;
	setp.eq.u32 %p2, %r0, 3;
	selp.b64 %rd3, 0, %rd3, %p2;
	setp.eq.u32 %p3, %r0, 4;
	@!%p3 cp.async.cg.shared.global.L2::128B [%r3], [%rd3], 16, %r4;
	@%p3 cp.async.ca.shared.global [%r3], [%rd3], 16, %p3;
	cp.async.commit_group;
	cp.async.wait_group 0;
	bar.sync 0;
	xor.b32 %r5, %r0, 1;
	shl.b32 %r6, %r5, 4;
	add.u32 %r7, %r1, %r6;
	ld.shared.v4.u32 {%r10, %r11, %r12, %r13}, [%r7];
	mul.wide.u32 %rd4, %r5, 16;
	add.u64 %rd5, %rd1, %rd4;
	st.global.v4.u32 [%rd5], {%r10, %r11, %r12, %r13};`)
	in := make([]byte, 16*8)
	for i := range in {
		in[i] = byte(i + 1)
	}
	mem := NewMemory()
	ps := mem.Alloc("src", in)
	po := mem.Alloc("out", make([]byte, 16*8))
	if err := run(t, src, Launch{Block: 8, SharedBytes: 128, Args: []any{ps, po}}, mem); err != nil {
		t.Fatal(err)
	}
	out := mem.Bytes("out")
	for i := range out {
		chunk, b := i/16, i%16
		want := byte(0)
		if chunk < 2 || chunk == 2 && b < 5 {
			want = in[i]
		}
		if out[i] != want {
			t.Fatalf("out[%d] (thread %d byte %d) = %d, want %d", i, chunk, b, out[i], want)
		}
	}
}

func TestCpAsyncPendingRead(t *testing.T) {
	body := func(wait string) string {
		return `
	ld.param.u64 %rd0, [psrc];
	mov.u32 %r1, smem;
	cp.async.ca.shared.global [%r1], [%rd0], 4;
	cp.async.commit_group;
	cp.async.ca.shared.global [%r1+16], [%rd0+16], 8;
	cp.async.commit_group;
	` + wait + `
	ld.shared.u32 %r2, [%r1];
	ld.shared.u32 %r3, [%r1+20];`
	}
	mem := NewMemory()
	ps := mem.Alloc("src", make([]byte, 64))
	l := Launch{Block: 1, SharedBytes: 64, Args: []any{ps}}
	// No wait at all: the first read hits a pending byte.
	err := run(t, kernel(".param .u64 psrc", body("")), l, mem)
	wantErr(t, err, "ld.shared.u32 %r2, [%r1]", "shared address 0x0", "thread 0", "pending",
		"cp.async.ca.shared.global [%r1], [%rd0], 4", "CTA (0,0,0)")
	// wait_group 1 retires the first group only.
	err = run(t, kernel(".param .u64 psrc", body("cp.async.wait_group 1;")), l, mem)
	wantErr(t, err, "ld.shared.u32 %r3, [%r1+20]", "shared address 0x14", "[%r1+16], [%rd0+16], 8")
	if err := run(t, kernel(".param .u64 psrc", body("cp.async.wait_all;")), l, mem); err != nil {
		t.Fatal(err)
	}
}

// TestCpAsyncWaitGroupN: groups complete in commit order; wait_group N leaves the
// newest N committed groups pending, and copies not yet committed are in no group,
// so no wait_group retires them (wait_all commits them first).
func TestCpAsyncWaitGroupN(t *testing.T) {
	body := func(tail string) string {
		return `
	ld.param.u64 %rd0, [psrc];
	mov.u32 %r1, smem;
	cp.async.ca.shared.global [%r1], [%rd0], 4;         // group 0
	cp.async.commit_group;
	cp.async.ca.shared.global [%r1+4], [%rd0+4], 4;     // group 1
	cp.async.commit_group;
	cp.async.ca.shared.global [%r1+8], [%rd0+8], 4;     // group 2
	cp.async.commit_group;
	cp.async.ca.shared.global [%r1+12], [%rd0+12], 4;   // not committed
` + tail
	}
	mem := NewMemory()
	ps := mem.Alloc("src", make([]byte, 64))
	l := Launch{Block: 1, SharedBytes: 64, Args: []any{ps}}
	for _, c := range []struct {
		wait    string
		ok, bad int // a byte offset that is readable, one still pending (-1: none)
	}{
		{"cp.async.wait_group 3;", -1, 0},
		{"cp.async.wait_group 2;", 0, 4},
		{"cp.async.wait_group 1;", 4, 8},
		{"cp.async.wait_group 0;", 8, 12},
		{"cp.async.wait_all;", 12, -1},
	} {
		if c.ok >= 0 {
			tail := fmt.Sprintf("%s\n\tld.shared.u32 %%r2, [%%r1+%d];", c.wait, c.ok)
			if err := run(t, kernel(".param .u64 psrc", body(tail)), l, mem); err != nil {
				t.Errorf("%s: reading offset %d: %v", c.wait, c.ok, err)
			}
		}
		if c.bad >= 0 {
			tail := fmt.Sprintf("%s\n\tld.shared.u32 %%r2, [%%r1+%d];", c.wait, c.bad)
			err := run(t, kernel(".param .u64 psrc", body(tail)), l, mem)
			wantErr(t, err, "pending", fmt.Sprintf("shared address %#x", c.bad))
		}
	}
}

func TestCpAsyncErrors(t *testing.T) {
	mem := NewMemory()
	ps := mem.Alloc("src", make([]byte, 64))
	l := Launch{Block: 1, SharedBytes: 64, Args: []any{ps}}
	// Source out of bounds with src-size 8 (only the src-size bytes are checked).
	err := run(t, kernel(".param .u64 psrc", `
	ld.param.u64 %rd0, [psrc];
	mov.u32 %r1, smem;
	cp.async.ca.shared.global [%r1], [%rd0+48], 16, 16;
	cp.async.wait_all;
	cp.async.ca.shared.global [%r1+16], [%rd0+64], 16, 8;`), l, mem)
	wantErr(t, err, "[%rd0+64], 16, 8", "global address", "0 bytes past the end of buffer \"src\"")
	// Overlapping pending destination.
	err = run(t, kernel(".param .u64 psrc", `
	ld.param.u64 %rd0, [psrc];
	mov.u32 %r1, smem;
	cp.async.ca.shared.global [%r1], [%rd0], 8;
	cp.async.ca.shared.global [%r1], [%rd0], 4;`), l, mem)
	wantErr(t, err, "cp.async to a byte still pending")
	// src-size larger than cp-size.
	err = run(t, kernel(".param .u64 psrc", `
	ld.param.u64 %rd0, [psrc];
	mov.u32 %r1, smem;
	mov.u32 %r2, 9;
	cp.async.ca.shared.global [%r1], [%rd0], 8, %r2;`), l, mem)
	wantErr(t, err, "src-size 9 exceeds cp-size 8")
	// Refilling a stage that another thread is still reading (no barrier between
	// its read and the refill) is caught when the cp.async is issued.
	err = run(t, kernel(".param .u64 psrc", `
	ld.param.u64 %rd0, [psrc];
	mov.u32 %r0, %tid.x;
	mov.u32 %r1, smem;
	setp.eq.u32 %p0, %r0, 0;
	@%p0 cp.async.ca.shared.global [%r1], [%rd0], 16;
	cp.async.wait_all;
	bar.sync 0;
	setp.eq.u32 %p1, %r0, 1;
	@%p1 ld.shared.u32 %r2, [%r1+4];
	@%p0 cp.async.ca.shared.global [%r1], [%rd0+16], 16;`), Launch{Block: 32, SharedBytes: 64, Args: []any{ps}}, mem)
	wantErr(t, err, "[%r1], [%rd0+16], 16", "thread 0 (warp 0 lane 0)", "shared address 0x4", "thread 1 read this byte with no bar.sync")
}

func TestRaceDetection(t *testing.T) {
	body := func(sync string) string {
		return `
	mov.u32 %r0, %tid.x;
	mov.u32 %r1, smem;
	shl.b32 %r2, %r0, 2;
	add.u32 %r3, %r1, %r2;
	st.shared.u32 [%r3], %r0;
	` + sync + `
	add.u32 %r4, %r0, 1;
	rem.u32 %r4, %r4, 64;
	shl.b32 %r5, %r4, 2;
	add.u32 %r6, %r1, %r5;
	ld.shared.u32 %r7, [%r6];
	` + sync + `
	st.shared.u32 [%r3], %r7;`
	}
	l := Launch{Block: 64, SharedBytes: 256}
	err := run(t, kernel("", body("")), l, nil)
	// Warp 0 runs first: thread 31 reads thread 32's byte before it is written
	// (uninitialised), or with the checker order, thread 0 reads thread 1's write.
	wantErr(t, err, "data race", "ld.shared.u32 %r7, [%r6]", "thread 0 (warp 0 lane 0)", "thread 1 wrote")
	if err := run(t, kernel("", body("bar.sync 0;")), l, nil); err != nil {
		t.Fatal(err)
	}
	// Only the first barrier: the final store races with the neighbour's read.
	err = run(t, kernel("", `
	mov.u32 %r0, %tid.x;
	mov.u32 %r1, smem;
	shl.b32 %r2, %r0, 2;
	add.u32 %r3, %r1, %r2;
	st.shared.u32 [%r3], %r0;
	bar.sync 0;
	add.u32 %r4, %r0, 1;
	rem.u32 %r4, %r4, 64;
	shl.b32 %r5, %r4, 2;
	add.u32 %r6, %r1, %r5;
	ld.shared.u32 %r7, [%r6];
	st.shared.u32 [%r3], %r7;`), l, nil)
	wantErr(t, err, "data race", "st.shared.u32 [%r3], %r7", "read this byte with no bar.sync before this write", "(the read: line ", "`ld.shared.u32 %r7, [%r6];`)")
	// Reading shared memory nobody wrote.
	err = run(t, kernel("", `
	mov.u32 %r1, smem;
	ld.shared.u32 %r7, [%r1+8];`), Launch{Block: 1, SharedBytes: 16}, nil)
	wantErr(t, err, "no thread of this CTA has written", "shared address 0x8")
	if err := run(t, kernel("", `
	mov.u32 %r1, smem;
	ld.shared.u32 %r7, [%r1+8];`), Launch{Block: 1, SharedBytes: 16, AllowUninit: true}, nil); err != nil {
		t.Fatal(err)
	}
	if err := run(t, kernel("", body("")), Launch{Block: 64, SharedBytes: 256, NoRaceCheck: true, AllowUninit: true}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestNonUniformBranch(t *testing.T) {
	src := kernel("", `
	mov.u32 %r0, %tid.x;
	setp.lt.u32 %p0, %r0, 5;
	@%p0 bra.uni L1;
	add.u32 %r1, %r0, 1;
L1:
	ret;`)
	err := run(t, src, Launch{Block: 32}, nil)
	wantErr(t, err, "bra.uni is not uniform", "@%p0 bra.uni L1", "lanes {0,1,2,3,4} true", "warp 0")
	var e *Error
	if !errors.As(err, &e) || e.Line == 0 {
		t.Errorf("error %v has no line", err)
	}
	// A uniform loop is fine.
	src = kernel(".param .u64 out", `
	ld.param.u64 %rd0, [out];
	mov.u32 %r1, 0;
	mov.u32 %r2, 0;
LOOP:
	add.u32 %r2, %r2, %r1;
	add.u32 %r1, %r1, 1;
	setp.lt.u32 %p0, %r1, 10;
	@%p0 bra.uni LOOP;
	mov.u32 %r3, %tid.x;
	mul.wide.u32 %rd1, %r3, 4;
	add.u64 %rd2, %rd0, %rd1;
	st.global.u32 [%rd2], %r2;`)
	mem := NewMemory()
	out := mem.Alloc("out", make([]byte, 4*40))
	if err := run(t, src, Launch{Block: 40, Args: []any{out}}, mem); err != nil {
		t.Fatal(err)
	}
	for i, v := range bytesU32(mem.Bytes("out")) {
		if v != 45 {
			t.Fatalf("out[%d] = %d", i, v)
		}
	}
}

func TestMemoryFaults(t *testing.T) {
	mem := NewMemory()
	p := mem.Alloc("buf", make([]byte, 64))
	cases := []struct {
		body string
		frag []string
	}{
		{"ld.global.v4.u32 {%r0, %r1, %r2, %r3}, [%rd0+4];", []string{"misaligned 16-byte access", "global address", fmt.Sprintf("%#x", p+4)}},
		{"ld.global.u32 %r0, [%rd0+64];", []string{"out of bounds", "0 bytes past the end of buffer \"buf\" (64 bytes)"}},
		{"ld.global.u32 %r0, [%rd0+-4];", []string{"out of bounds", "4 bytes before buffer \"buf\""}},
		{"st.global.u8 [%rd0+100], %r0;", []string{"out of bounds", "36 bytes past the end"}},
		{"mov.u32 %r1, smem; st.shared.u32 [%r1+32], %r0;", []string{"shared address 0x20", "out of bounds", "32 bytes"}},
		{"mov.u32 %r1, smem; st.shared.v2.u32 [%r1+4], {%r0, %r0};", []string{"misaligned 8-byte access"}},
		{"mov.u64 %rd1, 0; ld.u32 %r0, [%rd1];", []string{"out of bounds"}},
	}
	for _, c := range cases {
		src := kernel(".param .u64 pbuf", "\tld.param.u64 %rd0, [pbuf];\n\tmov.u32 %r0, 0;\n\t"+c.body)
		err := run(t, src, Launch{Block: 32, SharedBytes: 32, Args: []any{p}}, mem)
		wantErr(t, err, append(c.frag, "thread 0 (warp 0 lane 0)")...)
	}
	// A false guard makes an access a no-op: no fault.
	src := kernel(".param .u64 pbuf", `
	ld.param.u64 %rd0, [pbuf];
	setp.ne.u32 %p0, 0, 0;
	@%p0 ld.global.u32 %r0, [%rd0+1000];
	@!%p0 bra L;
	ld.global.u32 %r0, [%rd0+1000];
L:
	ret;`)
	if err := run(t, src, Launch{Block: 32, Args: []any{p}}, mem); err != nil {
		t.Fatal(err)
	}
	// Generic addressing reaches shared memory through cvta.
	src = kernel(".param .u64 pbuf", `
	ld.param.u64 %rd0, [pbuf];
	mov.u64 %rd1, smem;
	cvta.shared.u64 %rd2, %rd1;
	mov.u32 %r0, 77;
	st.u32 [%rd2+4], %r0;
	ld.shared.u32 %r1, [smem+4];
	cvta.to.shared.u64 %rd3, %rd2;
	cvt.u32.u64 %r2, %rd3;
	ld.shared.u32 %r3, [%r2+4];
	add.u32 %r1, %r1, %r3;
	cvta.to.global.u64 %rd4, %rd0;
	st.u32 [%rd4], %r1;`)
	if err := run(t, src, Launch{Block: 1, SharedBytes: 16, Args: []any{p}}, mem); err != nil {
		t.Fatal(err)
	}
	if v := bytesU32(mem.Bytes("buf"))[0]; v != 154 {
		t.Errorf("generic store/load gave %d", v)
	}
}

func TestDeadlock(t *testing.T) {
	src := kernel("", `
	mov.u32 %r0, %tid.x;
	setp.ge.u32 %p0, %r0, 32;
	@%p0 exit;
	bar.sync 0;
	ret;`)
	err := run(t, src, Launch{Block: 64}, nil)
	wantErr(t, err, "deadlock", "warp 0 at line 23 `bar.sync 0;`", "32 of 64 threads arrived", "exited warps [1]")
	// A barrier under a divergent guard.
	src = kernel("", `
	mov.u32 %r0, %tid.x;
	setp.ge.u32 %p0, %r0, 16;
	@%p0 bar.sync 0;`)
	wantErr(t, run(t, src, Launch{Block: 64}, nil), "bar: guard is not uniform")
	// Several barriers in a loop over 4 warps work.
	src = kernel("", `
	mov.u32 %r0, 0;
L:
	bar.sync 0;
	barrier.sync.aligned 1, 128;
	add.u32 %r0, %r0, 1;
	setp.lt.u32 %p0, %r0, 5;
	@%p0 bra.uni L;`)
	if err := run(t, src, Launch{Block: 128}, nil); err != nil {
		t.Fatal(err)
	}
}

func TestDecodeErrors(t *testing.T) {
	cases := []struct{ body, frag string }{
		{"frobnicate.u32 %r0, %r1;", "unknown instruction frobnicate.u32"},
		{"add.rz.f32 %f0, %f1, %f2;", "rounding mode .rz"},
		{"add.u32.foo %r0, %r1, %r2;", "unsupported modifier .foo"},
		{"add.u32 %r0, %r1, %q9;", "undeclared register %q9"},
		{"bra NOWHERE;", "undefined label NOWHERE"},
		{"mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%f0, %f1, %f2, %f3}, {%r0, %r1}, {%r2}, {%f0, %f1, %f2, %f3};", "mma shape"},
		{"ld.local.u32 %r0, [%rd0];", ".local is not supported"},
		{"fma.f32 %f0, %f1, %f2, %f3;", "fma.f32 needs .rn"},
	}
	for _, c := range cases {
		src := kernel("", "\tmov.u32 %r0, 0;\n\t"+c.body)
		err := run(t, src, Launch{Block: 32}, nil)
		wantErr(t, err, c.frag, c.body)
		var de *DecodeError
		// Lines are those of the printed module (Module.Print).
		if !errors.As(err, &de) || de.Line != 21 {
			t.Errorf("%q: want a DecodeError on line 21, got %#v", c.body, err)
		}
	}
}

func TestLaunchChecks(t *testing.T) {
	src := kernel(".param .u64 a, .param .u32 n, .param .f32 x", "\tret;")
	l := Launch{Block: 32, Args: []any{uint64(0), uint32(1), float32(2)}}
	if err := run(t, src, l, nil); err != nil {
		t.Fatal(err)
	}
	l.Args = []any{uint64(0), uint64(1), float32(2)}
	wantErr(t, run(t, src, l, nil), "argument 1 (n .u32) has type uint64")
	l.Args = []any{uint64(0), 1}
	wantErr(t, run(t, src, l, nil), "2 arguments for 3 parameters")
}

func TestPartialWarpCollective(t *testing.T) {
	src := kernel("", `
	mov.u32 %r0, %laneid;
	shfl.sync.bfly.b32 %r1, %r0, 1, 31, -1;`)
	wantErr(t, run(t, src, Launch{Block: 20}, nil), "partial warp", "lanes {0,1,2")
	src = kernel("", `
	mov.u32 %r0, %laneid;
	setp.lt.u32 %p0, %r0, 3;
	@%p0 shfl.sync.bfly.b32 %r1, %r0, 1, 31, -1;`)
	wantErr(t, run(t, src, Launch{Block: 32}, nil), "non-uniform guard")
}

func TestMaxWarpInstrs(t *testing.T) {
	src := kernel("", `
L:
	bra.uni L;`)
	wantErr(t, run(t, src, Launch{Block: 32, MaxWarpInstrs: 1000}, nil), "more than 1000 warp instructions")
}

func TestRunKernel(t *testing.T) {
	src := kernel(".param .u64 pin, .param .u64 pout, .param .s32 n", `
	ld.param.u64 %rd0, [pin];
	ld.param.u64 %rd1, [pout];
	mov.u32 %r0, %tid.x;
	mul.wide.u32 %rd2, %r0, 4;
	add.u64 %rd3, %rd0, %rd2;
	ld.global.u32 %r1, [%rd3];
	add.u64 %rd4, %rd1, %rd2;
	st.global.u32 [%rd4], %r1;`)
	m := parse(t, src)
	k := &ptx.Kernel{Module: m, Name: "k", Grid: [3]int{1, 1, 1}, Block: 32, Params: []ptx.KParam{
		{Name: "pin", Kind: "ptr", Elem: "u32", Bytes: 128, Align: 16},
		{Name: "pout", Kind: "ptr", Elem: "u32", Bytes: 128, Align: 16, Written: true},
		{Name: "n", Kind: "i32"},
	}}
	mem := NewMemory()
	vals := make([]uint32, 32)
	for i := range vals {
		vals[i] = uint32(i + 1)
	}
	in := mem.Alloc("in", u32Bytes(vals))
	out := mem.Alloc("out", make([]byte, 128))
	if err := RunKernel(k, []any{in, out, int32(32)}, mem); err != nil {
		t.Fatal(err)
	}
	if got := bytesU32(mem.Bytes("out")); got[31] != 32 {
		t.Fatalf("out = %v", got)
	}
	clear(mem.Bytes("out"))
	small := mem.Alloc("small", make([]byte, 64))
	wantErr(t, RunKernel(k, []any{in, small, int32(32)}, mem), "pout", "128 bytes needed")
	wantErr(t, RunKernel(k, []any{in + 4, out, int32(32)}, mem), "not 16-byte aligned")
	// Strides are bounded by the buffers, as launchers bound them: pin as 8 rows of 4
	// elements, n apart.
	k.Params[0].Run, k.Params[0].Strides = 4, []ptx.StrideDim{{Stride: "n", Count: 8}}
	if err := RunKernel(k, []any{in, out, int32(4)}, mem); err != nil {
		t.Fatalf("dense stride: %v", err)
	}
	wantErr(t, RunKernel(k, []any{in, out, int32(-4)}, mem), "argument pin", "n = -4: want at least 0")
	wantErr(t, RunKernel(k, []any{in, out, int32(0)}, mem), "n = 0: want at least 4")
	wantErr(t, RunKernel(k, []any{in, out, int32(8)}, mem), "argument pin", "its strides reach 240 bytes")
	k.Params[0].Run, k.Params[0].Strides = 0, nil
	clear(mem.Bytes("out"))
	// Swapping the buffers makes the kernel write through a read-only parameter.
	k.Params[0].Written, k.Params[1].Written = true, false
	wantErr(t, RunKernel(k, []any{in, out, int32(32)}, mem), "st.global.u32", "store to buffer \"out\" of read-only parameter pout")
	// Storing the values the buffer already holds (pin and pout both at in) is as
	// wrong (ld.global.nc may read it stale on the GPU); comparing contents after the
	// launch missed it.
	if err := RunKernel(k, []any{in, in, int32(32)}, mem); err == nil || !strings.Contains(err.Error(), "of read-only parameter pout") {
		t.Errorf("a store of unchanged values through a read-only parameter: %v, want it reported", err)
	}
}

// TestRunKernelCopiesNoReadOnlyBuffer: RunKernel once kept a copy of every buffer a
// kernel only reads, to compare after the launch, which doubled the memory of a large
// input; a store is now refused as it happens instead.
func TestRunKernelCopiesNoReadOnlyBuffer(t *testing.T) {
	src := kernel(".param .u64 pin, .param .u64 pout, .param .s32 n", `
	ld.param.u64 %rd0, [pin];
	ld.param.u64 %rd1, [pout];
	ld.global.u32 %r1, [%rd0];
	st.global.u32 [%rd1], %r1;`)
	const inBytes = 16 << 20
	k := &ptx.Kernel{Module: parse(t, src), Name: "k", Grid: [3]int{1, 1, 1}, Block: 32, Params: []ptx.KParam{
		{Name: "pin", Kind: "ptr", Elem: "u32", Bytes: inBytes, Align: 16},
		{Name: "pout", Kind: "ptr", Elem: "u32", Bytes: 4, Align: 16, Written: true},
		{Name: "n", Kind: "i32"},
	}}
	mem := NewMemory()
	in := mem.Alloc("in", make([]byte, inBytes))
	out := mem.Alloc("out", make([]byte, 4))
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := RunKernel(k, []any{in, out, int32(1)}, mem); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got >= inBytes {
		t.Errorf("a launch reading a %d-byte buffer allocated %d bytes, want less than the buffer", inBytes, got)
	}
}

// TestRegisterIndexLeadingZeros: ptxas reads %x07 as %x7 of a .reg range, and so
// does the emulator (hand-written prototypes use such names).
func TestRegisterIndexLeadingZeros(t *testing.T) {
	mem := NewMemory()
	p := mem.Alloc("out", make([]byte, 4))
	src := kernel(".param .u64 pout", `
	ld.param.u64 %rd01, [pout];
	mov.u32 %r07, 5;
	setp.eq.u32 %p03, %r7, 5;
	@%p3 add.u32 %r7, %r007, 2;
	st.global.u32 [%rd1], %r07;`)
	if err := run(t, src, Launch{Block: 1, Args: []any{p}}, mem); err != nil {
		t.Fatal(err)
	}
	if got := bytesU32(mem.Bytes("out"))[0]; got != 7 {
		t.Errorf("out = %d, want 7", got)
	}
}
