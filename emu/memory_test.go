package emu

import (
	"fmt"
	"testing"

	"github.com/ptxgen/ptxgen/internal/memtest"
	"github.com/ptxgen/ptxgen/ptx"
)

// TestLaunchBytesCoversMeasured: LaunchBytes, which check adds to the buffers when it
// admits a run by its memory, is at least what a launch holds, measured for CTAs of
// 1 to 16 warps over 16 to 200 KB of shared memory (the race checker keeps a record
// per shared byte and warp), and not so large that it refuses what fits (at most
// 4x the measured peak plus 2 MiB). Enough CTAs that the sampler sees the state.
func TestLaunchBytesCoversMeasured(t *testing.T) {
	body := `
	mov.u32 %r0, %tid.x;
	shl.b32 %r1, %r0, 2;
	mov.u32 %r2, smem;
	add.u32 %r3, %r2, %r1;
	st.shared.u32 [%r3], %r0;
	bar.sync 0;
	ld.shared.u32 %r4, [%r3];`
	for _, c := range []struct{ warps, shared int }{{1, 16 << 10}, {4, 64 << 10}, {8, 100 << 10}, {16, 200 << 10}} {
		t.Run(fmt.Sprintf("%d warps %d bytes", c.warps, c.shared), func(t *testing.T) {
			m := parse(t, kernel("", body))
			k := &ptx.Kernel{Module: m, Name: "k", Grid: [3]int{4000 / c.warps, 1, 1}, Block: 32 * c.warps, SharedBytes: c.shared}
			est, err := LaunchBytes(k)
			if err != nil {
				t.Fatal(err)
			}
			var runErr error
			peak := memtest.PeakHeapBytes(func() { runErr = RunKernel(k, nil, NewMemory()) })
			if runErr != nil {
				t.Fatal(runErr)
			}
			t.Logf("estimate %d, measured %d", est, peak)
			if peak > est {
				t.Errorf("a launch held %d bytes, more than LaunchBytes' %d", peak, est)
			}
			if est > 4*peak+2<<20 {
				t.Errorf("LaunchBytes = %d, more than 4x the %d bytes a launch held", est, peak)
			}
		})
	}
}
