package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
)

// A dot that states `a computed` (ir.HomeComputed) evaluates each of its A
// fragment registers from A's elementwise definition where it reads it, so a
// recomputed A (a dequantization of raw bytes in shared memory, say) never gets a
// shared home of its own; a transposed A is the transpose of a recomputed tile
// whose 8x8 blocks the emitter turns into fragments by movmatrix. An A that is in
// shared memory already is read by ldmatrix, as its bytes are its fragments.

// aComputed reports whether dot o evaluates its A fragments from A's definition:
// it states `a computed` and A is recomputed (lExpr).
func (f *fn) aComputed(o *ir.Op) bool {
	return o.Dot != nil && o.Dot.AHome == ir.HomeComputed && f.layouts[o.Args[0]].kind == lExpr
}

// onlyComputedA reports whether every use of v is as the A operand of a dot that
// states `a computed`: a transpose of a recomputed tile read only so is
// recomputed too (the layout pass), and nothing stages its source for it.
func onlyComputedA(k *ir.Kernel, v *ir.Value) bool {
	used, only := false, true
	walkOps(k.Body, func(o *ir.Op) {
		for i, a := range o.Args {
			if a != v {
				continue
			}
			used = true
			if o.Kind != ir.OpDot || i != 0 || o.Dot == nil || o.Dot.AHome != ir.HomeComputed {
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

// checkComputedA refuses `a computed` on an A that is neither recomputed nor in
// shared memory (fragments of another dot's result: `a regs` reads those), naming
// the clause.
func (f *fn) checkComputedA() error {
	var err error
	walkOps(f.k.Body, func(o *ir.Op) {
		if err != nil || o.Kind != ir.OpDot || o.Dot == nil || o.Dot.AHome != ir.HomeComputed {
			return
		}
		if l := f.layouts[o.Args[0]]; l.kind != lExpr && l.kind != lShared {
			err = opError(o, fmt.Errorf("a %s: %s is in %v; only an A recomputed from its definition (an elementwise expression of tiles in shared memory) or one in shared memory can be read so (a %s reads fragments that hold it)", ir.HomeComputed, o.Args[0], l, ir.HomeRegs))
		}
	})
	return err
}

// computedLeaves are the shared tiles a recomputed v reads at its own
// coordinates (not through a broadcast or a column, which read one element per
// row): an `a computed` dot reads them at fragment coordinates, 8 rows at a time,
// so they take the conflict-free pitch as ldmatrix operands do (smem).
func (f *fn) computedLeaves(v *ir.Value, out map[*ir.Value]bool) {
	switch l := f.layouts[v]; {
	case l.kind == lShared:
		out[storageOf(v)] = true
		return
	case l.kind != lExpr || v.Def == nil || v.Type.Kind != ir.Tile:
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
