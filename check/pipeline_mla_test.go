package check

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
)

// TestMLAPipelinedEmulator: the decode is not switched onto pipelined loops (that
// needs a GPU measurement), but the lowering already takes it: each case of the
// MLA matrix with every loop asking for 2 or 3 stages passes the emulator against
// the reference, race checker on. Its gathers through the CTA's staged indices
// are issued ahead; a case whose tiles load their own indices keeps its loop as
// it is (the gather depends on a load of the body). Cases whose rings do not fit
// the target's shared memory are skipped, naming the sizes (the plan does not
// size tiles for rings yet).
func TestMLAPipelinedEmulator(t *testing.T) {
	for i, s := range mlaMatrix {
		for _, stages := range []int{2, 3} {
			t.Run(fmt.Sprintf("%d_stages%d_%s", i, stages, s.comment), func(t *testing.T) {
				t.Parallel()
				opts := s.opts
				opts.Seed = uint64(100 + i)
				c, err := MLA(s.config(), tgt(s.target), opts)
				if err != nil {
					t.Fatal(err)
				}
				prog, _, _, err := kernels.MLACallDesign(s.config(), tgt(s.target))
				if err != nil {
					t.Fatal(err)
				}
				for _, k := range prog.Kernels {
					for _, o := range k.Body.Ops {
						if o.Kind == ir.OpFor {
							o.Stages = stages
						}
					}
				}
				comp, err := lower.CompileProgram(prog.Program, prog.Sequences(), tgt(s.target))
				if err != nil && strings.Contains(err.Error(), "bytes of shared memory per CTA") {
					t.Skip(err)
				}
				if err != nil {
					t.Fatal(err)
				}
				c.Compiled = comp
				passesInEmulator(t, c)
				t.Logf("%d loops pipelined", strings.Count(comp.Module.Print(), "// pipeline:"))
			})
		}
	}
}
