package lower

import (
	"github.com/ptxgen/ptxgen/ir"
)

// stage gives a recomputed or fragment tile a home in shared memory, where a dot
// (through ldmatrix) or a transpose can read it. The emitter writes it there right
// after computing it.
func (f *fn) stage(v *ir.Value) (layout, bool) {
	l := f.layouts[v]
	if l.kind != lExpr && l.kind != lAcc || v.Type.Rank() != 2 {
		return layout{}, false
	}
	if f.staged == nil {
		f.staged = map[*ir.Value]layout{}
	}
	h, ok := f.staged[v]
	if !ok {
		h = layout{kind: lShared}
		f.staged[v] = h
	}
	return h, true
}

// stageGathers puts gathered rank-1 tiles (the candidate indices of a tile, say)
// in shared memory when more than one op uses them or a rank-2 op (a gather, a
// dequantization) evaluates them per row: a recomputed load would go back to
// global memory at every use.
func (f *fn) stageGathers() {
	users := map[*ir.Value][]*ir.Op{}
	walkOps(f.k.Body, func(o *ir.Op) {
		for _, a := range o.Args {
			users[a] = append(users[a], o)
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
		r := o.Result()
		if r.Type.Rank() != 1 || f.layouts[r].kind != lExpr || r.Type.Elem == ir.I1 {
			return
		}
		if len(users[r]) > 1 || feedsRank2(r, 0) || slicedOnly(users[r]) {
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
