package lower

import (
	"fmt"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
)

// TestKPerm runs `b computed kperm` dots in the emulator against float64, as
// TestComputedB: the scores' reduction permuted (A read from shared memory pair by
// pair in the same order), P·V's output columns permuted (its stores follow the
// layout), each alone and both, split over 4 warps and whole in one.
func TestKPerm(t *testing.T) {
	computed := ir.HomeComputed
	for i, c := range []struct {
		m, kd, warps  int
		first, second ir.DotSchedule
	}{
		{32, 64, 4, ir.DotSchedule{Warps: [2]int{1, 1}, Replicate: 4, SplitK: 4, BHome: computed}, ir.DotSchedule{Warps: [2]int{1, 4}, BHome: computed, KPerm: true}},
		{32, 64, 4, ir.DotSchedule{Warps: [2]int{1, 1}, Replicate: 4, SplitK: 4, BHome: computed, KPerm: true}, ir.DotSchedule{Warps: [2]int{1, 4}, BHome: computed, KPerm: true}},
		{32, 64, 4, ir.DotSchedule{Warps: [2]int{1, 1}, Replicate: 4, SplitK: 4, BHome: computed, KPerm: true}, ir.DotSchedule{Warps: [2]int{1, 4}, BHome: computed}},
		{16, 48, 1, ir.DotSchedule{BHome: computed, KPerm: true}, ir.DotSchedule{BHome: computed}},
		{16, 48, 1, ir.DotSchedule{BHome: computed}, ir.DotSchedule{BHome: computed, KPerm: true}},
	} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			runComputedB(t, uint64(990+i), c.m, c.kd, c.warps, c.first, c.second)
		})
	}
}
