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
// Guarantees: the register budget, the CTAs per SM it keeps resident, and a copy
// width for every rank-2 load whose tile lands in shared memory.
func decideBudget(f *fn) decision.BudgetRecord {
	b := decision.BudgetRecord{Threads: 32 * f.Kernel.Warps, CarriedRegs: f.carriedRegs() + f.heldRegs(), CopyBytes: map[*ir.Op]int{}}
	b.MaxNReg = regBudget(f.Target, b.Threads, f.SmemBytes, b.CarriedRegs)
	b.CTAsPerSM = f.Target.CTAsPerSM(b.Threads, f.SmemBytes, b.CarriedRegs)
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind == ir.OpLoad && o.Result().Type.Rank() == 2 && f.Layouts[o.Result()].Kind == decision.Shared {
			b.CopyBytes[o] = f.chunkBytes(ir.MemOperands(o))
		}
	})
	return b
}

// checkBudget: the budget is a multiple of 8 (or the most .maxnreg accepts), and every
// rank-2 load into shared memory has a copy width that divides 16.
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
