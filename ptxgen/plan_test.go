package main

import (
	"os"
	"strings"
	"testing"
)

// lineDiff returns the lines where a and b differ, as "a | b" (both have the same
// number of lines, or the difference is the line count).
func lineDiff(a, b string) []string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	if len(al) != len(bl) {
		return []string{"line counts differ"}
	}
	var d []string
	for i := range al {
		if al[i] != bl[i] {
			d = append(d, al[i]+" | "+bl[i])
		}
	}
	return d
}

// TestPlanTargetOnlyChangesTheISA: the sm_120 plan emitted for sm_90 is the
// sm_120 kernel byte for byte except the .version and .target lines, for shapes
// whose plans differ between the two targets (head block, tile, split, register
// budget); without -plan-target the sm_90 kernel differs in more where the
// plans differ (64-head CTAs and 64-candidate tiles on sm_90 at T >= 64, register
// budgets, splits).
func TestPlanTargetOnlyChangesTheISA(t *testing.T) {
	for _, tc := range []struct {
		shape       []string
		plansDiffer bool
	}{
		{nil, false}, // the default, H=64, T=1: both get 16-head CTAs and 20 chunks
		{[]string{"-tokens", "256"}, true},
		{[]string{"-tokens", "64", "-heads", "128", "-k1", "2048"}, true},
		// The same SMs: 16-head CTAs on both, and the split, which differed with the
		// CTAs per SM, is a run-time argument now.
		{[]string{"-tokens", "8", "-heads", "16", "-sms", "132"}, false},
		{[]string{"-kernel", "gemm", "-m", "100", "-n", "72", "-k", "448"}, false},
	} {
		shape := tc.shape
		dump := func(target ...string) string {
			code, out, errOut := runCLI(append(append([]string{"dump"}, shape...), target...)...)
			if code != 0 {
				t.Fatalf("dump %v %v: exit %d: %s", shape, target, code, errOut)
			}
			return out
		}
		want := []string{".version 7.8 | .version 8.7", ".target sm_90 | .target sm_120"}
		got := lineDiff(dump("-target", "sm_90", "-plan-target", "sm_120"), dump("-target", "sm_120"))
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%v: sm_90 planned as sm_120 against sm_120 differs in:\n%s", shape, strings.Join(got, "\n"))
		}
		if d := lineDiff(dump("-target", "sm_90"), dump("-target", "sm_120")); tc.plansDiffer && len(d) <= 2 && d[0] != "line counts differ" {
			t.Errorf("%v: the sm_90 and sm_120 kernels differ only in %q: the test would not see a planning difference", shape, d)
		}
	}
}

func TestPlanTargetBad(t *testing.T) {
	for _, args := range [][]string{
		{"dump", "-plan-target", "sm_99"},
		{"dump", "-plan-target", "sm_90@sm_120"},
		{"dump", "-target", "sm_90@sm_99"},
		{"check", "-emu", "-plan-target", "bogus"},
	} {
		code, _, errOut := runCLI(args...)
		if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.Contains(errOut, "sm_120") {
			t.Errorf("%v: exit %d, stderr %q; want 2 and one line naming the accepted targets", args, code, errOut)
		}
	}
}

// TestGenPlanTarget: gen records -plan-target in its command line and writes the
// same PTX as dump -all does with it.
func TestGenPlanTarget(t *testing.T) {
	dir := t.TempDir()
	args := []string{"-tokens", "256", "-plan-target", "sm_120"}
	code, _, errOut := runCLI(append(append([]string{"gen"}, args...), "-targets", "sm_90", "-pkg", "x", "-o", dir+"/x.go")...)
	if code != 0 {
		t.Fatalf("gen: exit %d: %s", code, errOut)
	}
	goSrc, err := os.ReadFile(dir + "/x.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.SplitN(string(goSrc), "\n", 2)[0], "-targets sm_90 -plan-target sm_120 -pkg x") {
		t.Errorf("header: %s", strings.SplitN(string(goSrc), "\n", 2)[0])
	}
	ptx, err := os.ReadFile(dir + "/x_sm_90.ptx")
	if err != nil {
		t.Fatal(err)
	}
	_, want, _ := runCLI(append(append([]string{"dump", "-all"}, args...), "-target", "sm_90")...)
	if string(ptx) != want {
		t.Errorf("gen's PTX differs from dump's")
	}
}
