package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/target"
)

// budgetRecord is what the budget pass decided: the kernel's register budget and
// the width of each copy into shared memory. Measure reports it (Figures) and the
// emitter writes it, so the plan and the PTX never hold two copies of the rule.
type budgetRecord struct {
	threads int
	// carriedRegs are the registers per thread that loop-carried fragments hold
	// (carriedRegs) and A fragments held across a loop (heldRegs), from which the
	// budget is set.
	carriedRegs int
	// maxNReg is the .maxnreg: the most registers per thread that keep ctasPerSM
	// CTAs resident (regBudget), the CTAs per SM shared memory allows.
	maxNReg, ctasPerSM int
	// copyBytes is, for each rank-2 load into shared memory, the bytes one copy
	// moves: 16, 8 or 4 (a cp.async chunk: the widest every row start is aligned
	// to), or less (the rows' alignment; element copies through registers).
	copyBytes map[*ir.Op]int
}

// decideBudget is the budget pass.
//
// Requires: layouts (layout), roles (roles) and the shared-memory size (smem).
// Guarantees: the register budget, the CTAs per SM it keeps resident, and a copy
// width for every rank-2 load whose tile lands in shared memory.
func decideBudget(f *fn) budgetRecord {
	b := budgetRecord{threads: 32 * f.k.Warps, carriedRegs: f.carriedRegs() + f.heldRegs(), copyBytes: map[*ir.Op]int{}}
	b.maxNReg = regBudget(f.target, b.threads, f.smem, b.carriedRegs)
	b.ctasPerSM = f.target.CTAsPerSM(b.threads, f.smem, b.carriedRegs)
	walkOps(f.k.Body, func(o *ir.Op) {
		if o.Kind == ir.OpLoad && o.Result().Type.Rank() == 2 && f.layouts[o.Result()].kind == lShared {
			b.copyBytes[o] = f.chunkBytes(memOperands(o))
		}
	})
	return b
}

// checkBudget: the budget is a multiple of 8 (or the most .maxnreg accepts), and every
// rank-2 load into shared memory has a copy width that divides 16.
func checkBudget(f *fn) error {
	b := f.budget
	if b.maxNReg < 8 || b.maxNReg > target.MaxRegBudget || b.maxNReg%8 != 0 && b.maxNReg != target.MaxRegBudget {
		return fmt.Errorf("budget check: .maxnreg %d, want a multiple of 8 in 8..%d, or %d", b.maxNReg, target.MaxRegBudget, target.MaxRegBudget)
	}
	var err error
	walkOps(f.k.Body, func(o *ir.Op) {
		if err != nil || o.Kind != ir.OpLoad || o.Result().Type.Rank() != 2 || f.layouts[o.Result()].kind != lShared {
			return
		}
		if w, ok := b.copyBytes[o]; !ok || w < 1 || 16%w != 0 {
			err = fmt.Errorf("budget check: %s: copy width %d (decided %v), want 1, 2, 4, 8 or 16 bytes", o, w, ok)
		}
	})
	return err
}
