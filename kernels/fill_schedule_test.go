package kernels_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/mla"
	"github.com/ptxgen/ptxgen/plan"
	"github.com/ptxgen/ptxgen/target"
)

// scheduleCases are decode configurations whose dots the layout pass splits in
// each of its ways: rows first (16 heads), by operand traffic (the 64-head CTA's
// P·V 2x4), the score role's quadrants (2x2), replicated and split-K scores
// (latency-bound and large launches), bf16p's single P term, the bf16 cache.
func scheduleCases() map[string]kernels.MLAConfig {
	seg := []mla.Segment{{K: 128, PageSize: 64, HasLen: true}, {K: 512, PageSize: 64, HasLen: true}}
	shape := func(t, h int) mla.Shape {
		return mla.Shape{T: t, H: h, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true, Segments: seg}
	}
	cases := map[string]kernels.MLAConfig{
		"h16_t256":       {Shape: shape(256, 16)},
		"h64_t64":        {Shape: shape(64, 64)},
		"h64_t64_bf16p":  {Shape: shape(64, 64), Precision: kernels.PrecisionBF16P},
		"h64_t8_score8":  {Shape: shape(8, 64), ScoreWarps: 8},
		"h64_t8_produce": {Shape: shape(8, 64), ProducerWarps: 1},
	}
	for _, m := range goldenMLA {
		cases[m.name] = m.cfg
	}
	return cases
}

// TestFilledScheduleRoundTrip: every kernel of a plan, with each dot's schedule
// filled in as dump -ir prints it, read back from its text form, compiles to the
// same PTX as the kernel that left the schedule to the lowering.
func TestFilledScheduleRoundTrip(t *testing.T) {
	for name, c := range scheduleCases() {
		for _, tname := range []string{"sm_90", "sm_120"} {
			t.Run(name+"_"+tname, func(t *testing.T) {
				tg := target.MustLookup(tname)
				p, err := kernels.MLA(c, tg)
				if err != nil {
					t.Fatal(err)
				}
				roundTrip(t, p, tg)
			})
		}
	}
	for _, c := range goldenGEMM {
		t.Run(gemmName(c, "sm_90"), func(t *testing.T) {
			k, err := kernels.GEMM(c)
			if err != nil {
				t.Fatal(err)
			}
			roundTrip(t, plan.Unplanned(&ir.Program{Name: k.Name, Kernels: []*ir.Kernel{k}}), target.MustLookup("sm_90"))
		})
	}
}

func roundTrip(t *testing.T, p *plan.Program, tg target.Target) {
	t.Helper()
	want, err := lower.CompileProgram(p.Program, p.Sequences(), tg)
	if err != nil {
		t.Fatal(err)
	}
	filled, err := lower.FillScheduleProgram(p.Program, tg)
	if err != nil {
		t.Fatal(err)
	}
	text := ir.PrintProgram(filled)
	dots, stated := 0, 0
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, " = dot ") {
			dots++
			if strings.Contains(line, " warps ") && strings.Contains(line, " atom m16n8k16") {
				stated++
			}
		}
	}
	if dots == 0 || stated != dots {
		t.Fatalf("%d of %d dots state their schedule in the filled-in text", stated, dots)
	}
	back, err := ir.ParseProgram(text)
	if err != nil {
		t.Fatal(err)
	}
	got, err := lower.CompileProgram(back, p.Sequences(), tg)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want.Module.Print(), got.Module.Print()); d != "" {
		t.Errorf("the filled-in schedule compiles to other PTX (-left to the lowering +stated):\n%s", d)
	}
}
