package check

import (
	"os"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/plan"
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
	c, err := lower.CompileProgram(plan.Unplanned(p), tg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A program of one's own shares the emulator's instruction budget among its CTAs, so
// a kernel that loops for long fails naming the budget instead of running for hours.
func TestProgramBudget(t *testing.T) {
	src, err := os.ReadFile("../ptxgen/testdata/from/scale.ir")
	if err != nil {
		t.Fatal(err)
	}
	c, err := ForProgram(compileText(t, string(src)), ProgramOptions{Seed: 1, Args: map[string]string{"alpha": "2", "n": "1000"}})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(MaxProgramWarpInstrs / 8); c.MaxWarpInstrs != want {
		t.Errorf("8 CTAs: budget %d per CTA, want %d", c.MaxWarpInstrs, want)
	}
	loop := "kernel k(%x: ptr<i32> bytes 4) grid(1, 1, 1) warps 1 {\n  %z = const 0 : i32\n  %one = const 1 : i32\n  %n = const 2000000000 : i32\n" +
		"  %r = for %i = %z to %n step 1 iter(%a = %z) {\n    %b = add %a, %one : i32\n    yield %b\n  }\n  store %x[%z], %r\n}\n"
	c, err = ForProgram(compileText(t, loop), ProgramOptions{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.MaxWarpInstrs != MaxProgramWarpInstrs {
		t.Errorf("one CTA: budget %d, want %d", c.MaxWarpInstrs, int64(MaxProgramWarpInstrs))
	}
	c.MaxWarpInstrs = 5000
	if _, err := Run(Emulator{}, c); err == nil || !strings.Contains(err.Error(), "more than 5000 warp instructions") {
		t.Errorf("a long loop under a budget of 5000: %v", err)
	}
}
