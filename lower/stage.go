package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
)

// stageRecord is what the stage pass decided: staged maps each tile it gives a
// shared home besides its layout to that home, without offset or pitch (smem
// places it).
type stageRecord struct {
	staged map[*ir.Value]layout
}

// stageTiles is the stage pass. It builds its record in place (f.stageRecord),
// since its own question sharedHome reads the homes given so far (a transpose of
// a tile staged for an earlier dot has one).
//
// Requires: layouts (layout).
// Guarantees: f.staged holds a shared home (offset and pitch not yet assigned) for
// every tile that must be read from shared memory but lives elsewhere: a dot's A
// operand that is recomputed or in fragments not split by whole rows like the
// result, a dot's B operand not in shared memory (unless every warp holds it whole:
// bInRegisters), the source of a transpose that has
// no shared home, a row vector broadcast onto a tile split over other row groups
// (stageRowViews), and the gathered rank-1 tiles that stageGathers picks. The
// emitter writes each staged tile to its home right after computing it.
func stageTiles(f *fn) error {
	f.stageRecord = stageRecord{staged: map[*ir.Value]layout{}}
	if err := f.stageRowViews(); err != nil {
		return err
	}
	walkOps(f.k.Body, func(o *ir.Op) {
		switch o.Kind {
		case ir.OpDot:
			a, b := f.layouts[o.Args[0]], f.layouts[o.Args[1]]
			if a.kind != lShared && !f.aInRegisters(o) && !f.aComputed(o) {
				f.stage(o.Args[0])
			}
			if b.kind != lShared && !f.bInRegisters(o) && !f.bComputed(o) {
				f.stage(o.Args[1])
			}
		case ir.OpTrans:
			if _, ok := f.sharedHome(o.Args[0]); !ok && f.layouts[o.Result()].kind != lExpr {
				f.stage(o.Args[0])
			}
		}
	})
	f.stageGathers()
	return nil
}

// aInRegisters reports whether dot o reads its A operand from the fragments
// that hold it: whole rows split like the result's, on the same warps.
func (f *fn) aInRegisters(o *ir.Op) bool { return f.aHeldFor(o, f.layouts[o.Result()].wm) }

// aHeldFor reports whether dot o's A operand is held as a result split over wm
// row groups needs it: in fragments of whole rows in wm row groups, computed by
// the same warps.
func (f *fn) aHeldFor(o *ir.Op, wm int) bool {
	if o.Dot != nil && o.Dot.AHome == ir.HomeShared {
		return false // stated: read through its shared home (staged if need be)
	}
	a := f.layouts[o.Args[0]]
	return a.kind == lAcc && a.wn == 1 && a.wm == wm && f.valueRole(o.Args[0]) == f.valueRole(o.Result())
}

// bInRegisters reports whether dot o reads its B operand from the fragments that
// hold it: a 16-bit result held whole by every warp that computes o (one group,
// replicated over all of them), on the same warps. Each k16 step's B fragments
// are then the transposes of B's m16 tile k, two movmatrix per n8 tile
// (emit_dot's bFrags): the heads-in-N decode's Pᵀ, which would otherwise go
// through shared memory.
func (f *fn) bInRegisters(o *ir.Op) bool {
	b, r := f.layouts[o.Args[1]], f.layouts[o.Result()]
	return b.kind == lAcc && b.wm == 1 && b.wn == 1 && b.copies() == f.warpsFor(o.Result()) && r.kind == lAcc &&
		o.Args[1].Type.Elem.Size() == 2 && f.valueRole(o.Args[1]) == f.valueRole(o.Result())
}

// dotOperandAPlaceable reports whether a dot's A operand in layout a can be read
// for a result in layout out: from shared memory (row-major), from fragments that
// hold whole rows split like the result, or after staging.
func dotOperandAPlaceable(a, out layout) bool {
	switch {
	case a.kind == lShared:
	case a.kind == lAcc && a.wn == 1 && a.wm == out.wm:
	case a.kind == lExpr || a.kind == lAcc:
	default:
		return false
	}
	return true
}

// stageable reports whether a tile v in layout l can be given a home in shared
// memory (recomputed or fragment tiles of rank 2), and the home's layout.
func stageable(v *ir.Value, l layout) (layout, bool) {
	if l.kind != lExpr && l.kind != lAcc || v.Type.Rank() != 2 {
		return layout{}, false
	}
	return layout{kind: lShared}, true
}

// stage gives a recomputed or fragment tile a home in shared memory, where a dot
// (through ldmatrix) or a transpose can read it.
func (f *fn) stage(v *ir.Value) {
	if _, ok := stageable(v, f.layouts[v]); !ok {
		return
	}
	if _, ok := f.staged[v]; !ok {
		f.staged[v] = layout{kind: lShared}
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
	walkOps(f.k.Body, func(o *ir.Op) {
		for _, a := range o.Args {
			users[a] = append(users[a], o)
		}
	})
	vector := func(r *ir.Value) bool {
		return r.Type.Rank() == 1 && f.layouts[r].kind == lExpr && r.Type.Elem != ir.I1
	}
	sliced := map[*ir.Value]bool{}
	walkOps(f.k.Body, func(o *ir.Op) {
		if len(o.Results) == 1 && (o.Kind.Class().Elementwise || o.Kind == ir.OpLoad) {
			if r := o.Result(); vector(r) && slicedOnly(users[r]) {
				sliced[r] = true
				f.staged[r] = layout{kind: lShared}
			}
		}
	})
	var feedsRank2 func(v *ir.Value, depth int) bool
	feedsRank2 = func(v *ir.Value, depth int) bool {
		for _, u := range users[v] {
			if u.Kind == ir.OpLoad || u.Kind == ir.OpStore {
				if m := memOperands(u); m.val.Type.Rank() == 2 && v != m.val {
					return true
				}
			}
			if len(u.Results) == 1 {
				r := u.Result()
				if sliced[r] {
					continue // evaluated once, into its own home
				}
				if r.Type.Rank() == 2 || depth < 8 && f.layouts[r].kind == lExpr && feedsRank2(r, depth+1) {
					return true
				}
			}
		}
		return false
	}
	walkOps(f.k.Body, func(o *ir.Op) {
		if o.Kind != ir.OpLoad || len(o.Results) != 1 {
			return
		}
		if r := o.Result(); vector(r) && !sliced[r] && (len(users[r]) > 1 || feedsRank2(r, 0)) {
			f.staged[r] = layout{kind: lShared}
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
	walkOps(f.k.Body, func(o *ir.Op) {
		for _, src := range f.rowVectorsOtherGroups(o) {
			if src.Def == nil && err == nil {
				err = fmt.Errorf("%s: the loop-carried row vector %s (%v) meets a tile split over %d row groups; apply an op to it first (its result is written to shared memory once)", o, src, f.layouts[src], f.layouts[o.Result()].wm)
			}
			f.staged[src] = layout{kind: lShared}
		}
	})
	return err
}

// rowElsewhere reports whether a thread of role reader, in an op split as l,
// does not hold the elements of row vector v it needs: v is split over other row
// groups, or computed by other warps (another role's registers are not the
// reader's). It reads them from v's shared home.
func (f *fn) rowElsewhere(v *ir.Value, l layout, reader string) bool {
	return f.layouts[v].wm != l.wm || f.valueRole(v) != reader
}

// rowVectorsOtherGroups are the row vectors that elementwise op o broadcasts
// onto a result split over a different number of row groups, or computed by
// other warps (another role's: its registers are not the reader's).
func (f *fn) rowVectorsOtherGroups(o *ir.Op) []*ir.Value {
	if !o.Kind.IsElementwise() || len(o.Results) != 1 || f.layouts[o.Result()].kind != lAcc {
		return nil
	}
	var vs []*ir.Value
	for _, a := range o.Args {
		if !f.isRowView(a) {
			continue
		}
		if src := a.Def.Args[0]; f.rowElsewhere(src, f.layouts[o.Result()], f.valueRole(o.Result())) {
			vs = append(vs, src)
		}
	}
	return vs
}
