package emu

import (
	"errors"
	"strings"
	"testing"
)

// TestWorkCost: launches sharing a Work add up their work, in units weighted by what
// each instruction costs the emulator (an mma.sync about 20 ALU instructions, a
// shared-memory access by its bytes), so that a budget in units is a budget in time.
func TestWorkCost(t *testing.T) {
	mma := "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f0, %f1, %f2, %f3}, {%r30, %r31, %r32, %r33}, {%r34, %r35}, {%f0, %f1, %f2, %f3};"
	for _, c := range []struct {
		instr string
		want  int64
	}{
		{"add.u32 %r1, %r1, 1;", 1},
		{mma, 20},
		{"ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r30, %r31, %r32, %r33}, [%r4];", 36},
		{"ld.shared.u32 %r5, [%r4];", 16},
		{"ld.shared.v4.u32 {%r5, %r6, %r7, %r8}, [%r4];", 40},
		{"ex2.approx.f32 %f5, %f1;", 8},
	} {
		if got := InstrCost(c.instr[:strings.IndexAny(c.instr, " ")]); got != c.want {
			t.Errorf("InstrCost(%q) = %d, want %d", c.instr, got, c.want)
		}
	}
	prelude := `
	mov.u32 %r4, smem;
	mov.u32 %r30, 0; mov.u32 %r31, 0; mov.u32 %r32, 0; mov.u32 %r33, 0; mov.u32 %r34, 0; mov.u32 %r35, 0;
	mov.f32 %f0, 0f00000000; mov.f32 %f1, 0f00000000; mov.f32 %f2, 0f00000000; mov.f32 %f3, 0f00000000;`
	work := &Work{Limit: 1 << 20}
	for _, body := range []string{prelude, prelude + "\n\t" + mma + "\n\t" + mma} {
		if err := run(t, kernel("", body), Launch{Block: 64, Grid: [3]int{3, 1, 1}, Work: work}, nil); err != nil {
			t.Fatal(err)
		}
	}
	// The second launch: the same, plus two mma.sync per warp, 2 warps, 3 CTAs.
	if first := work.Used; first <= 0 {
		t.Fatalf("work used %d", first)
	}
	plain := work.Used
	work.Used = 0
	if err := run(t, kernel("", prelude), Launch{Block: 64, Grid: [3]int{3, 1, 1}, Work: work}, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := plain-2*work.Used, int64(3*2*2*20); got != want {
		t.Errorf("the launch with 2 mma.sync per warp did %d more units, want %d (3 CTAs x 2 warps x 2 x 20)", got, want)
	}
}

// TestWorkBudget: a launch stops when the work it shares passes the limit, naming the
// budget; and a launch whose first CTA's work times its CTAs would pass the limit
// stops after that CTA, with the projection, instead of running until it does.
func TestWorkBudget(t *testing.T) {
	loop := kernel("", `
	mov.u32 %r1, 0;
L:
	add.u32 %r1, %r1, 1;
	setp.lt.u32 %p1, %r1, 1000000000;
	@%p1 bra L;`)
	work := &Work{Limit: 10000, Used: 400}
	err := run(t, loop, Launch{Block: 32, Work: work}, nil)
	var we *WorkError
	if !errors.As(err, &we) || we.At == nil || !strings.Contains(err.Error(), "the emulation budget of 10000 units is spent (400 of them before this launch)") || !strings.Contains(err.Error(), "CTA (0,0,0) warp 0") {
		t.Errorf("a long loop under a budget of 10000: %v", err)
	}
	if work.Used < 10000 || work.Used > 10010 {
		t.Errorf("work used %d after the budget ran out, want 10000 and at most one instruction more", work.Used)
	}

	ctas := kernel(".param .u64 pc", `
	ld.param.u64 %rd0, [pc];
	mov.u32 %r1, 0;
L:
	add.u32 %r1, %r1, 1;
	setp.lt.u32 %p1, %r1, 100;
	@%p1 bra L;
	mov.u32 %r3, %ctaid.x;
	mul.wide.u32 %rd1, %r3, 4;
	add.u64 %rd2, %rd0, %rd1;
	mov.u32 %r2, 1;
	st.global.u32 [%rd2], %r2;`)
	mem := NewMemory()
	counter := mem.Alloc("ran", make([]byte, 4000))
	work = &Work{Limit: 20000}
	err = run(t, ctas, Launch{Block: 32, Grid: [3]int{1000, 1, 1}, Args: []any{counter}, Work: work}, mem)
	if !errors.As(err, &we) || we.At != nil || we.CTAs != 1000 || we.FirstCTA < 300 || !strings.Contains(err.Error(), "its first CTA did") {
		t.Errorf("1000 CTAs of about 300 units under a budget of 20000: %v (%+v)", err, we)
	}
	ran := 0
	for _, v := range bytesU32(mem.Bytes("ran")) {
		ran += int(v)
	}
	if ran != 1 {
		t.Errorf("%d CTAs ran, want the first only", ran)
	}
}
