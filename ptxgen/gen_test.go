package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestGen(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "gemm_gen.go")
	code, stdout, errOut := runCLI("gen", "-kernel", "gemm", "-m", "17", "-n", "9", "-k", "33", "-targets", "sm_90,sm_120", "-pkg", "gemm", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if stdout != "" || errOut != "" {
		t.Errorf("gen printed %q / %q, want nothing", stdout, errOut)
	}
	src, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(src), "\n")
	if !regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`).MatchString(first) {
		t.Errorf("header %q is not a generated-code header", first)
	}
	// The canonical command: every configuration flag, targets newest first, -o relative.
	want := `"ptxgen gen -kernel gemm -m 17 -n 9 -k 33 -out bf16 -targets sm_120,sm_90 -pkg gemm -o gemm_gen.go"`
	if !strings.Contains(first, want) {
		t.Errorf("header %q does not record %s", first, want)
	}
	if strings.Contains(first, dir) {
		t.Errorf("header %q holds the absolute output path", first)
	}
	for _, tg := range []string{"sm_120", "sm_90"} {
		if _, err := os.Stat(filepath.Join(dir, "gemm_gen_"+tg+".ptx")); err != nil {
			t.Errorf("no PTX for %s: %v", tg, err)
		}
	}

	// The same configuration spelled differently gives the same bytes and leaves the
	// files untouched.
	st, _ := os.Stat(out)
	code, _, errOut = runCLI("gen", "-kernel=gemm", "-k=33", "-n", "9", "-m", "17", "-targets", "sm_120, sm_90", "-pkg", "gemm", "-o", out)
	if code != 0 {
		t.Fatalf("second run: exit %d: %s", code, errOut)
	}
	src2, _ := os.ReadFile(out)
	if string(src2) != string(src) {
		t.Errorf("regenerating gave different bytes")
	}
	if st2, _ := os.Stat(out); !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("regenerating rewrote an up-to-date file")
	}
}

func TestGenDefaults(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GOPACKAGE", "kern")
	out := filepath.Join(dir, "k.go")
	code, _, errOut := runCLI("gen", "-kernel", "gemm", "-m", "16", "-target", "sm_80", "-type", "Small", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	src, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"package kern\n", "-targets sm_80 -pkg kern -type Small -o k.go", "type Small struct", "//go:embed k_sm_80.ptx"} {
		if !strings.Contains(string(src), s) {
			t.Errorf("generated file lacks %q", s)
		}
	}
}

func TestGenBadUsage(t *testing.T) {
	t.Setenv("GOPACKAGE", "")
	dir := t.TempDir()
	out := filepath.Join(dir, "x.go")
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"gen", "-pkg", "p"}, []string{"-o is required"}},
		{[]string{"gen", "-o", out}, []string{"-pkg is required"}},
		{[]string{"gen", "-pkg", "p", "-o", filepath.Join(dir, "x.txt")}, []string{"-o", "x.txt", ".go"}},
		{[]string{"gen", "-pkg", "p", "-o", out, "-targets", "sm_90,sm_70"}, []string{"-targets sm_70", "sm_80"}},
		{[]string{"gen", "-pkg", "p", "-o", out, "-targets", "sm_90,sm_90"}, []string{"-targets sm_90,sm_90", "each target once"}},
		{[]string{"gen", "-pkg", "p", "-o", out, "-targets", "sm_90", "-target", "sm_80"}, []string{"-targets or -target"}},
		{[]string{"gen", "-pkg", "p", "-o", out, "-kernel", "gemm", "-m", "0"}, []string{"-m 0"}},
		{[]string{"gen", "-pkg", "p-q", "-o", out, "-kernel", "gemm"}, []string{"package name"}},
		{[]string{"gen", "-pkg", "p", "-type", "lower", "-o", out, "-kernel", "gemm"}, []string{"type name"}},
	}
	for _, c := range cases {
		code, stdout, errOut := runCLI(c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", c.args, code, errOut)
		}
		if stdout != "" {
			t.Errorf("%v: wrote to stdout", c.args)
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
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed runs left files: %v", entries)
	}
}
