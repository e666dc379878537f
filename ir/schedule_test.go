package ir

import (
	"strings"
	"testing"
)

const scheduledKernel = `kernel k(%a: ptr<bf16> div 16 bytes 4096, %y: ptr<f32> div 16 bytes 8192) grid(1, 1, 1) warps 8 role score 0 4 {
  %r = iota : tile<32xi32>
  %o = cast %r : tile<32xi64>
  %z = const 0 : i64
  %x = load %a[%o, %z] : tile<32x64xbf16>
  %xt = trans %x : tile<64x32xbf16>
  %c = const 0.0 : tile<32x32xf32>
  %d = dot %x, %xt, %c warps 2x4 : tile<32x32xf32>
  %e = dot %x, %xt, %d warps 2x1 replicate 4 splitk 4 a regs atom m16n8k16 : tile<32x32xf32>
  %s = dot %x, %xt, %c warps 2x2 : tile<32x32xf32> on score
  %u = dot %x, %xt, %c : tile<32x32xf32>
  %h = dot %x, %xt, %c a regs : tile<32x32xf32>
  %v = dot %x, %xt, %c warps 2x4 a computed : tile<32x32xf32>
  %w = dot %x, %xt, %c warps 2x4 a computed b computed : tile<32x32xf32>
  %kp = dot %x, %xt, %c warps 2x4 b computed kperm : tile<32x32xf32>
  store %y[%o, %z], %e
}
`

// TestDotScheduleRoundTrip: a dot's schedule clauses print and read back, a dot
// without them keeps none, and the clauses land in Op.Dot.
func TestDotScheduleRoundTrip(t *testing.T) {
	k, err := Parse(scheduledKernel)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(k); err != nil {
		t.Fatal(err)
	}
	if got := Print(k); got != scheduledKernel {
		t.Errorf("printed\n%s\nwant\n%s", got, scheduledKernel)
	}
	want := map[string]*DotSchedule{
		"d":  {Warps: [2]int{2, 4}},
		"e":  {Warps: [2]int{2, 1}, Replicate: 4, SplitK: 4, AHome: HomeRegs, Atom: "m16n8k16"},
		"s":  {Warps: [2]int{2, 2}},
		"u":  nil,
		"h":  {AHome: HomeRegs},
		"v":  {Warps: [2]int{2, 4}, AHome: HomeComputed},
		"w":  {Warps: [2]int{2, 4}, AHome: HomeComputed, BHome: HomeComputed},
		"kp": {Warps: [2]int{2, 4}, BHome: HomeComputed, KPerm: true},
	}
	for _, o := range k.Body.Ops {
		if o.Kind != OpDot {
			continue
		}
		w := want[o.Result().Name]
		if (w == nil) != (o.Dot == nil) || w != nil && *w != *o.Dot {
			t.Errorf("%s: schedule %+v, want %+v", o.Result(), o.Dot, w)
		}
	}
}

// TestDotScheduleBuilder: ScheduledDot states the schedule the text form prints.
func TestDotScheduleBuilder(t *testing.T) {
	b := NewBuilder("k")
	b.SetWarps(4)
	a := b.Param("a", PtrTo(BF16), 16, 1024)
	rows := b.Cast(b.Iota(16), I64)
	x := b.Load2(a, rows, b.I64(0), 32, nil, nil)
	acc := b.ConstFloat(0, TileOf(F32, 16, 16))
	b.ScheduledDot(x, b.Trans(x), acc, DotSchedule{Warps: [2]int{1, 1}, Replicate: 4})
	k, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if got := Print(k); !strings.Contains(got, " warps 1x1 replicate 4 : tile<16x16xf32>") {
		t.Errorf("the builder's schedule is not printed:\n%s", got)
	}
}

// TestDotScheduleRefused: a schedule that is malformed, inconsistent or that does
// not cover the warps running the dot is refused, naming the clause and what is
// accepted.
func TestDotScheduleRefused(t *testing.T) {
	for _, c := range []struct{ clause, want string }{
		{"warps 2x", `warps "2x": want RxC`},
		{"warps 0x8", "warps 0x8: want RxC with R and C in 1..32"},
		{"warps 2x4 replicate 0", "replicate 0: want 1..32"},
		{"warps 2x2 replicate 2", "a replicated result has whole rows per warp, want warps 2x1"},
		{"warps 8x1 splitk 2", "splitk 2: the reduction is split over the warps that hold each element: state replicate 2 too"},
		{"warps 2x1 replicate 4 splitk 2", "splitk 2: the reduction is split over the 4 warps that hold each element (replicate 4), want splitk 4"},
		{"warps 2x4 atom m16n8k32", `atom "m16n8k32": want one of m16n8k16`},
		{"warps 2x4 a global", `a "global": want a regs, a shared or a computed`},
		{"warps 2x4 warps 2x4", "states warps twice"},
		{"warps 2x4 b regs", `b "regs": want b computed`},
		{"b computed b computed", "states b twice"},
		{"warps 2x4 kperm", "kperm: it orders the pairs of a computed B; state b computed"},
		{"warps 2x4 b computed kperm kperm", "states kperm twice"},
		{"replicate 2", "dot schedule without warps RxC"},
		{"splitk 2 a regs", "dot schedule without warps RxC"},
		{"warps 2x2", "schedule warps 2x2 spreads it over 4 warps; it runs on the kernel's 8"},
		{"warps 2x4 on score", "spreads it over 8 warps; it runs on role score's 4"},
	} {
		src := strings.Replace(scheduledKernel, "%u = dot %x, %xt, %c :", "%u = dot %x, %xt, %c "+c.clause+" :", 1)
		if strings.HasSuffix(c.clause, "on score") {
			src = strings.Replace(scheduledKernel, "%u = dot %x, %xt, %c : tile<32x32xf32>", "%u = dot %x, %xt, %c "+strings.TrimSuffix(c.clause, " on score")+" : tile<32x32xf32> on score", 1)
		}
		k, err := Parse(src)
		if err == nil {
			err = Verify(k)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.clause, err, c.want)
		}
	}
}
