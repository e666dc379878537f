package runtime

import (
	"strings"
	"testing"
)

func TestPickTarget(t *testing.T) {
	all := []string{"sm_80", "sm_90", "sm_120"}
	for _, tc := range []struct {
		arch    string
		targets []string
		want    string // "" means an error
	}{
		{"sm_120", all, "sm_120"},
		{"sm_90", all, "sm_90"},
		{"sm_100", all, "sm_90"}, // never a newer target; the newest older one JITs
		{"sm_89", all, "sm_80"},
		{"sm_86", all, "sm_80"},
		{"sm_80", all, "sm_80"},
		{"sm_75", all, ""}, // older than any target: a bad device name to ParseID
		{"sm_90", []string{"sm_80"}, "sm_80"},
		{"sm_120", []string{"sm_120", "sm_80"}, "sm_120"},
		{"sm_90", []string{"sm_120"}, ""},
		{"sm_90", []string{"sm_90", "sm_90a"}, "sm_90a"}, // the chip-specific build, for its features
		{"sm_100", []string{"sm_90a", "sm_80"}, "sm_80"}, // 'a' code does not move to later chips
		{"sm_121", []string{"sm_120f", "sm_90"}, "sm_120f"},
		{"sm_100", []string{"sm_120f", "sm_90"}, "sm_90"},
		{"sm_90", nil, ""},
	} {
		got, err := PickTarget(tc.arch, tc.targets)
		if tc.want == "" {
			if err == nil {
				t.Errorf("PickTarget(%s, %v) = %q, want an error", tc.arch, tc.targets, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("PickTarget(%s, %v) = %q, %v; want %q", tc.arch, tc.targets, got, err, tc.want)
		}
	}
}

func TestPickTargetBadNames(t *testing.T) {
	for _, tc := range []struct{ arch, target string }{{"gfx90a", "sm_80"}, {"sm_90", "sm80"}, {"sm_90", "sm_"}, {"sm_90", "sm_x0"}, {"sm_090", "sm_80"}, {"sm_90", "compute_80"}} {
		if _, err := PickTarget(tc.arch, []string{tc.target}); err == nil || !strings.Contains(err.Error(), "bad target") {
			t.Errorf("PickTarget(%q, [%q]) = %v, want a bad-target error", tc.arch, tc.target, err)
		}
	}
}

func TestDevicePickUsesArch(t *testing.T) {
	d := &Device{arch: "sm_90", cc: 90}
	if got, err := d.Pick([]string{"sm_80", "sm_90", "sm_120"}); err != nil || got != "sm_90" {
		t.Errorf("Pick = %q, %v", got, err)
	}
}
