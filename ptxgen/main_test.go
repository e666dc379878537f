package main

import (
	"bytes"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestDumpGEMM(t *testing.T) {
	code, out, errOut := runCLI("dump", "-kernel", "gemm", "-m", "100", "-n", "72", "-k", "448", "-target", "sm_90")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, s := range []string{".target sm_90", ".visible .entry gemm(", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"} {
		if !strings.Contains(out, s) {
			t.Errorf("dump lacks %q", s)
		}
	}
}

func TestDumpIRAndAfter(t *testing.T) {
	code, out, errOut := runCLI("dump", "-kernel", "gemm", "-m", "17", "-ir")
	if code != 0 || !strings.HasPrefix(out, "kernel gemm(") {
		t.Fatalf("-ir: exit %d, stderr %q, out %.80q", code, errOut, out)
	}
	code, out, _ = runCLI("dump", "-m", "17", "-n", "9", "-k", "33", "-after", "layout")
	if code != 0 || !strings.Contains(out, "mma fragments") || !strings.Contains(out, "logical 17x9") {
		t.Fatalf("-after layout: exit %d, out:\n%s", code, out)
	}
}

// TestBadUsage: every bad flag or impossible configuration exits 2 with one line
// naming the flag, the value and what is accepted.
func TestBadUsage(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"dump", "-kernel", "gemm", "-m", "0"}, []string{"-m 0", "1..16777216"}},
		{[]string{"dump", "-n", "-5"}, []string{"-n -5", "1..16777216"}},
		{[]string{"dump", "-k", "abc"}, []string{"-k", "abc"}},
		{[]string{"dump", "-target", "sm_70"}, []string{"-target sm_70", "sm_80, sm_86, sm_89, sm_90, sm_120"}},
		{[]string{"dump", "-kernel", "conv"}, []string{"-kernel conv", "gemm"}},
		{[]string{"dump", "-out", "f16"}, []string{"-out f16", "bf16 or f32"}},
		{[]string{"dump", "-after", "regalloc"}, []string{"-after regalloc", "legalize"}},
		{[]string{"dump", "-bogus"}, []string{"-bogus"}},
		{[]string{"frobnicate"}, []string{"frobnicate", "dump, list or check"}},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, code)
		}
		if out != "" {
			t.Errorf("%v: wrote to stdout: %.80q", c.args, out)
		}
		if n := strings.Count(strings.TrimSpace(errOut), "\n"); n != 0 {
			t.Errorf("%v: error is %d lines, want 1:\n%s", c.args, n+1, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: error %q lacks %q", c.args, errOut, w)
			}
		}
	}
}

func TestList(t *testing.T) {
	code, out, _ := runCLI("list")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, s := range []string{"gemm", "sm_120", "legalize", "emit"} {
		if !strings.Contains(out, s) {
			t.Errorf("list lacks %q", s)
		}
	}
}

func TestHelpExitsZero(t *testing.T) {
	code, _, errOut := runCLI("dump", "-help")
	if code != 0 || !strings.Contains(errOut, "-m int") {
		t.Fatalf("exit %d, help:\n%s", code, errOut)
	}
}
