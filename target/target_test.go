package target

import (
	"strings"
	"testing"
)

func TestLookupTarget(t *testing.T) {
	for _, name := range TargetNames() {
		tg, err := LookupTarget(name)
		if err != nil || tg.Name != name || tg.MinVersion < 70 || tg.MaxSharedPerBlock > tg.SharedPerSM {
			t.Errorf("%s: %+v, %v", name, tg, err)
		}
	}
	_, err := LookupTarget("sm_70")
	if err == nil || !strings.Contains(err.Error(), `"sm_70"`) || !strings.Contains(err.Error(), "sm_80, sm_86, sm_89, sm_90, sm_120") {
		t.Errorf("unknown target: %v", err)
	}
}

// TestCTAsPerSM: the resident CTAs are bounded by shared memory and by the
// registers the carried fragments plus RegHeadroom need (at least MinRegBudget).
func TestCTAsPerSM(t *testing.T) {
	sm90, _ := LookupTarget("sm_90")
	cases := []struct{ threads, smem, carried, want int }{
		{128, 74 * 1024, 60, 3},  // 160 registers fit 3; shared memory allows 3
		{128, 74 * 1024, 100, 2}, // 200 registers: 2
		{128, 0, 0, 4},           // the 128-register floor: 4 CTAs of 128 threads
		{256, 0, 0, 2},
		{128, 200 * 1024, 0, 1}, // shared memory allows one
		{1024, 0, 200, 1},       // never below one
	}
	for _, c := range cases {
		if got := sm90.CTAsPerSM(c.threads, c.smem, c.carried); got != c.want {
			t.Errorf("CTAsPerSM(%d threads, %d B, %d carried) = %d, want %d", c.threads, c.smem, c.carried, got, c.want)
		}
	}
}
