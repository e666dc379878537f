package lower

import (
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/target"
)

// Figures are what the lowering decides about a kernel's resources on a target: the
// numbers a launch plan needs to choose between variants. Measure returns them from
// the passes themselves, so a plan never holds a second copy of their rules.
type Figures struct {
	Threads int
	// SharedBytes is the dynamic shared memory per CTA the smem pass allocates; Fits
	// reports whether the target allows it (Compile refuses the kernel otherwise).
	SharedBytes int
	Fits        bool
	// CarriedRegs are the registers per thread of loop-carried fragments (plus what
	// replicated score tiles add), from which the register budget is set.
	CarriedRegs int
	// Registers is the register budget, the kernel's .maxnreg.
	Registers int
	// CTAsPerSM is how many of these CTAs one SM of the target holds at that budget.
	CTAsPerSM int
	// Replicated reports score tiles replicated across warps (layout): the kernel is
	// the one for latency-bound launches, not a copy of the other.
	Replicated bool
	// WarpGrid is how the layout pass split the first loop's carried accumulators
	// over the warps: row groups x column groups of m16n8 tiles ({0, 0} without one).
	WarpGrid [2]int
	// LatencyBound is the layout pass's judgement of the kernel's launches: the
	// kernel's ir.Latency, or the launch rule on its grid and t's SM count.
	LatencyBound bool
}

// Measure runs the passes that decide k's resources on t (through budget) and
// returns their figures: the budget pass's record (the .maxnreg and the CTAs per SM
// it keeps) and the shared memory, which Compile's emitter then writes for the same
// kernel on the same target.
func Measure(k *ir.Kernel, t target.Target) (Figures, error) {
	f, _, err := compile(k, t, Options{After: "budget"}, true)
	if err != nil {
		return Figures{}, err
	}
	b := f.Budget
	fig := Figures{
		Threads:      b.Threads,
		SharedBytes:  f.SmemBytes,
		Fits:         f.SmemBytes <= t.MaxSharedPerBlock,
		CarriedRegs:  b.CarriedRegs,
		Registers:    b.MaxNReg,
		CTAsPerSM:    b.CTAsPerSM,
		LatencyBound: f.latencyBound(),
	}
	for _, l := range f.Layouts {
		if l.Rep > 1 {
			fig.Replicated = true
			break
		}
	}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind != ir.OpFor || fig.WarpGrid != [2]int{} {
			return
		}
		for _, a := range o.Body.Args[1:] {
			if l := f.Layouts[a]; l.Kind == decision.Acc {
				fig.WarpGrid = [2]int{l.WM, l.WN}
				return
			}
		}
	})
	return fig, nil
}
