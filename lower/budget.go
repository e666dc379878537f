package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/target"
)

// decideBudget is the budget pass.
//
// Requires: layouts (layout), roles (roles) and the shared-memory size (smem).
// Guarantees: the register budget, the CTAs per SM it keeps resident, a copy
// width for every rank-2 load whose tile lands in shared memory, and a store width
// for every store of a rank-2 tile in fragments, in shared memory or recomputed.
func decideBudget(f *fn) decision.BudgetRecord {
	b := decision.BudgetRecord{Threads: 32 * f.Kernel.Warps, CarriedRegs: f.carriedRegs() + f.heldRegs(), CopyBytes: map[*ir.Op]int{}, StoreBytes: map[*ir.Op]int{}, StageRun: map[*ir.Value]int{}}
	b.MaxNReg = regBudget(f.Target, b.Threads, f.SmemBytes, b.CarriedRegs)
	b.CTAsPerSM = f.Target.CTAsPerSM(b.Threads, f.SmemBytes, b.CarriedRegs)
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind == ir.OpLoad && o.Result().Type.Rank() == 2 && f.Layouts[o.Result()].Kind == decision.Shared {
			b.CopyBytes[o] = f.chunkBytes(ir.MemOperands(o))
		}
		if w := f.storeBytes(o); w > 0 {
			b.StoreBytes[o] = w
		}
		for _, r := range o.Results {
			if _, staged := f.Staged[r]; staged && r.Type.Rank() == 2 && f.Layouts[r].Kind == decision.Expr {
				b.StageRun[r] = stageRun(r)
			}
		}
	})
	return b
}

// stageRun is the run a staged recomputed tile is computed and written in: 16 bytes
// of 16- or 32-bit elements where the row length allows, else one element.
func stageRun(v *ir.Value) int {
	es := v.Type.Elem.Size()
	if (es == 2 || es == 4) && v.Type.Shape[1]%(16/es) == 0 {
		return 16 / es
	}
	return 1
}

// storeBytes is the width of one st.global of a store of a rank-2 tile, 0 for any
// other op. A tile in fragments: a thread's two elements of a fragment row are
// adjacent columns (2t, 2t+1 from an even column base), stored together where the
// pair is aligned in memory and a column bound, if any, is an even constant (so it
// never splits a pair). A tile in shared memory or recomputed: runs of 16 bytes of a
// row where the row length allows, stored whole where every row start is 16-byte
// aligned and no column bound can cut a run.
func (f *fn) storeBytes(o *ir.Op) int {
	if o.Kind != ir.OpStore {
		return 0
	}
	m := ir.MemOperands(o)
	v := m.Val
	if v.Type.Rank() != 2 || m.Col0 == nil {
		return 0
	}
	es := v.Type.Elem.Size()
	switch l := f.Layouts[v]; l.Kind {
	case decision.Acc:
		even := m.Bound == nil
		if m.Bound != nil && m.Bound.Def != nil && m.Bound.Def.Kind == ir.OpConst {
			even = m.Bound.Def.Int%2 == 0
		}
		if (es == 2 || es == 4) && even && f.MemAlign(m, int64(es))%int64(2*es) == 0 {
			return 2 * es
		}
	case decision.Expr, decision.Shared:
		if es <= 4 && v.Type.Shape[1]%(16/es) == 0 && f.MemAlign(m, int64(es))%16 == 0 && m.Bound == nil {
			return 16
		}
	default:
		return 0
	}
	return es
}

// checkBudget: the budget is a multiple of 8 (or the most .maxnreg accepts), every
// rank-2 load into shared memory has a copy width that divides 16, and every tile
// store one of an element, a pair of them or 16 bytes.
func checkBudget(f *fn) error {
	b := f.Budget
	if b.MaxNReg < 8 || b.MaxNReg > target.MaxRegBudget || b.MaxNReg%8 != 0 && b.MaxNReg != target.MaxRegBudget {
		return fmt.Errorf("budget check: .maxnreg %d, want a multiple of 8 in 8..%d, or %d", b.MaxNReg, target.MaxRegBudget, target.MaxRegBudget)
	}
	var err error
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if err != nil || o.Kind != ir.OpLoad || o.Result().Type.Rank() != 2 || f.Layouts[o.Result()].Kind != decision.Shared {
			return
		}
		if w, ok := b.CopyBytes[o]; !ok || w < 1 || 16%w != 0 {
			err = fmt.Errorf("budget check: %s: copy width %d (decided %v), want 1, 2, 4, 8 or 16 bytes", o, w, ok)
		}
	})
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if err != nil || f.storeBytes(o) == 0 {
			return
		}
		es := ir.MemOperands(o).Val.Type.Elem.Size()
		if w, ok := b.StoreBytes[o]; !ok || w != es && w != 2*es && w != 16 {
			err = fmt.Errorf("budget check: %s: store width %d (decided %v), want %d, %d or 16 bytes", o, w, ok, es, 2*es)
		}
	})
	return err
}

// chunkBytes picks the cp.async size for a rank-2 load: the widest of 16, 8 and 4
// bytes that every row start is known to be aligned to.
func (f *fn) chunkBytes(m ir.MemOps) int {
	es := int64(m.Val.Type.Elem.Size())
	align := f.MemAlign(m, es)
	for _, w := range []int64{16, 8, 4} {
		if align%w == 0 {
			return int(w)
		}
	}
	return int(align)
}
