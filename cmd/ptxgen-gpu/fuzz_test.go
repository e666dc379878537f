package main

import (
	"errors"
	"strings"
	"testing"
)

// errNoFuzzDevice is what the fuzz test's opener returns: reaching it means the
// arguments parsed and validated, which is all FuzzCLI asks of a command that then
// needs a GPU.
var errNoFuzzDevice = errors.New("fuzz: no device")

// FuzzCLI runs ptxgen-gpu's command line in-process on arguments split from the input
// at spaces, with an opener that has no device: nothing may panic, and every command
// exits 0, 2 (bad usage), or 1 only for the missing device, after its flags were
// accepted. It runs in a fresh temporary directory; arguments naming other
// directories, and bench -vectors-out (which writes the benchmark shapes' inputs,
// gigabytes), are skipped. Seeds: testdata/fuzz/FuzzCLI.
func FuzzCLI(f *testing.F) {
	for _, s := range []string{
		"", "help", "info -device 1", "check -gpu -kernel gemm -m 17", "check -gpu -vectors x -heads 8",
		"dump -kernel gemm -o k.ptx", "dump -head-block 64 -target sm_120", "bench -list", "bench -iters 0", "bench -bw NaN",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, line string) {
		args := strings.Fields(line)
		for _, a := range args {
			if strings.Contains(a, "/") || strings.Contains(a, "..") || strings.Contains(a, "vectors-out") {
				return
			}
		}
		t.Chdir(t.TempDir())
		open := func(int) (device, error) { return nil, errNoFuzzDevice }
		code, _, errOut := runCLI(open, args...)
		switch {
		case code == 0 || code == 2:
		case code == 1 && strings.Contains(errOut, errNoFuzzDevice.Error()):
		default:
			t.Fatalf("ptxgen-gpu %q: exit %d; stderr:\n%s", args, code, errOut)
		}
	})
}
