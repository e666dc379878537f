package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
)

// A dot that states `a computed` (ir.HomeComputed) evaluates each of its A
// fragment registers from A's elementwise definition where it reads it, so a
// recomputed A (a dequantization of raw bytes in shared memory, say) never gets a
// shared home of its own; a transposed A is the transpose of a recomputed tile
// whose 8x8 blocks the emitter turns into fragments by movmatrix. An A that is in
// shared memory already is read by ldmatrix, as its bytes are its fragments.
// `b computed` is the same for B, where the transposed B (Kᵀ of q·kᵀ) is the one
// read directly and the untransposed one (V of p·v) the one that takes movmatrix.

// onlyComputed reports whether every use of v is as an operand of a dot that
// states it `computed`: a transpose of a recomputed tile read only so is
// recomputed too (the layout pass), and nothing stages its source for it.
func onlyComputed(k *ir.Kernel, v *ir.Value) bool {
	used, only := false, true
	ir.WalkOps(k.Body, func(o *ir.Op) {
		for i, a := range o.Args {
			if a != v {
				continue
			}
			used = true
			if !decision.StatesComputed(o, i) {
				only = false
			}
		}
		if o.Body != nil {
			for _, y := range o.Body.Yield {
				if y == v {
					only = false
				}
			}
		}
	})
	return used && only
}

// checkComputed refuses `a computed` or `b computed` on an operand that is
// neither recomputed nor in shared memory (fragments of another dot's result:
// `a regs` reads those), naming the clause.
func (f *fn) checkComputed() error {
	var err error
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		for i, name := range []string{"a", "b"} {
			if err != nil || !decision.StatesComputed(o, i) {
				continue
			}
			if l := f.Layouts[o.Args[i]]; l.Kind != decision.Expr && l.Kind != decision.Shared {
				err = ir.ErrorAt(o, fmt.Errorf("%s %s: %s is in %v; only an operand recomputed from its definition (an elementwise expression of tiles in shared memory) or one in shared memory can be read so (a %s reads fragments that hold an A)", name, ir.HomeComputed, o.Args[i], l, ir.HomeRegs))
			}
		}
	})
	return err
}

// computedLeaves are the shared tiles a recomputed v reads at its own
// coordinates (not through a broadcast or a column, which read one element per
// row): a `computed` operand's dot reads them at fragment coordinates, 8 rows at a time,
// so they take the conflict-free pitch as ldmatrix operands do (smem).
func (f *fn) computedLeaves(v *ir.Value, out map[*ir.Value]bool) {
	switch l := f.Layouts[v]; {
	case l.Kind == decision.Shared:
		out[ir.StorageOf(v)] = true
		return
	case l.Kind != decision.Expr || v.Def == nil || v.Type.Kind != ir.Tile:
		return
	}
	switch o := v.Def; o.Kind {
	case ir.OpBroadcast, ir.OpColumn, ir.OpIota, ir.OpConst, ir.OpLoad:
	default: // elementwise ops and transposes: their tile operands at the same elements
		for _, a := range o.Args {
			f.computedLeaves(a, out)
		}
	}
}
