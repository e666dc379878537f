package check

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/target"
)

func compileText(t *testing.T, src string) *lower.Compiled {
	t.Helper()
	p, err := ir.ParseProgram(src)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := target.LookupTarget("sm_90")
	if err != nil {
		t.Fatal(err)
	}
	c, err := lower.CompileProgram(p, nil, tg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A program of one's own runs under one budget of emulation work, MaxProgramWork:
// a call whose loops and dots alone need more is refused before anything runs
// (naming the loop, its trip count and the dots), and without the IR (a library
// caller) the budget stops the run where it is spent.
func TestProgramBudget(t *testing.T) {
	src, err := os.ReadFile("../ptxgen/testdata/from/scale.ir")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ForProgram(compileText(t, string(src)), ProgramOptions{Seed: 1, Args: map[string]string{"alpha": "2", "n": "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxWork != MaxProgramWork {
		t.Errorf("budget %d, want %d", c.MaxWork, int64(MaxProgramWork))
	}
	loop := "kernel k(%x: ptr<i32> bytes 4, %n: i32) grid(1, 1, 1) warps 1 {\n  %z = const 0 : i32\n  %one = const 1 : i32\n" +
		"  %r = for %i = %z to %n step 1 iter(%a = %z) {\n    %b = add %a, %one : i32\n    yield %b\n  }\n  store %x[%z], %r\n}\n"
	prog, err := ir.ParseProgram(loop)
	if err != nil {
		t.Fatal(err)
	}
	comp := compileText(t, loop)
	_, err = ForProgram(comp, ProgramOptions{Seed: 1, IR: prog, Args: map[string]string{"n": "2000000000"}})
	if err == nil || !strings.Contains(err.Error(), "at least 6000000000 units of emulation work (kernel k, 1 CTA with a loop of 2000000000 iterations (%i)), more than the emulator's budget of 67108864") {
		t.Errorf("a loop of 2e9 iterations: %v, want it refused before the run", err)
	}
	if _, err := ForProgram(comp, ProgramOptions{Seed: 1, IR: prog, Args: map[string]string{"n": "1000"}}); err != nil {
		t.Errorf("a loop of 1000 iterations: %v", err)
	}
	c, err = ForProgram(comp, ProgramOptions{Seed: 1, Args: map[string]string{"n": "2000000000"}})
	if err != nil {
		t.Fatal(err)
	}
	c.MaxWork = 5000
	var we *emu.WorkError
	if _, err := Run(Emulator{}, c); !errors.As(err, &we) || !strings.Contains(err.Error(), "the emulation budget of 5000 units is spent") {
		t.Errorf("a long loop under a budget of 5000: %v", err)
	}
}

// programWork counts every mma.sync of the dots a loop runs, times its iterations,
// and is a lower bound of what the emulator counts: a loop of 64x64x64 bf16 dots
// (128 mma.sync each) took 185 s under a budget documented as half a minute.
func TestProgramWorkDots(t *testing.T) {
	src := `kernel dots(%a: ptr<bf16> div 16 bytes 8192, %y: ptr<f32> div 16 bytes 16384, %n: i32) grid(2, 1, 1) warps 4 {
  %r = iota : tile<64xi32>
  %r64 = cast %r : tile<64xi64>
  %k = const 64 : i64
  %rows = mul %r64, %k : tile<64xi64>
  %z = const 0 : i64
  %at = load %a[%rows, %z] : tile<64x64xbf16>
  %acc0 = const 0.0 : tile<64x64xf32>
  %lo = const 0 : i32
  %accfin = for %j = %lo to %n step 1 iter(%acc = %acc0) {
    %next = dot %at, %at, %acc : tile<64x64xf32>
    yield %next
  }
  store %y[%rows, %z], %accfin
}
`
	prog, err := ir.ParseProgram(src)
	if err != nil {
		t.Fatal(err)
	}
	comp := compileText(t, src)
	const n = 7
	w := programWork(prog, map[string]any{"n": int32(n)}, map[string]int64{"dots": 2}, map[string][3]int{"dots": {2, 1, 1}})
	mma := emu.InstrCost("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32")
	if want := 2 * n * (128*mma + 3); w.units != want || !strings.Contains(w.what, "a loop of 7 iterations (%j) of dots of 64x64x64 (128 mma.sync each)") {
		t.Errorf("programWork = %d (%s), want %d: 2 CTAs x 7 iterations x (128 mma.sync + 3)", w.units, w.what, want)
	}
	c, err := ForProgram(comp, ProgramOptions{Seed: 1, IR: prog, Args: map[string]string{"n": fmt.Sprint(n)}})
	if err != nil {
		t.Fatal(err)
	}
	c.MaxWork = 1 << 40
	work := &emu.Work{Limit: c.MaxWork}
	mem := emu.NewMemory()
	for name, b := range c.Buffers {
		mem.Alloc(name, b)
	}
	args, err := c.Args(comp.Kernels[0], func(name string) (uint64, error) { a, _ := mem.Addr(name); return a, nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := emu.RunKernelOpts(comp.Kernels[0], args, mem, emu.RunOptions{Work: work}); err != nil {
		t.Fatal(err)
	}
	if work.Used < w.units {
		t.Errorf("the run did %d units of work, less than programWork's lower bound %d", work.Used, w.units)
	}
	if _, err := ForProgram(comp, ProgramOptions{Seed: 1, IR: prog, Args: map[string]string{"n": "20000"}}); err == nil || !strings.Contains(err.Error(), "dots of 64x64x64 (128 mma.sync each)") {
		t.Errorf("20000 iterations of 2 CTAs of dots: %v, want it refused naming the dots", err)
	}
}

// programWork's trip counts stay lower bounds where the bounds' arithmetic wraps: an
// i64 of 2^33+5 narrowed to i32 is 5 on the GPU, not 2^33+5, and an i32 product past
// 2^31 is unknown; a bound that depends on an outer induction variable counts its
// fewest iterations.
func TestProgramWorkWraps(t *testing.T) {
	for _, c := range []struct {
		hi   string // ops defining %hi : i32
		want int64  // iterations counted
	}{
		{"  %h64 = const 8589934597 : i64\n  %hi = cast %h64 : i32\n", 0},
		{"  %a = const 65536 : i32\n  %hi = mul %a, %a : i32\n", 0},
		{"  %hi = const 7 : i32\n", 7},
		{"  %a = const 3 : i32\n  %b = const 4 : i32\n  %hi = mul %a, %b : i32\n", 12},
	} {
		src := "kernel k(%x: ptr<i32> bytes 4) grid(1, 1, 1) warps 1 {\n  %z = const 0 : i32\n  %one = const 1 : i32\n" + c.hi +
			"  %r = for %i = %z to %hi step 1 iter(%a0 = %z) {\n    %b0 = add %a0, %one : i32\n    yield %b0\n  }\n  store %x[%z], %r\n}\n"
		prog, err := ir.ParseProgram(src)
		if err != nil {
			t.Fatal(err)
		}
		w := programWork(prog, nil, map[string]int64{"k": 1}, map[string][3]int{"k": {1, 1, 1}})
		if w.units != 3*c.want {
			t.Errorf("%q: %d units (%s), want %d: %d iterations of 3", c.hi, w.units, w.what, 3*c.want, c.want)
		}
	}
	nested := `kernel k(%x: ptr<i32> bytes 4, %n: i32) grid(1, 1, 1) warps 1 {
  %z = const 0 : i32
  %one = const 1 : i32
  %r = for %i = %z to %n step 1 iter(%a0 = %z) {
    %s = for %j = %i to %n step 1 iter(%a1 = %a0) {
      %b1 = add %a1, %one : i32
      yield %b1
    }
    yield %s
  }
  store %x[%z], %r
}
`
	prog, err := ir.ParseProgram(nested)
	if err != nil {
		t.Fatal(err)
	}
	// 10 outer iterations, each at least 1 inner one (j from i <= 9 to 10).
	if w := programWork(prog, map[string]any{"n": int32(10)}, map[string]int64{"k": 1}, map[string][3]int{"k": {1, 1, 1}}); w.units != 10*(1*3+3) {
		t.Errorf("a triangular loop nest: %d units (%s), want %d", w.units, w.what, 10*(1*3+3))
	}
}
