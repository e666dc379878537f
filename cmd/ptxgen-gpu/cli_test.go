package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func runCLI(open opener, args ...string) (int, string, string) {
	var o, e bytes.Buffer
	code := run(args, &o, &e, open)
	return code, o.String(), e.String()
}

func TestCheckGPU(t *testing.T) {
	vec, _ := filepath.Glob("../../golden/testdata/vectors/mla_decode/h4_sink_edges")
	cases := [][]string{
		{"check", "-gpu", "-kernel", "gemm", "-m", "17", "-n", "9", "-k", "33"},
		{"check", "-gpu", "-kernel", "gemm", "-m", "7", "-n", "48", "-k", "100", "-out", "f32", "-seed", "4"},
		{"check", "-gpu", "-heads", "16", "-k0", "63", "-k1", "0", "-page0", "53", "-split", "1"},
		{"check", "-gpu", "-heads", "8", "-k0", "40", "-k1", "0", "-cache", "bf16", "-nope", "200", "-rope", "40"},
	}
	if len(vec) == 1 {
		cases = append(cases, []string{"check", "-gpu", "-vectors", vec[0]})
	}
	for _, args := range cases {
		code, out, errOut := runCLI(emuOpener("sm_90"), args...)
		if code != 0 {
			t.Errorf("%v: exit %d\n%s%s", args, code, out, errOut)
			continue
		}
		for _, s := range []string{"== GPU: device 0: emulator", "== emulator", "== GPU vs emulator", "target=sm_90", "SUMMARY gpu=ok emu=ok diff=ok", "PASS"} {
			if !strings.Contains(out, s) {
				t.Errorf("%v: output lacks %q:\n%s", args, s, out)
			}
		}
	}
}

func TestCheckGPUTargets(t *testing.T) {
	// A device ptxgen has no target for gets the newest that runs on it.
	code, out, errOut := runCLI(emuOpener("sm_100"), "check", "-gpu", "-kernel", "gemm", "-m", "1", "-n", "1", "-k", "1", "-emu=false")
	if code != 0 || !strings.Contains(out, "target=sm_90") || strings.Contains(out, "== emulator") {
		t.Errorf("sm_100 device: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut = runCLI(emuOpener("sm_120"), "check", "-gpu", "-kernel", "gemm", "-m", "1", "-n", "1", "-k", "1", "-target", "sm_80")
	if code != 0 || !strings.Contains(out, "target=sm_80") {
		t.Errorf("-target sm_80: exit %d\n%s%s", code, out, errOut)
	}
}

func TestUsage(t *testing.T) {
	noDevice := func(int) (device, error) { return nil, errors.New("no device") }
	for _, c := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"check", "-kernel", "gemm"}, 2, "say -gpu"},
		{[]string{"check", "-gpu", "-kernel", "gemm", "-m", "0"}, 2, "-m 0"},
		{[]string{"check", "-gpu", "-target", "sm_70"}, 2, "-target sm_70"},
		{[]string{"check", "-gpu", "-invalid", "2"}, 2, "-invalid 2"},
		{[]string{"check", "-gpu", "-kernel", "gemm", "-vectors", "x"}, 1, "no device"},
		{[]string{"frob"}, 2, "unknown command"},
		// Issue 15: conflicting, non-finite and unlaunchable values, before any device.
		{[]string{"check", "-gpu", "-vectors", "x", "-heads", "8"}, 2, "-heads with -vectors x"},
		{[]string{"check", "-gpu", "-scale", "1e39"}, 2, `invalid value "1e39" for flag -scale`},
		{[]string{"check", "-gpu", "-invalid", "NaN"}, 2, `invalid value "NaN" for flag -invalid`},
		{[]string{"bench", "-bw", "NaN"}, 2, `invalid value "NaN" for flag -bw`},
		{[]string{"bench", "-flops", "-1"}, 2, "-flops -1: want 0 (measure it) or a positive rate"},
		{[]string{"bench", "-warmup", "-1"}, 2, "-warmup -1"},
		{[]string{"dump", "-tokens", "65536"}, 2, "1..65535"},
		{[]string{"dump", "-head-block", "64", "-target", "sm_120"}, 2, "-head-block 16 -tile 32"},
		{[]string{"dump", "-pkg", "kernel"}, 2, "flag provided but not defined: -pkg"},
		{[]string{"info"}, 1, "no device"},
		{[]string{"check", "-gpu"}, 1, "no device"},
	} {
		code, _, errOut := runCLI(noDevice, c.args...)
		if code != c.code || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", c.args, code, errOut, c.code, c.want)
		}
	}
	code, _, errOut := runCLI(emuOpener("sm_90"), "check", "-gpu", "-kernel", "gemm", "-vectors", "x")
	if code != 2 || !strings.Contains(errOut, "mla_decode only") {
		t.Errorf("gemm -vectors: exit %d, %q", code, errOut)
	}
}

func TestDump(t *testing.T) {
	f := filepath.Join(t.TempDir(), "g.ptx")
	code, _, errOut := runCLI(nil, "dump", "-kernel", "gemm", "-m", "17", "-target", "sm_120", "-o", f)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	b, err := os.ReadFile(f)
	if err != nil || !strings.Contains(string(b), ".target sm_120") {
		t.Fatalf("dump -o: %v\n%.200s", err, b)
	}
	code, out, _ := runCLI(nil, "dump", "-kernel", "mla_decode")
	if code != 0 || !strings.Contains(out, ".target sm_90") {
		t.Errorf("dump default target: exit %d\n%.200s", code, out)
	}
}

// TestBenchPlumbing runs bench end to end with the emulator standing in for the
// GPU: shape selection, timing loop, correctness check, Triton merge, JSON and SVG.
// (Its times are emulation wall times, not GPU figures.)
func TestBenchPlumbing(t *testing.T) {
	dir := t.TempDir()
	triton := filepath.Join(dir, "triton.json")
	if err := os.WriteFile(triton, []byte(`[{"name":"H8_T1_K128+512","median_us":50,"ok":true}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	args := []string{"bench", "-shapes", "H8_T1_K128+512", "-iters", "2", "-warmup", "0", "-flush-mb", "0",
		"-bw", "4.3e12", "-flops", "636e12", "-json", filepath.Join(dir, "r.json"), "-svg", filepath.Join(dir, "r.svg"), "-triton", triton}
	if code := run(args, &out, &errOut, emuOpener("sm_90")); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "H8_T1_K128+512") || !strings.Contains(out.String(), "ptxgen/triton") {
		t.Errorf("report:\n%s", out.String())
	}
	for _, f := range []string{"r.json", "r.svg"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || len(b) < 100 {
			t.Errorf("%s: %v (%d bytes)", f, err, len(b))
		}
	}
	vec := filepath.Join(dir, "vec")
	if code := run([]string{"bench", "-shapes", "H8_T1_K128+512", "-vectors-out", vec}, &out, &errOut, emuOpener("sm_90")); code != 0 {
		t.Fatalf("vectors-out: exit %d: %s", code, errOut.String())
	}
	if _, err := os.Stat(filepath.Join(vec, "H8_T1_K128+512", "meta.json")); err != nil {
		t.Error(err)
	}
	if code := run([]string{"bench", "-shapes", "nope"}, &out, &errOut, emuOpener("sm_90")); code != 2 {
		t.Errorf("unknown shape: exit %d, want 2", code)
	}
}

// TestDumpOutputRefused: dump -o on a directory, a FIFO or a missing directory is
// bad usage (exit 2) naming -o, and never blocks.
func TestDumpOutputRefused(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.ptx")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{dir, fifo, filepath.Join(dir, "missing", "k.ptx")} {
		code, _, errOut := runCLI(emuOpener("sm_90"), "dump", "-kernel", "gemm", "-o", out)
		if code != 2 || !strings.Contains(errOut, "-o "+out) {
			t.Errorf("dump -o %s: exit %d, stderr %q, want 2 naming -o", out, code, errOut)
		}
	}
}
