package check

import (
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/mla"
)

// TestChangedScheduleClause: the decode's text form as dump -ir prints it, with
// one clause changed (the score dots computed whole by each of the 4 warps, as a
// latency-bound launch gets them, changed to split by columns over the 4 warps),
// compiles to other PTX, which still matches the float64 reference in the
// emulator.
func TestChangedScheduleClause(t *testing.T) {
	cfg := kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 16, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true,
		Segments: []mla.Segment{{K: 64, PageSize: 64, HasLen: true}}}}
	target := tgt("sm_90")
	const seed = 7
	c, err := MLA(cfg, target, golden.MLAGenOptions{Seed: seed, InvalidFrac: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	prog, _, _, err := kernels.MLACallDesign(cfg, target)
	if err != nil {
		t.Fatal(err)
	}
	filled, err := lower.FillScheduleProgram(prog.Program, target)
	if err != nil {
		t.Fatal(err)
	}
	const whole, byColumns = " warps 1x1 replicate 4 atom m16n8k16 :", " warps 1x4 atom m16n8k16 :"
	text := ir.PrintProgram(filled)
	if n := strings.Count(text, whole); n != 8 {
		t.Fatalf("the latency-bound 16-head decode has %d score dots computed whole per warp (%q), want 8 (512 dims in k64 slices)", n, whole)
	}
	back, err := ir.ParseProgram(strings.ReplaceAll(text, whole, byColumns))
	if err != nil {
		t.Fatal(err)
	}
	changed, err := lower.CompileProgram(back, prog.Sequences(), target)
	if err != nil {
		t.Fatal(err)
	}
	if changed.Module.Print() == c.Compiled.Module.Print() {
		t.Fatalf("the score dots split %s compile to the PTX of %s", byColumns, whole)
	}
	c.Compiled = changed
	res, err := Run(Emulator{}, c)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if !res.OK() {
		t.Errorf("seed %d, score dots%s: %s", seed, byColumns, res)
	}
}
