package lower

import (
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/target"
)

// This file holds every number the lowering was tuned with, each with the
// measurement that set it, and the register budget. The occupancy rule itself
// (target.RegHeadroom and CTAsPerSM) lives in package target, because the kernel
// builders plan splits with it too. Measurements are on the H200 unless noted;
// docs/perf-notes.md has the full runs.

// replicateMaxRowGroups is the most row groups (m16 tiles of the score tile split
// across warps) a CTA may have for its score tiles to be replicated: with one row
// group (16-head CTAs, 4 warps) each warp's copy replaces the cross-warp exchange
// of a 16 x 32 tile; with four (64-head CTAs of 8 warps) it doubles every warp's
// q·k and lost 6-11% (H=64 T=64 59.0 against 52.9 us split, T=128 97.7 against
// 85.0, K=2176 155.8 against 134.2; perf-notes v7).
const replicateMaxRowGroups = 1

// replicatedExtraRegs is what replicated score tiles add to the loop-carried
// registers in the budget: each warp holds whole score tiles and their B fragments
// (the default decode needs about 200 registers with them; perf-notes v3).
const replicatedExtraRegs = 32

// waitAllWarps is the CTA size from which the first wait for a gather waits for
// every outstanding one (sync): one barrier then covers them all, where per-tile
// waits cost a barrier each (seven per K tile). At 16 warps the barriers cost more
// than the dequantization they let overlap with later gathers (H=64: T=256 159.4
// -> 157.9 us, K=2176 132.1 -> 131.3); at 4 warps they do not (H8/H16 +0.5-1%;
// perf-notes v6 item 6).
const waitAllWarps = 16

// dotGroupMinKSteps is the least number of k16 steps for which schedule fuses
// dots into a group: with two steps (32-candidate tiles) the A fragments of the
// whole extent fit next to the accumulators and dots one at a time schedule
// better (grouping at K = 32 made a 32-tile 64-head variant spill on sm_80; at
// K = 64 it took the 64-candidate variant from 56 to 20 bytes of spill on the way
// to none; perf-notes v6 item 3).
const dotGroupMinKSteps = 4

// dotGroupMaxRegs is the most registers per thread (the SM's registers over the
// CTA's threads) at which schedule fuses dots into groups: the grouping exists for
// 16-warp CTAs at 128 registers, where ptxas spilled without it. With more, it
// hurts: a 64-head CTA of 8 warps (255 registers) spilled 80 bytes grouped and
// none one dot at a time (ptxas 11.8; perf-notes v7).
const dotGroupMaxRegs = target.MinRegBudget

// regBudget is the .maxnreg that keeps CTAsPerSM resident: the largest that keeps
// the CTAs per SM shared memory allows, never below the carried fragments plus
// target.RegHeadroom (100: the headroom at which every mla_decode variant of the
// test matrix assembles with no spill; 168 registers and three CTAs per SM on
// sm_90 took H=64 T=256 328.7 -> 279.9 us, perf-notes v5 item 1).
func regBudget(t target.Target, threads, smem, carried int) int {
	return min(t.RegsPerSM/(target.RegThreads(threads)*t.CTAsPerSM(threads, smem, carried))/8*8, target.MaxRegBudget)
}

// carriedRegs is the most registers per thread that loop-carried fragments
// (accumulators and their row statistics) hold in any loop, plus
// replicatedExtraRegs when score tiles are replicated across warps.
func (f *fn) carriedRegs() int {
	most, extra := 0, 0
	for _, l := range f.Layouts {
		if l.Rep > 1 {
			extra = replicatedExtraRegs
			break
		}
	}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind != ir.OpFor {
			return
		}
		n := 0
		for _, a := range o.Body.Args[1:] {
			l := f.Layouts[a]
			switch l.Kind {
			case decision.Acc:
				n += a.Type.Shape[0] / decision.GranuleM / l.WM * a.Type.Shape[1] / decision.GranuleN / l.WN * 4
			case decision.Rows:
				n += a.Type.Shape[0] / decision.GranuleM / l.WM * 2
			case decision.Cols:
				n += a.Type.Shape[0] / decision.GranuleN / l.WN * 2
			case decision.Threads:
				n += (a.Type.Shape[0] + 32*f.WarpsFor(a) - 1) / (32 * f.WarpsFor(a))
			}
		}
		most = max(most, n)
	})
	return most + extra
}
