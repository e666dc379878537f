package target

import (
	"fmt"
	"strings"
	"testing"
)

func TestLookupTarget(t *testing.T) {
	for _, name := range Names() {
		tg, err := LookupTarget(name)
		if err != nil || tg.Name != name || tg.ID.String() != name || tg.MinVersion < 70 || tg.MaxSharedPerBlock > tg.SharedPerSM || tg.PlannedFor != "" {
			t.Errorf("%s: %+v, %v", name, tg, err)
		}
	}
	for _, bad := range []string{"sm_70", "sm_100", "sm_89a", "sm_90f", "sm_90@sm_120", "sm_121"} {
		_, err := LookupTarget(bad)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) || !strings.Contains(err.Error(), "sm_80, sm_86, sm_89, sm_90, sm_90a, sm_120, sm_120a") {
			t.Errorf("LookupTarget(%q): %v, want an error naming it and the targets", bad, err)
		}
	}
	// The architecture-specific forms are their target's limits with their own name
	// and the PTX version that accepts them.
	a, b := MustLookup("sm_90a"), MustLookup("sm_90")
	if a.MinVersion != 80 || a.ID != (ID{SM: 90, Suffix: 'a'}) || a.MaxSharedPerBlock != b.MaxSharedPerBlock || a.SMs != b.SMs {
		t.Errorf("sm_90a = %+v", a)
	}
}

// TestParseID: one parser for every target name, sm_80..sm_121 with the a and f
// forms; anything else is refused naming the name and the accepted range.
func TestParseID(t *testing.T) {
	for _, tc := range []struct {
		name string
		want ID
	}{
		{"sm_80", ID{80, 0}}, {"sm_90a", ID{90, 'a'}}, {"sm_100f", ID{100, 'f'}}, {"sm_120a", ID{120, 'a'}}, {"sm_121", ID{121, 0}},
	} {
		got, err := ParseID(tc.name)
		if err != nil || got != tc.want || got.String() != tc.name {
			t.Errorf("ParseID(%q) = %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
	for _, bad := range []string{"", "sm_", "sm_75", "sm_122", "sm80", "sm_090", "sm_90b", "sm_x0", "compute_90", "sm_90aa", "sm_+90", "gfx90a"} {
		if _, err := ParseID(bad); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%q", bad)) || !strings.Contains(err.Error(), "80..121") {
			t.Errorf("ParseID(%q) = %v, want an error naming it and 80..121", bad, err)
		}
	}
}

// TestWithLimitsOf: planning under another target's limits keeps the name and
// features and records whose limits they are.
func TestWithLimitsOf(t *testing.T) {
	e, p := MustLookup("sm_90"), MustLookup("sm_120")
	got := e.WithLimitsOf(p)
	if got.Name != "sm_90" || got.MinVersion != e.MinVersion || !got.GridDependency || got.MaxSharedPerBlock != p.MaxSharedPerBlock || got.SMs != p.SMs || got.PlannedFor != "sm_120" || got.String() != "sm_90 planned for sm_120" {
		t.Errorf("sm_90 with sm_120's limits = %+v (%s)", got, got)
	}
	if self := e.WithLimitsOf(e); self != e {
		t.Errorf("sm_90 with its own limits = %+v, want %+v", self, e)
	}
	if got := e.WithSMs(7).SMs; got != 7 {
		t.Errorf("WithSMs(7).SMs = %d", got)
	}
	if got := e.WithSMs(0).SMs; got != e.SMs {
		t.Errorf("WithSMs(0).SMs = %d, want the target's %d", got, e.SMs)
	}
}

// TestCTAsPerSM: the resident CTAs are bounded by shared memory and by the
// registers the carried fragments plus RegHeadroom need (at least MinRegBudget).
func TestCTAsPerSM(t *testing.T) {
	sm90 := MustLookup("sm_90")
	cases := []struct{ threads, smem, carried, want int }{
		{128, 74 * 1024, 60, 3},  // 160 registers fit 3; shared memory allows 3
		{128, 74 * 1024, 100, 2}, // 200 registers: 2
		{128, 0, 0, 4},           // the 128-register floor: 4 CTAs of 128 threads
		{256, 0, 0, 2},
		{128, 200 * 1024, 0, 1}, // shared memory allows one
		{1024, 0, 200, 1},       // never below one
		{320, 0, 0, 1},          // 10 warps hold registers like 12: one CTA of 128 registers, not 2
		{96, 0, 0, 4},           // 3 warps like 4
	}
	for _, c := range cases {
		if got := sm90.CTAsPerSM(c.threads, c.smem, c.carried); got != c.want {
			t.Errorf("CTAsPerSM(%d threads, %d B, %d carried) = %d, want %d", c.threads, c.smem, c.carried, got, c.want)
		}
	}
}

// TestRegThreads: a CTA needs registers for its warps rounded up to the SM's four
// processing blocks (run 42: 10 warps at 200 registers did not launch).
func TestRegThreads(t *testing.T) {
	for _, c := range []struct{ threads, want int }{{32, 128}, {128, 128}, {256, 256}, {288, 384}, {320, 384}, {384, 384}, {1024, 1024}} {
		if got := RegThreads(c.threads); got != c.want {
			t.Errorf("RegThreads(%d) = %d, want %d", c.threads, got, c.want)
		}
	}
}
