package check

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/internal/ptxas"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
)

// gemmStagesCase is the seeded gemm case of cfg with its K loop pipelined over
// stages (kernels.GEMMStages): same inputs and reference as GEMM's case.
func gemmStagesCase(t *testing.T, cfg kernels.GEMMConfig, stages int, target string, seed uint64) *Case {
	t.Helper()
	c, err := GEMM(cfg, tgt(target), seed)
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	k, err := kernels.GEMMStages(cfg, stages)
	if err != nil {
		t.Fatal(err)
	}
	comp, err := lower.CompileProgram(&ir.Program{Name: "gemm", Kernels: []*ir.Kernel{k}}, nil, tgt(target))
	if err != nil {
		t.Fatalf("stages %d: %v", stages, err)
	}
	c.Compiled = comp
	c.Name += fmt.Sprintf(" stages=%d", stages)
	return c
}

// pipelineShapes are odd gemm shapes for the pipelined K loop: fewer K steps than
// stages (1 and 2 steps of 32), a ragged last step, many steps, M and N that pad.
// Where a row stride is odd (K = 33: lda; N = 9: ldb) rows are only 2-byte
// aligned: that tile is copied element by element, not by cp.async, and stays
// out of the pipeline (7x100x17 pipelines B but not A; 17x9x33 neither).
var pipelineShapes = []struct {
	cfg       kernels.GEMMConfig
	pipelined bool
}{
	{kernels.GEMMConfig{M: 17, N: 9, K: 33, Out: ir.BF16}, false},
	{kernels.GEMMConfig{M: 7, N: 100, K: 17, Out: ir.F32}, true},
	{kernels.GEMMConfig{M: 64, N: 17, K: 100, Out: ir.F32}, true},
	{kernels.GEMMConfig{M: 100, N: 72, K: 448, Out: ir.BF16}, true},
	{kernels.GEMMConfig{M: 33, N: 40, K: 97, Out: ir.F32}, true},
}

// TestGEMMStagesEmulator runs the pipelined gemm (stages 1..4) in the emulator,
// race checker on, against the float64 reference, and checks that an iteration
// waits with cp.async.wait_group stages-2 instead of draining the pipeline.
func TestGEMMStagesEmulator(t *testing.T) {
	targets := []string{"sm_80", "sm_90", "sm_120"}
	for i, shape := range pipelineShapes {
		cfg := shape.cfg
		for stages := 1; stages <= ir.MaxStages; stages++ {
			if testing.Short() && stages == 4 && i > 1 {
				continue
			}
			target := targets[(i+stages)%len(targets)]
			seed := uint64(2000 + 10*i + stages)
			t.Run(fmt.Sprintf("m%d_n%d_k%d_stages%d_%s", cfg.M, cfg.N, cfg.K, stages, target), func(t *testing.T) {
				t.Parallel()
				c := gemmStagesCase(t, cfg, stages, target, seed)
				text := c.Compiled.Module.Print()
				if stages > 1 && shape.pipelined {
					want := fmt.Sprintf("cp.async.wait_group %d;\n\tbar.sync 0;", stages-2)
					if !strings.Contains(text, want) {
						t.Errorf("seed %d: no %q in the pipelined loop", seed, want)
					}
					if n := strings.Count(text, "cp.async.commit_group"); n != stages {
						// stages-1 in the prologue, one per iteration.
						t.Errorf("seed %d: %d commits, want %d", seed, n, stages)
					}
				}
				passesInEmulator(t, c)
			})
		}
	}
}

// TestPipelineBarriersCaught: in the pipelined gemm, deleting any bar.sync, or
// letting one more group stay in flight at the top of an iteration, must be
// caught by the emulator (a race, a read of a pending cp.async byte, or a wrong
// result): the pipeline's synchronization is all needed, and the race checker
// sees it.
func TestPipelineBarriersCaught(t *testing.T) {
	for _, stages := range []int{2, 3} {
		t.Run(fmt.Sprintf("stages%d", stages), func(t *testing.T) {
			t.Parallel()
			c := gemmStagesCase(t, kernels.GEMMConfig{M: 64, N: 40, K: 160, Out: ir.F32}, stages, "sm_90", uint64(3000+stages))
			text := c.Compiled.Module.Print()
			lines := strings.Split(text, "\n")
			wait := fmt.Sprintf("cp.async.wait_group %d;", stages-2)
			mutants := 0
			for i, l := range lines {
				s := ptxStmt(l)
				var mutated []string
				switch {
				case strings.HasPrefix(s, "bar.sync"):
					mutated = append(append([]string{}, lines[:i]...), lines[i+1:]...)
				case s == wait:
					mutated = append([]string{}, lines...)
					mutated[i] = strings.Replace(l, wait, fmt.Sprintf("cp.async.wait_group %d;", stages-1), 1)
				default:
					continue
				}
				mutants++
				mc, err := withText(c, strings.Join(mutated, "\n"))
				if err != nil {
					t.Fatalf("the mutated text does not parse: %v", err)
				}
				v := runEmu(mc)
				if v.kind == verdictPass {
					t.Errorf("NOT CAUGHT: changing %s", siteOf(lines, i))
				} else {
					t.Logf("%s: caught by %s", siteOf(lines, i), v.kind)
				}
			}
			if mutants < 2 {
				t.Fatalf("%d mutants: want the loop's barrier and wait at least", mutants)
			}
		})
	}
}

// TestGEMMStagesAssemble: ptxas (sm_80, sm_90) assembles the pipelined gemm at the
// largest CTA tile and at a padded one, 2..4 stages, with no warning, spill or
// local memory.
func TestGEMMStagesAssemble(t *testing.T) {
	ptxas.Require(t)
	for _, cfg := range []kernels.GEMMConfig{{M: 128, N: 256, K: 448, Out: ir.BF16}, {M: 100, N: 72, K: 97, Out: ir.F32}} {
		for stages := 2; stages <= ir.MaxStages; stages++ {
			for _, target := range []string{"sm_80", "sm_90"} {
				t.Run(fmt.Sprintf("m%d_n%d_k%d_stages%d_%s", cfg.M, cfg.N, cfg.K, stages, target), func(t *testing.T) {
					t.Parallel()
					k, err := kernels.GEMMStages(cfg, stages)
					if err != nil {
						t.Fatal(err)
					}
					comp, err := lower.CompileProgram(&ir.Program{Name: "gemm", Kernels: []*ir.Kernel{k}}, nil, tgt(target))
					if err != nil {
						t.Fatal(err)
					}
					text := comp.Module.Print()
					if !strings.Contains(text, fmt.Sprintf("// pipeline: %d stages", stages)) {
						t.Fatalf("the K loop is not pipelined")
					}
					res, err := ptxas.Assemble(text, target)
					if err != nil {
						t.Fatal(err)
					}
					if len(res.Warnings) > 0 || res.SpillStores+res.SpillLoads+res.LocalBytes > 0 {
						t.Errorf("warnings %q, spills %d+%d bytes, local %d bytes, %d registers",
							res.Warnings, res.SpillStores, res.SpillLoads, res.LocalBytes, res.Registers)
					}
				})
			}
		}
	}
}
