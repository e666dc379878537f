package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
)

// holdOperands is the layout pass's decision on the dots that state `a regs`
// (ir.DotSchedule.AHome): an A the dot's warps computed in fragments of whole
// rows is read from those registers, as the lowering does by itself; an A with a
// shared home (loaded, or staged) that the innermost loop around the dot does
// not define is loaded into registers once, before that loop, and held across
// its iterations (f.HeldA). Anything else is refused naming the clause.
func (f *fn) holdOperands() error {
	f.HeldA = map[*ir.Op][]*ir.Op{}
	var err error
	var walk func(b *ir.Block, loop *ir.Op, inLoop map[*ir.Value]bool)
	walk = func(b *ir.Block, loop *ir.Op, inLoop map[*ir.Value]bool) {
		for _, o := range b.Ops {
			if err != nil {
				return
			}
			if o.Kind == ir.OpFor {
				walk(o.Body, o, definedIn(o.Body))
				continue
			}
			if o.Kind != ir.OpDot || o.Dot == nil || o.Dot.AHome != ir.HomeRegs || f.AInRegisters(o) {
				continue
			}
			a := o.Args[0]
			switch al := f.Layouts[a]; {
			case loop == nil:
				err = ir.ErrorAt(o, fmt.Errorf("a %s: %s is not computed in whole rows by the dot's warps, and the dot is in no loop to hold it across (a %s reads it where it is)", ir.HomeRegs, a, ir.HomeShared))
			case inLoop[a]:
				err = ir.ErrorAt(o, fmt.Errorf("a %s: %s is defined in the loop the dot is in, and not computed in whole rows by the dot's warps; fragments held across iterations need an A defined before the loop (a %s reads it where it is)", ir.HomeRegs, a, ir.HomeShared))
			case o.Role != "" || loop.Role != "" || ir.PlacesRoles(loop):
				err = ir.ErrorAt(o, fmt.Errorf("a %s: holding A across a loop with warp roles is not built (a role's warps are numbered inside its region)", ir.HomeRegs))
			case al.Kind != decision.Shared && al.Kind != decision.Expr && al.Kind != decision.Acc:
				err = ir.ErrorAt(o, fmt.Errorf("a %s: %s is in %v, which has no shared home to load fragments from", ir.HomeRegs, a, al))
			default:
				f.HeldA[loop] = append(f.HeldA[loop], o)
			}
		}
	}
	walk(f.Kernel.Body, nil, nil)
	return err
}

// definedIn is the set of values b defines (its arguments and every op's results,
// nested loops included).
func definedIn(b *ir.Block) map[*ir.Value]bool {
	in := map[*ir.Value]bool{}
	for _, a := range b.Args {
		in[a] = true
	}
	ir.WalkOps(b, func(o *ir.Op) {
		for _, r := range o.Results {
			in[r] = true
		}
		if o.Body != nil {
			for _, a := range o.Body.Args {
				in[a] = true
			}
		}
	})
	return in
}

// heldRegs are the registers per thread the held A fragments take (4 per m16
// tile and k16 step of each warp's share).
func (f *fn) heldRegs() int {
	n := 0
	for _, dots := range f.HeldA {
		for _, o := range dots {
			r := o.Result()
			l := f.Layouts[r]
			ks := o.Args[0].Type.Shape[1] / decision.GranuleK
			if parts := f.SplitK[o]; parts > 1 {
				ks /= parts
			}
			n += r.Type.Shape[0] / decision.GranuleM / max(l.WM, 1) * ks * 4
		}
	}
	return n
}
