package lower

import (
	"github.com/ptxgen/ptxgen/ir"
)

// rowReduceRecord is what the rowreduce pass decided: the rank-2 tiles whose rows
// a row reduction combines (layout replicates such score tiles in latency-bound
// launches).
type rowReduceRecord map[*ir.Value]bool

// markRowReduced is the rowreduce pass: it finds the tiles whose rows a reduction
// combines, following elementwise ops, dot accumulators and loop-carried values
// back to the dots that produce them (see the replicated split in layoutOf).
//
// Requires: a legalized kernel.
// Guarantees: the record holds exactly the rank-2 tiles whose rows a row
// reduction combines, directly or through elementwise ops, dot accumulators and
// loop-carried values. The IR is unchanged.
func markRowReduced(f *fn) rowReduceRecord {
	rowReduced := rowReduceRecord{}
	carriedFrom := map[*ir.Value][]*ir.Value{} // loop body argument -> its initial value and yields
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind == ir.OpFor {
			for i, a := range o.Body.Args[1:] {
				carriedFrom[a] = append(carriedFrom[a], o.Args[2+i], o.Body.Yield[i])
				carriedFrom[o.Results[i]] = append(carriedFrom[o.Results[i]], o.Body.Yield[i])
			}
		}
	})
	var mark func(v *ir.Value)
	mark = func(v *ir.Value) {
		if v == nil || v.Type.Rank() != 2 || rowReduced[v] {
			return
		}
		rowReduced[v] = true
		for _, src := range carriedFrom[v] {
			mark(src)
		}
		if o := v.Def; o != nil {
			switch {
			case o.Kind == ir.OpDot:
				mark(o.Args[2])
			case o.Kind.IsElementwise():
				for _, a := range o.Args {
					if a.Type.Rank() == 2 && (a.Def == nil || a.Def.Kind != ir.OpBroadcast) {
						mark(a)
					}
				}
			}
		}
	}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind == ir.OpReduce && o.Int == 1 {
			mark(o.Args[0])
		}
	})
	return rowReduced
}
