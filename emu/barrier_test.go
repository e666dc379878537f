package emu

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// Named barriers: each planted protocol bug is reported with the kernel, the
// barrier and the warps; the correct producer/consumer ring runs clean.

// roles wraps per-role bodies: warp index in %r0, lane in %r1, then a branch per
// warp group (warps below split run first, the others second).
func roles(split int, first, second string) string {
	return kernel("", `
	mov.u32 %r1, %tid.x;
	shr.u32 %r0, %r1, 5;
	and.b32 %r1, %r1, 31;
	mov.u32 %r2, smem;
	setp.ge.u32 %p7, %r0, `+strconv.Itoa(split)+`;
	@%p7 bra.uni SECOND;
`+first+`
	ret;
SECOND:
`+second+`
	ret;`)
}

func TestBarrierDeadlock(t *testing.T) {
	// Warp 1 waits for 64 threads at barrier 1; warp 0 goes to barrier 2.
	src := roles(1, "\tbar.sync 2, 64;", "\tbar.sync 1, 64;")
	err := run(t, src, Launch{Block: 64}, nil)
	wantErr(t, err, "emu: k", "deadlock", "warp 1 at line", "`bar.sync 1, 64;` waits at barrier 1 (32 of 64 threads arrived: warps [1])",
		"`bar.sync 2, 64;` waits at barrier 2 (32 of 64 threads arrived: warps [0])")
	// Warp 2 exits instead of arriving: the 96-thread barrier never completes.
	src = roles(1, "\tbar.arrive 1, 96;", "\tsetp.eq.u32 %p1, %r0, 2;\n\t@%p1 ret;\n\tbar.sync 1, 96;")
	wantErr(t, run(t, src, Launch{Block: 96}, nil), "deadlock", "64 of 96 threads arrived: warps [0 1]", "exited warps [0 2]")
	// A count no CTA of this size can reach is refused at the arrival.
	src = roles(1, "\tbar.arrive 1, 96;", "\tbar.sync 1, 96;")
	wantErr(t, run(t, src, Launch{Block: 64}, nil), "warp 0", "barrier 1: thread count 96, want a multiple of 32 in 32..64 (the CTA's 2 warps)")
}

func TestBarrierCountMismatch(t *testing.T) {
	src := roles(1, "\tbar.arrive 1, 64;", "\tbar.sync 1, 96;")
	err := run(t, src, Launch{Block: 96}, nil)
	wantErr(t, err, "emu: k", "warp 1", "`bar.sync 1, 96;`", "barrier 1: thread count 96, but this generation counts 64", "warp 0 at line", "`bar.arrive 1, 64;`")
}

func TestBarrierArriveTwice(t *testing.T) {
	src := roles(1, "\tbar.arrive 1, 64;\n\tbar.arrive 1, 64;", "\tbar.sync 1, 64;")
	err := run(t, src, Launch{Block: 64}, nil)
	wantErr(t, err, "emu: k", "warp 0", "barrier 1: warp 0 arrives again before the barrier completes", "32 of 64 threads arrived: warps [0]")
}

// TestBarrierFlashInferHang plants FlashInfer's sm_120 prefill hang (PR #4732):
// four producer warps arrive with 256 threads against four consumer warps that
// sync with 128. A producer warp arrives for its next tile before the consumers
// reach the barrier, the second arrival in one generation.
func TestBarrierFlashInferHang(t *testing.T) {
	producer := `
	mov.u32 %r3, 0;
PLOOP:
	bar.arrive 1, 256;
	add.u32 %r3, %r3, 1;
	setp.lt.u32 %p0, %r3, 2;
	@%p0 bra.uni PLOOP;`
	consumer := `
	mov.u32 %r3, 0;
CLOOP:
	bar.sync 1, 128;
	add.u32 %r3, %r3, 1;
	setp.lt.u32 %p0, %r3, 2;
	@%p0 bra.uni CLOOP;`
	err := run(t, roles(4, producer, consumer), Launch{Block: 256}, nil)
	wantErr(t, err, "barrier 1: warp 0 arrives again before the barrier completes", "`bar.arrive 1, 256;`")
	// The consumers first: they complete the 128-thread barrier among themselves,
	// then a producer's 256 meets a generation that counts 128.
	err = run(t, roles(4, consumer, producer), Launch{Block: 256}, nil)
	wantErr(t, err, "barrier 1: thread count 256, but this generation counts 128")
}

func TestBarrierPartialAtExit(t *testing.T) {
	src := roles(1, "\tbar.arrive 3, 64;", "")
	err := run(t, src, Launch{Block: 64}, nil)
	wantErr(t, err, "emu: k", "the CTA exits with a barrier partially arrived", "barrier 3: 32 of 64 threads arrived (warp 0 at line", "`bar.arrive 3, 64;`")
	var warned []string
	l := Launch{Block: 64, Warn: func(e *Error) { warned = append(warned, e.Error()) }}
	if err := run(t, src, l, nil); err != nil {
		t.Fatalf("with Warn set: %v", err)
	}
	if len(warned) != 1 || !strings.Contains(warned[0], "barrier 3") {
		t.Errorf("warnings %q, want one naming barrier 3", warned)
	}
}

// TestNamedBarrierOrdersOnlyItsWarps: a barrier orders the warps that take part
// in it. Warp 0 writes and syncs with warp 1 on barrier 1; warp 2, which only
// passes barrier 2 on its own, reads the byte unordered: a race, though
// barriers completed in between.
func TestNamedBarrierOrdersOnlyItsWarps(t *testing.T) {
	src := kernel("", `
	mov.u32 %r1, %tid.x;
	shr.u32 %r0, %r1, 5;
	mov.u32 %r2, smem;
	setp.eq.u32 %p0, %r0, 0;
	setp.eq.u32 %p1, %r1, 0;
	setp.eq.u32 %p2, %r0, 2;
	@%p2 bra.uni READER;
	@%p1 st.shared.u32 [%r2], %r1;
	bar.sync 1, 64;
	ld.shared.u32 %r3, [%r2];            // warp 1 reads after barrier 1: fine
	ret;
READER:
	bar.sync 2, 32;
	ld.shared.u32 %r3, [%r2];
	ret;`)
	err := run(t, src, Launch{Block: 96, SharedBytes: 16}, nil)
	wantErr(t, err, "data race", "thread 64 (warp 2 lane 0)", "thread 0 wrote this byte", "(the write: line 27 `@%p1 st.shared.u32 [%r2], %r1;`)")
	// Warp 2 on barrier 1 too (96 threads): ordered, no race.
	ok := strings.Replace(strings.Replace(src, "bar.sync 2, 32;", "bar.sync 1, 96;", 1), "bar.sync 1, 64;", "bar.sync 1, 96;", 1)
	if err := run(t, ok, Launch{Block: 96, SharedBytes: 16}, nil); err != nil {
		t.Fatal(err)
	}
}

// TestBarWarpSyncOrdersLanes: within a warp, a lane reading what another lane
// wrote needs bar.warp.sync (or a barrier) between.
func TestBarWarpSyncOrdersLanes(t *testing.T) {
	body := func(sync string) string {
		return kernel("", `
	mov.u32 %r1, %tid.x;
	mov.u32 %r2, smem;
	shl.b32 %r3, %r1, 2;
	add.u32 %r4, %r2, %r3;
	st.shared.u32 [%r4], %r1;
	`+sync+`
	xor.b32 %r5, %r3, 4;
	add.u32 %r6, %r2, %r5;
	ld.shared.u32 %r7, [%r6];`)
	}
	wantErr(t, run(t, body(""), Launch{Block: 32, SharedBytes: 128}, nil), "data race", "thread 1 wrote this byte")
	if err := run(t, body("bar.warp.sync -1;"), Launch{Block: 32, SharedBytes: 128}, nil); err != nil {
		t.Fatal(err)
	}
}

// ringKernel is a producer/consumer kernel: warp 0 gathers tile t of 512 bytes
// with cp.async into slot t%3 of a ring in shared memory and arrives at FULL[s]
// (barrier 1+s); warps 1..4 sync on FULL[s], each lane adds its word of the tile
// to a running sum, and arrive at EMPTY[s] (barrier 4+s) when the producer will
// refill the slot; the producer syncs on EMPTY[s] before it does. Each barrier
// counts 160 threads, the five warps. The producer keeps two tiles in flight:
// it waits for tile t with cp.async.wait_group 1 after issuing tile t+1.
// skipEmpty drops the producer's EMPTY wait (the planted bug).
func ringKernel(skipEmpty bool) string {
	empty := `
	@%p1 bar.sync %r12, 160;          // EMPTY[s]: the consumers are done with the slot`
	if skipEmpty {
		empty = ""
	}
	return kernel(".param .u64 pin, .param .u64 pout, .param .u32 ntiles", `
	ld.param.u64 %rd0, [pin];
	ld.param.u64 %rd1, [pout];
	ld.param.u32 %r9, [ntiles];
	mov.u32 %r1, %tid.x;
	shr.u32 %r0, %r1, 5;              // warp
	and.b32 %r1, %r1, 31;             // lane
	mov.u32 %r2, smem;
	setp.ne.u32 %p7, %r0, 0;
	@%p7 bra.uni CONSUMER;
	// Producer: issue tile t (t < ntiles), then publish tile t-1.
	mov.u32 %r3, 0;
PLOOP:
	setp.lt.u32 %p0, %r3, %r9;
	rem.u32 %r10, %r3, 3;             // slot of tile t
	add.u32 %r12, %r10, 4;            // EMPTY[s]
	setp.ge.u32 %p1, %r3, 3;
	and.pred %p1, %p1, %p0;`+empty+`
	mul.lo.u32 %r4, %r10, 512;
	shl.b32 %r5, %r1, 4;
	add.u32 %r4, %r4, %r5;
	add.u32 %r4, %r4, %r2;
	mul.wide.u32 %rd2, %r3, 512;
	cvt.u64.u32 %rd3, %r5;
	add.u64 %rd2, %rd2, %rd3;
	add.u64 %rd2, %rd0, %rd2;
	@%p0 cp.async.cg.shared.global [%r4], [%rd2], 16;
	cp.async.commit_group;
	setp.eq.u32 %p2, %r3, 0;
	@%p2 bra.uni PNEXT;
	cp.async.wait_group 1;            // tile t-1 has landed, tile t is in flight
	sub.u32 %r6, %r3, 1;
	rem.u32 %r6, %r6, 3;
	add.u32 %r6, %r6, 1;              // FULL[s] of tile t-1
	bar.arrive %r6, 160;
PNEXT:
	add.u32 %r3, %r3, 1;
	setp.le.u32 %p3, %r3, %r9;
	@%p3 bra.uni PLOOP;
	ret;
CONSUMER:
	sub.u32 %r7, %r0, 1;
	shl.b32 %r7, %r7, 5;
	add.u32 %r7, %r7, %r1;            // word of the tile this lane sums
	shl.b32 %r8, %r7, 2;
	mov.u32 %r11, 0;                  // the sum
	mov.u32 %r3, 0;
CLOOP:
	rem.u32 %r10, %r3, 3;
	add.u32 %r6, %r10, 1;
	bar.sync %r6, 160;                // FULL[s]
	mul.lo.u32 %r4, %r10, 512;
	add.u32 %r4, %r4, %r8;
	add.u32 %r4, %r4, %r2;
	ld.shared.u32 %r5, [%r4];
	add.u32 %r11, %r11, %r5;
	add.u32 %r12, %r3, 3;
	setp.lt.u32 %p1, %r12, %r9;       // the producer refills this slot
	add.u32 %r12, %r10, 4;
	@%p1 bar.arrive %r12, 160;        // EMPTY[s]
	add.u32 %r3, %r3, 1;
	setp.lt.u32 %p3, %r3, %r9;
	@%p3 bra.uni CLOOP;
	mul.wide.u32 %rd4, %r7, 4;
	add.u64 %rd4, %rd1, %rd4;
	st.global.u32 [%rd4], %r11;`)
}

func TestProducerConsumerRing(t *testing.T) {
	seed := uint64(24)
	r := rand.New(rand.NewPCG(seed, 1))
	for _, ntiles := range []int{1, 3, 7} {
		in := make([]uint32, 128*ntiles)
		for i := range in {
			in[i] = r.Uint32()
		}
		mem := NewMemory()
		pin := mem.Alloc("in", u32Bytes(in))
		pout := mem.Alloc("out", make([]byte, 512))
		l := Launch{Block: 160, SharedBytes: 3 * 512, Args: []any{pin, pout, uint32(ntiles)}}
		if err := run(t, ringKernel(false), l, mem); err != nil {
			t.Fatalf("ntiles %d: %v", ntiles, err)
		}
		out := bytesU32(mem.Bytes("out"))
		for i := range out {
			var want uint32
			for tile := 0; tile < ntiles; tile++ {
				want += in[128*tile+i]
			}
			if out[i] != want {
				t.Fatalf("seed %d ntiles %d: word %d sums to %d, want %d", seed, ntiles, i, out[i], want)
			}
		}
	}
	// Without the EMPTY wait the producer runs ahead: its arrival at FULL[0] for
	// tile 3 comes before the consumers took tile 0.
	mem := NewMemory()
	pin := mem.Alloc("in", make([]byte, 512*7))
	pout := mem.Alloc("out", make([]byte, 512))
	err := run(t, ringKernel(true), Launch{Block: 160, SharedBytes: 3 * 512, Args: []any{pin, pout, uint32(7)}}, mem)
	wantErr(t, err, "barrier 1: warp 0 arrives again before the barrier completes")
}

func TestBarWarpSyncMask(t *testing.T) {
	// Lanes 0..15 sync among themselves, 16..31 among themselves: legal.
	src := kernel("", `
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p0, %r1, 16;
	selp.b32 %r2, 0xffff, 0xffff0000, %p0;
	bar.warp.sync %r2;`)
	if err := run(t, src, Launch{Block: 32}, nil); err != nil {
		t.Fatal(err)
	}
	// A lane outside its own mask, and a mask naming lanes that do not execute.
	src = kernel("", `
	mov.u32 %r1, %tid.x;
	setp.eq.u32 %p0, %r1, 5;
	selp.b32 %r2, 1, -1, %p0;
	bar.warp.sync %r2;`)
	wantErr(t, run(t, src, Launch{Block: 32}, nil), "thread 5 (warp 0 lane 5)", "bar.warp.sync: lane not in its own membermask 0x1")
	src = kernel("", `
	mov.u32 %r1, %tid.x;
	setp.lt.u32 %p0, %r1, 8;
	@%p0 bar.warp.sync -1;`)
	wantErr(t, run(t, src, Launch{Block: 32}, nil), "bar.warp.sync: lanes {8,9,")
}

// roleAccessKernel is 8 warps: warps 0-3 (a role) arrive at their named barrier
// `bar.sync 1, 128` named times, every warp meets at bar.sync 0, warp 2 makes its
// first access (st or ld) of smem[lane*4], the role closes it with its barrier
// when close is set, bar.sync 0 again, and warp second makes its access.
func roleAccessKernel(named int, first string, closeIt bool, second int, secondOp string) string {
	access := map[string]string{"st": "st.shared.u32 [%r5], %r3;", "ld": "ld.shared.u32 %r6, [%r5];"}
	roleBar := ""
	for range named {
		roleBar += "\tbar.sync 1, 128;\n"
	}
	closing := ""
	if closeIt {
		closing = "\t@%p7 bra.uni C;\n\tbar.sync 1, 128;\nC:\n"
	}
	return kernel("", `
	mov.u32 %r1, %tid.x;
	shr.u32 %r0, %r1, 5;
	and.b32 %r3, %r1, 31;
	mov.u32 %r2, smem;
	shl.b32 %r4, %r3, 2;
	add.u32 %r5, %r2, %r4;
	setp.ge.u32 %p7, %r0, 4;
	@%p7 bra.uni S;
`+roleBar+`S:
	bar.sync 0;
	setp.ne.u32 %p1, %r0, 2;
	@%p1 bra.uni W;
	`+access[first]+`
W:
`+closing+`	bar.sync 0;
	setp.ne.u32 %p2, %r0, `+strconv.Itoa(second)+`;
	@%p2 bra.uni R;
	`+access[secondOp]+`
R:
	ret;`)
}

// TestNamedBarrierRacecheckRule: once warps have used a named barrier of fewer
// threads than the CTA, their shared accesses reach the other warps only through
// their next arrival at such a barrier, as compute-sanitizer's racecheck orders
// them (runs 53-54: issue 29's hazards in the 64-head CTA's score role, and
// scripts/proto/named_barrier_race.cu), not through a CTA barrier alone. The
// role's own warps, and warps that never used a named barrier, keep PTX's rule.
func TestNamedBarrierRacecheckRule(t *testing.T) {
	for _, c := range []struct {
		named    int
		first    string
		closeIt  bool
		second   int
		secondOp string
		race     bool
	}{
		{1, "st", false, 4, "ld", true},  // the score role's staged P, read by P·V
		{2, "ld", false, 5, "st", true},  // a role's read, rewritten by another warp
		{1, "st", false, 6, "st", true},  // two writes
		{1, "st", true, 4, "ld", false},  // closed by the role's barrier
		{2, "ld", true, 7, "st", false},  // closed by the role's barrier
		{0, "st", false, 4, "ld", false}, // no named barrier used: the CTA barrier orders
		{1, "st", false, 1, "ld", false}, // the role's own warp: the CTA barrier orders
	} {
		src := roleAccessKernel(c.named, c.first, c.closeIt, c.second, c.secondOp)
		err := run(t, src, Launch{Block: 256, SharedBytes: 128, AllowUninit: true}, nil)
		name := fmt.Sprintf("named=%d %s close=%v then warp %d %s", c.named, c.first, c.closeIt, c.second, c.secondOp)
		switch {
		case c.race && err == nil:
			t.Errorf("%s: no race reported", name)
		case c.race:
			wantErr(t, err, "data race", "warp 2 had used a named barrier of fewer threads", "not through a CTA barrier alone")
		case err != nil:
			t.Errorf("%s: %v", name, err)
		}
	}
}
