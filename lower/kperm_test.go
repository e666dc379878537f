package lower

import (
	"fmt"
	"math"
	"math/rand/v2"
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
			seed := uint64(990 + i)
			rng := rand.New(rand.NewPCG(seed, 13))
			raw, sc, k := randomRawTile(rng, c.m, c.kd)
			qb, qv := randomBF16(rng, 16*c.kd, 1)
			pb, pv := randomBF16(rng, 16*c.m, 1)
			got, _ := runUserKernelBytes(t, computedBKernel(c.m, c.kd, c.warps, c.first, c.second), "sm_90",
				map[string][]byte{"raw": raw, "sc": sc, "q": qb, "p": pb, "y": make([]byte, 4*16*(c.m+c.kd))}, nil)
			want, bound := make([]float64, 16*(c.m+c.kd)), make([]float64, 16*(c.m+c.kd))
			for h := 0; h < 16; h++ {
				for r := 0; r < c.m; r++ {
					for j := 0; j < c.kd; j++ {
						x, y := qv[h*c.kd+j]*k[r*c.kd+j], pv[h*c.m+r]*k[r*c.kd+j]
						want[h*c.m+r] += x
						bound[h*c.m+r] += math.Abs(x)
						want[16*c.m+h*c.kd+j] += y
						bound[16*c.m+h*c.kd+j] += math.Abs(y)
					}
				}
			}
			checkSums(t, seed, got, want, bound)
		})
	}
}
