package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
)

// stageTiles is the stage pass. It builds its record in place (f.StageRecord),
// since its own question SharedHome reads the homes given so far (a transpose of
// a tile staged for an earlier dot has one).
//
// Requires: layouts (layout).
// Guarantees: f.Staged holds a shared home (offset and pitch not yet assigned) for
// every tile that must be read from shared memory but lives elsewhere: a dot's A
// operand that is recomputed or in fragments not split by whole rows like the
// result, a dot's B operand not in shared memory (unless every warp holds it whole:
// BInRegisters), the source of a transpose that has
// no shared home, a row vector broadcast onto a tile split over other row groups
// (stageRowViews), and the gathered rank-1 tiles that stageGathers picks. The
// emitter writes each staged tile to its home right after computing it.
func stageTiles(f *fn) error {
	f.StageRecord = decision.StageRecord{Staged: map[*ir.Value]decision.Layout{}}
	if err := f.stageRowViews(); err != nil {
		return err
	}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		switch o.Kind {
		case ir.OpDot:
			a, b := f.Layouts[o.Args[0]], f.Layouts[o.Args[1]]
			if a.Kind != decision.Shared && !f.AInRegisters(o) && !f.AComputed(o) {
				f.stage(o.Args[0])
			}
			if b.Kind != decision.Shared && !f.BInRegisters(o) && !f.BComputed(o) {
				f.stage(o.Args[1])
			}
		case ir.OpTrans:
			if _, ok := f.SharedHome(o.Args[0]); !ok && f.Layouts[o.Result()].Kind != decision.Expr {
				f.stage(o.Args[0])
			}
		}
	})
	f.stageGathers()
	return nil
}

// dotOperandAPlaceable reports whether a dot's A operand in layout a can be read
// for a result in layout out: from shared memory (row-major), from fragments that
// hold whole rows split like the result, or after staging.
func dotOperandAPlaceable(a, out decision.Layout) bool {
	switch {
	case a.Kind == decision.Shared:
	case a.Kind == decision.Acc && a.WN == 1 && a.WM == out.WM:
	case a.Kind == decision.Expr || a.Kind == decision.Acc:
	default:
		return false
	}
	return true
}

// stageable reports whether a tile v in layout l can be given a home in shared
// memory (recomputed or fragment tiles of rank 2), and the home's layout.
func stageable(v *ir.Value, l decision.Layout) (decision.Layout, bool) {
	if l.Kind != decision.Expr && l.Kind != decision.Acc || v.Type.Rank() != 2 {
		return decision.Layout{}, false
	}
	return decision.Layout{Kind: decision.Shared}, true
}

// stage gives a recomputed or fragment tile a home in shared memory, where a dot
// (through ldmatrix) or a transpose can read it.
func (f *fn) stage(v *ir.Value) {
	if _, ok := stageable(v, f.Layouts[v]); !ok {
		return
	}
	if _, ok := f.Staged[v]; !ok {
		f.Staged[v] = decision.Layout{Kind: decision.Shared}
	}
}

// stageGathers puts gathered rank-1 tiles (the candidate indices of a tile, say)
// in shared memory when more than one op uses them or a rank-2 op (a gather, a
// dequantization) evaluates them per row: a recomputed load would go back to
// global memory at every use. A rank-1 value read only through slices is staged
// whatever computes it (a CTA's indices selected per position from two candidate
// lists): computed once, not at every slice's element; the loads it is computed
// from then need no home of their own.
func (f *fn) stageGathers() {
	users := map[*ir.Value][]*ir.Op{}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		for _, a := range o.Args {
			users[a] = append(users[a], o)
		}
	})
	vector := func(r *ir.Value) bool {
		return r.Type.Rank() == 1 && f.Layouts[r].Kind == decision.Expr && r.Type.Elem != ir.I1
	}
	sliced := map[*ir.Value]bool{}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if len(o.Results) == 1 && (o.Kind.Class().Elementwise || o.Kind == ir.OpLoad) {
			if r := o.Result(); vector(r) && slicedOnly(users[r]) {
				sliced[r] = true
				f.Staged[r] = decision.Layout{Kind: decision.Shared}
			}
		}
	})
	var feedsRank2 func(v *ir.Value, depth int) bool
	feedsRank2 = func(v *ir.Value, depth int) bool {
		for _, u := range users[v] {
			if u.Kind == ir.OpLoad || u.Kind == ir.OpStore {
				if m := ir.MemOperands(u); m.Val.Type.Rank() == 2 && v != m.Val {
					return true
				}
			}
			if len(u.Results) == 1 {
				r := u.Result()
				if sliced[r] {
					continue // evaluated once, into its own home
				}
				if r.Type.Rank() == 2 || depth < 8 && f.Layouts[r].Kind == decision.Expr && feedsRank2(r, depth+1) {
					return true
				}
			}
		}
		return false
	}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind != ir.OpLoad || len(o.Results) != 1 {
			return
		}
		if r := o.Result(); vector(r) && !sliced[r] && (len(users[r]) > 1 || feedsRank2(r, 0)) {
			f.Staged[r] = decision.Layout{Kind: decision.Shared}
		}
	})
}

// slicedOnly reports uses that are all slices: a load read through slices (a
// CTA's candidate indices, loaded once before its loop) is staged, or each
// element read would be a global load.
func slicedOnly(users []*ir.Op) bool {
	for _, u := range users {
		if u.Kind != ir.OpSlice {
			return false
		}
	}
	return len(users) > 0
}

// stageRowViews gives a rank-1 home (rows x 4 bytes) to each row vector that is
// broadcast onto a tile split over a different number of row groups (a softmax's
// rescale factor from q·k's split meeting a P·V accumulator split by columns):
// its owners write it once, one writer per row, and the consumer reads each of
// its fragment rows' values from there (emit: stageRows, accElem). A row vector
// with no defining op (a loop-carried value inside its loop) has nowhere to be
// written once per iteration before its uses and is refused.
func (f *fn) stageRowViews() error {
	var err error
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		for _, src := range f.rowVectorsOtherGroups(o) {
			if src.Def == nil && err == nil {
				err = fmt.Errorf("%s: the loop-carried row vector %s (%v) meets a tile split over %d row groups; apply an op to it first (its result is written to shared memory once)", o, src, f.Layouts[src], f.Layouts[o.Result()].WM)
			}
			f.Staged[src] = decision.Layout{Kind: decision.Shared}
		}
	})
	return err
}

// rowVectorsOtherGroups are the row vectors that elementwise op o broadcasts
// onto a result split over a different number of row groups, or computed by
// other warps (another role's: its registers are not the reader's).
func (f *fn) rowVectorsOtherGroups(o *ir.Op) []*ir.Value {
	if !o.Kind.IsElementwise() || len(o.Results) != 1 || f.Layouts[o.Result()].Kind != decision.Acc {
		return nil
	}
	var vs []*ir.Value
	for _, a := range o.Args {
		if !f.isRowView(a) {
			continue
		}
		if src := a.Def.Args[0]; f.RowElsewhere(src, f.Layouts[o.Result()], f.ValueRole(o.Result())) {
			vs = append(vs, src)
		}
	}
	return vs
}
