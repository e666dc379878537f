package ptxas

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// retarget rewrites the .version and .target lines of a test kernel.
func retarget(t *testing.T, src, version, target string) string {
	t.Helper()
	out := strings.Replace(src, "\n.version 7.0\n", "\n.version "+version+"\n", 1)
	out = strings.Replace(out, "\n.target sm_80\n", "\n.target "+target+"\n", 1)
	if target != "sm_80" && out == src {
		t.Fatal("retarget: .version/.target lines not found")
	}
	return out
}

// TestMMA checks both targets the generator emits with the 11.8 toolchain: the bf16
// m16n8k16 mma.sync must assemble cleanly and become a tensor-core HMMA, not an emulation.
func TestMMA(t *testing.T) {
	Require(t)
	src := readTestdata(t, "mma_bf16.ptx")
	for _, tc := range []struct{ version, arch string }{{"7.0", "sm_80"}, {"7.8", "sm_90"}} {
		t.Run(tc.arch, func(t *testing.T) {
			res, err := Assemble(retarget(t, src, tc.version, tc.arch), tc.arch)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Warnings) != 0 {
				t.Errorf("warnings: %q", res.Warnings)
			}
			if res.Registers <= 0 {
				t.Errorf("Registers = %d, want > 0; log:\n%s", res.Registers, res.Log)
			}
			if res.LocalBytes != 0 || res.StackBytes != 0 || res.SpillStores != 0 || res.SpillLoads != 0 {
				t.Errorf("unexpected local memory: %+v", res)
			}
			if len(res.Cubin) < 4 || string(res.Cubin[1:4]) != "ELF" {
				t.Fatalf("cubin is not an ELF file (%d bytes)", len(res.Cubin))
			}
			sass, err := SASS(res.Cubin)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(sass, "HMMA.16816.F32.BF16") {
				t.Errorf("SASS has no HMMA.16816.F32.BF16:\n%s", sass)
			}
			if !strings.Contains(sass, "code for "+tc.arch) {
				t.Errorf("SASS is not for %s:\n%s", tc.arch, sass)
			}
		})
	}
}

// TestErrorNamesLine checks that a rejected kernel's error points at the PTX line, since
// that is what a developer needs to find the bad instruction in generated text.
func TestErrorNamesLine(t *testing.T) {
	Require(t)
	lines := strings.Split(readTestdata(t, "mma_bf16.ptx"), "\n")
	bad := -1
	for i, l := range lines {
		if strings.HasPrefix(l, "\tmma.sync") {
			lines[i] = "\tmma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%f4, %f5}, {%r7}, {%r11, %r12}, {%f0, %f1, %f2, %f3};"
			bad = i + 1
		}
	}
	if bad < 0 {
		t.Fatal("no mma line in testdata")
	}
	_, err := Assemble(strings.Join(lines, "\n"), "sm_80")
	if err == nil {
		t.Fatal("Assemble accepted a malformed mma")
	}
	var perr *Error
	if !errors.As(err, &perr) {
		t.Fatalf("error is %T, want *Error: %v", err, err)
	}
	want := fmt.Sprintf("kernel.ptx, line %d; error", bad)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error does not contain %q:\n%v", want, err)
	}
	if strings.Contains(err.Error(), os.TempDir()) {
		t.Errorf("error mentions the temporary directory:\n%v", err)
	}
}

func TestLocalMemory(t *testing.T) {
	Require(t)
	res, err := Assemble(readTestdata(t, "local.ptx"), "sm_80")
	if err != nil {
		t.Fatal(err)
	}
	if res.StackBytes < 256 || res.LocalBytes < 256 {
		t.Errorf("StackBytes = %d, LocalBytes = %d, want >= 256; log:\n%s", res.StackBytes, res.LocalBytes, res.Log)
	}
	sass, err := SASS(res.Cubin)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sass, "STL") || !strings.Contains(sass, "LDL") {
		t.Errorf("SASS has no local loads/stores:\n%s", sass)
	}
}

func TestWarnings(t *testing.T) {
	Require(t)
	res, err := Assemble(readTestdata(t, "warn.ptx"), "sm_80")
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) != 2 {
		t.Fatalf("got %d warnings, want 2: %q", len(res.Warnings), res.Warnings)
	}
	for _, w := range res.Warnings {
		if !strings.HasPrefix(w, "ptxas warning") {
			t.Errorf("warning %q does not start with 'ptxas warning'", w)
		}
	}
}

func TestBadArch(t *testing.T) {
	for _, a := range []string{"", "sm80", "compute_80 -o /etc/x", "sm_90 "} {
		if _, err := Assemble("", a); err == nil || !strings.Contains(err.Error(), "bad arch") {
			t.Errorf("Assemble(arch %q) = %v, want a bad-arch error", a, err)
		}
	}
}

// TestParseStats pins the -v parsing on a log with two kernels, one of which spills and
// one that reports lmem separately, so the parser does not depend on one ptxas release.
func TestParseStats(t *testing.T) {
	log := `ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'a' for 'sm_80'
ptxas info    : Function properties for a
    48 bytes stack frame, 40 bytes spill stores, 36 bytes spill loads
ptxas info    : Used 255 registers, 376 bytes cmem[0]
ptxas info    : Compiling entry function 'b' for 'sm_80'
ptxas info    : Function properties for b
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 10 registers, 16 bytes lmem, 360 bytes cmem[0]
`
	var r Result
	parseStats(&r, log)
	want := Result{Registers: 255, SpillStores: 40, SpillLoads: 36, StackBytes: 48, LocalBytes: 64}
	if fmt.Sprint(r) != fmt.Sprint(want) {
		t.Errorf("parseStats = %+v, want %+v", r, want)
	}
}

func TestIsSeverity(t *testing.T) {
	for _, tc := range []struct {
		line, sev string
		want      bool
	}{
		{"ptxas kernel.ptx, line 19; error   : Arguments mismatch for instruction 'st'", "error", true},
		{"ptxas fatal   : Ptx assembly aborted due to errors", "fatal", true},
		{"ptxas warning : For entry w adjusting per thread register count", "warning", true},
		{"ptxas info    : Compiling entry function 'error' for 'sm_80'", "error", false},
		{"ptxas info    : Function properties for warning_kernel", "warning", false},
		{"    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads", "error", false},
	} {
		if got := isSeverity(tc.line, tc.sev); got != tc.want {
			t.Errorf("isSeverity(%q, %q) = %v, want %v", tc.line, tc.sev, got, tc.want)
		}
	}
}

func TestFindEnv(t *testing.T) {
	t.Setenv("PTXAS", filepath.Join(t.TempDir(), "no-such-ptxas"))
	if _, err := Find(); err == nil {
		t.Error("Find accepted a $PTXAS that does not exist")
	}
	dir := t.TempDir()
	fake := filepath.Join(dir, "ptxas")
	if err := os.WriteFile(fake, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PTXAS", fake)
	if p, err := Find(); err != nil || p != fake {
		t.Errorf("Find() = %q, %v; want %q", p, err, fake)
	}
}

// fakeTB records what Require does; embedding testing.TB satisfies its private method.
type fakeTB struct {
	testing.TB
	skipped, failed bool
}

func (f *fakeTB) Helper()                        {}
func (f *fakeTB) Skipf(string, ...any)           { f.skipped = true }
func (f *fakeTB) Fatalf(string, ...any)          { f.failed = true }
func (f *fakeTB) Logf(format string, a ...any)   {}
func (f *fakeTB) Errorf(format string, a ...any) { f.failed = true }

func TestRequireMissing(t *testing.T) {
	t.Setenv("PTXAS", filepath.Join(t.TempDir(), "none"))
	for _, tc := range []struct {
		ci              string
		skipped, failed bool
	}{{"", true, false}, {"false", true, false}, {"true", false, true}, {"1", false, true}} {
		t.Setenv("CI", tc.ci)
		f := &fakeTB{}
		if p := Require(f); p != "" {
			t.Errorf("CI=%q: Require returned %q", tc.ci, p)
		}
		if f.skipped != tc.skipped || f.failed != tc.failed {
			t.Errorf("CI=%q: skipped=%v failed=%v, want %v %v", tc.ci, f.skipped, f.failed, tc.skipped, tc.failed)
		}
	}
}
