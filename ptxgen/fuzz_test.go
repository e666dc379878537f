package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	pcheck "github.com/ptxgen/ptxgen/check"
	"github.com/ptxgen/ptxgen/golden"
)

// FuzzCLI runs the command line in-process on arguments split from the input at
// spaces: whatever they are, ptxgen neither panics nor exits with anything but 0
// or 2 (1 is a check that ran and failed, and the emulator is replaced by a pass
// here). An iteration stays short: it runs in a fresh temporary directory and
// arguments naming other directories are skipped; check's case is built for real
// (configuration, inputs, reference, lowering) under a 64 MB host-memory bound, 2 s
// of estimated emulation and with numbers above 64, but not run. The directory holds
// k.ir (a kernel) and p.ir (a split program) for -from. Seeds: testdata/fuzz/FuzzCLI.
func FuzzCLI(f *testing.F) {
	irFiles := map[string][]byte{}
	for name, src := range map[string]string{"k.ir": "scale.ir", "p.ir": "split.ir"} {
		b, err := os.ReadFile(filepath.Join("testdata", "from", src))
		if err != nil {
			f.Fatal(err)
		}
		irFiles[name] = b
	}
	for _, s := range []string{
		"", "list", "help", "dump -kernel gemm -m 17 -n 9 -k 33", "dump -ir -kernel gemm", "dump -after layout -kernel gemm -m 3",
		"dump -tokens 2 -heads 16 -k0 64 -k1 0 -split 2", "dump -head-block 64 -target sm_120", "dump -scale 1e39",
		"check -emu -kernel gemm -m 3 -n 2 -k 5", "check -emu -tokens 2 -heads 4 -k0 40 -k1 8 -page0 16",
		"gen -kernel gemm -m 17 -pkg p -o k.go", "gen -pkg kernel -o k.go -targets sm_90,sm_80", "dump -kernel copy -rows 100",
		"gen -manifest m.json -max-tokens 4 -heads 16 -targets sm_90", "check -emu -max-tokens 8 -tokens 3 -heads 4 -k0 40 -k1 8",
		"dump -from k.ir", "dump -ir -from p.ir -target sm_80", "dump -from p.ir -after smem", "check -emu -from k.ir -args alpha=0.5,n=1000",
		"check -emu -from p.ir -args rows=2,chunks=3", "gen -from p.ir -pkg p -o k.go -manifest m.json", "gen -from k.ir -targets sm_90",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		for _, a := range args {
			if strings.Contains(a, "/") || strings.Contains(a, "..") {
				return // only the temporary directory
			}
		}
		if len(args) > 0 && args[0] == "check" && hasLargeNumber(args) {
			return
		}
		t.Chdir(t.TempDir())
		for name, b := range irFiles {
			if err := os.WriteFile(name, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Setenv("GOPACKAGE", "")
		defer func(r func(*pcheck.Case) (*pcheck.Result, error), m int64, s float64) {
			runCase, maxHostBytes, maxEmulatorSeconds = r, m, s
		}(runCase, maxHostBytes, maxEmulatorSeconds)
		runCase = func(c *pcheck.Case) (*pcheck.Result, error) {
			return &pcheck.Result{Case: c.Name, Reports: []golden.Report{{Name: "not run"}}}, nil
		}
		// A fuzz input may take at most 10 s in an instrumented worker, or the fuzzer
		// stops ("hung or terminated unexpectedly"): check -emu -tokens 55 built a
		// reference of 1 s uninstrumented, 43 s of estimated emulation. 2 s of
		// emulation is about 0.05 s of reference.
		maxHostBytes, maxEmulatorSeconds = 64<<20, 2
		code, _, errOut := runCLI(args...)
		if code != 0 && code != 2 {
			t.Fatalf("ptxgen %q: exit %d, want 0 or 2; stderr:\n%s", args, code, errOut)
		}
		if code == 2 && strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("ptxgen %q: the error is not one line:\n%s", args, errOut)
		}
	})
}

// hasLargeNumber reports whether an argument (or a -flag=value) is a number above 64
// in magnitude, which could make check's reference slow.
func hasLargeNumber(args []string) bool {
	for _, a := range args {
		if _, v, ok := strings.Cut(a, "="); ok {
			a = v
		}
		if f, err := strconv.ParseFloat(a, 64); err == nil && !(f >= -64 && f <= 64) {
			return true
		}
		if n, err := strconv.ParseInt(a, 0, 64); err == nil && (n > 64 || n < -64) {
			return true
		}
	}
	return false
}
