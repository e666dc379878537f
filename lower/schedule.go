package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
)

// scheduleDots is the schedule pass.
//
// Requires: layouts and staged homes (layout, stage).
// Guarantees: the record's DotGroups maps the first op of each fused dot group to the
// group's ops, a run of consecutive ops of one block (see dotGroupAt); the
// emitter writes a group's elementwise ops first and then its dots interleaved k
// step by k step, and every other op in program order. The IR is unchanged.
func scheduleDots(f *fn) decision.ScheduleRecord {
	rec := decision.ScheduleRecord{DotGroups: map[*ir.Op][]*ir.Op{}}
	uses := ir.UseCounts(f.Kernel)
	var visit func(b *ir.Block)
	visit = func(b *ir.Block) {
		for i := 0; i < len(b.Ops); {
			if g := f.dotGroupAt(b.Ops, i, uses); g != nil {
				rec.DotGroups[b.Ops[i]] = g
				i += len(g)
				continue
			}
			if body := b.Ops[i].Body; body != nil {
				visit(body)
			}
			i++
		}
	}
	visit(f.Kernel.Body)
	return rec
}

// dotGroupOf returns the dot group o belongs to and its index there, or nil.
func (f *fn) dotGroupOf(o *ir.Op) ([]*ir.Op, int) {
	for _, g := range f.Schedule.DotGroups {
		for i, x := range g {
			if x == o {
				return g, i
			}
		}
	}
	return nil, 0
}

// dotGroupAt returns the ops of a fused dot group starting at ops[i], or nil:
// consecutive dots with the same result layout, shape and K, at least two of them
// sharing an A operand (P·V over column slices: P hi and lo times each V slice),
// possibly chained (a dot accumulating onto a dot of the group that has no other
// use), with fragment-elementwise ops in between that use no dot of the group.
// Emitted k step by k step (dotGroup), each A fragment is loaded once for all
// the slices and each B fragment once for the hi and lo terms; one dot at a time,
// ptxas kept every A fragment of the K extent live across the slices (a spill at
// 128 registers with 64-candidate tiles).
func (f *fn) dotGroupAt(ops []*ir.Op, i int, useCount map[*ir.Value]int) []*ir.Op {
	first := ops[i]
	if first.Kind != ir.OpDot || f.Layouts[first.Result()].Kind != decision.Acc {
		return nil
	}
	key := func(o *ir.Op) string {
		return fmt.Sprint(f.Layouts[o.Result()], o.Result().Type.Shape, o.Args[0].Type.Shape[1], o.Args[0].Type.Elem, f.SplitK[o])
	}
	want := key(first)
	inGroup := map[*ir.Value]bool{}
	uses := map[*ir.Value]int{}
	var group []*ir.Op
	for j := i; j < len(ops); j++ {
		o := ops[j]
		if len(o.Results) != 1 || f.Layouts[o.Result()].Kind != decision.Acc {
			break
		}
		if _, staged := f.Staged[o.Result()]; staged {
			break
		}
		dependent := false
		for _, a := range o.Args {
			if inGroup[a] {
				dependent = true
				uses[a]++
			}
		}
		if o.Kind == ir.OpDot {
			if key(o) != want || inGroup[o.Args[0]] || inGroup[o.Args[1]] {
				break
			}
		} else if dependent || (o.Kind != ir.OpBroadcast && !o.Kind.IsElementwise()) {
			break
		}
		if o.Kind == ir.OpDot {
			inGroup[o.Result()] = true
		}
		group = append(group, o)
	}
	shared := map[*ir.Value]int{}
	ndots := 0
	for _, o := range group {
		if o.Kind == ir.OpDot {
			shared[o.Args[0]]++
			ndots++
		}
	}
	reused := false
	for _, n := range shared {
		reused = reused || n > 1
	}
	// Short K extents, and CTAs whose threads have registers to spare, are emitted
	// one dot at a time (see dotGroupMinKSteps and dotGroupMaxRegs), unless one
	// at a time would keep more A fragments live than a group's k step loads B
	// fragments (groupHoldsLess).
	if ndots < 2 || !reused || first.Args[0].Type.Shape[1]/decision.GranuleK < dotGroupMinKSteps ||
		f.threadRegs() > dotGroupMaxRegs && !f.groupHoldsLess(group, shared) {
		return nil
	}
	// A chained dot takes over its predecessor's accumulators, so the predecessor
	// may have no other use, here or anywhere else.
	for v, n := range uses {
		if n != 1 || useCount[v] != 1 {
			return nil
		}
	}
	return group
}

// groupHoldsLess reports whether a dot group, emitted k step by k step, holds
// fewer fragment registers than its dots one at a time. One at a time, ptxas
// keeps the A fragments of the whole K extent live across the dots that share
// them (ks x m16 tiles per warp x 4 registers per A operand); a group's k step
// loads the B fragments of all its dots at once (n8 tiles per warp x 2 each).
// The 64-head CTA's P·V split 4x2 holds 32 against 64 (one at a time: a group
// spilled 80 bytes at 255 registers, perf-notes v7); split 2x4, 64 against 32
// (one at a time spilled 48-72 bytes, v13).
func (f *fn) groupHoldsLess(group []*ir.Op, shared map[*ir.Value]int) bool {
	var first *ir.Op
	bs := map[*ir.Value]bool{}
	for _, o := range group {
		if o.Kind == ir.OpDot {
			if first == nil {
				first = o
			}
			bs[ir.StorageOf(o.Args[1])] = true
		}
	}
	l := f.Layouts[first.Result()]
	if _, inShared := f.SharedHome(first.Args[0]); !inShared {
		return false // A from registers: nothing to keep live
	}
	ks := first.Args[0].Type.Shape[1] / decision.GranuleK
	mtw := first.Result().Type.Shape[0] / decision.GranuleM / l.WM
	ntw := first.Result().Type.Shape[1] / decision.GranuleN / l.WN
	return ks*mtw*4*len(shared) > len(bs)*ntw*2
}
