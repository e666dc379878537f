package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ptxgen/ptxgen/bench"
	"github.com/ptxgen/ptxgen/check"
	"github.com/ptxgen/ptxgen/internal/strictjson"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/ptx"
	arch "github.com/ptxgen/ptxgen/target"
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
		{[]string{"check", "-gpu", "-kernel", "gemm", "-vectors", "x"}, 2, "mla_decode only"}, // before any device
		{[]string{"frob"}, 2, "unknown command"},
		// Issue 15: conflicting, non-finite and unlaunchable values, before any device.
		{[]string{"check", "-gpu", "-vectors", "x", "-heads", "8"}, 2, "-heads with -vectors x"},
		{[]string{"check", "-gpu", "-scale", "1e39"}, 2, `invalid value "1e39" for flag -scale`},
		{[]string{"check", "-gpu", "-invalid", "NaN"}, 2, `invalid value "NaN" for flag -invalid`},
		{[]string{"bench", "-bw", "NaN"}, 2, `invalid value "NaN" for flag -bw`},
		{[]string{"bench", "-flops", "-1"}, 2, "-flops -1: want 0 (measure it) or a positive rate"},
		{[]string{"bench", "-warmup", "-1"}, 2, "-warmup -1"},
		{[]string{"bench", "-pool", "dense"}, 2, "-pool dense: want serving, sparse, small"},
		{[]string{"bench", "-gather-split", "65"}, 2, "-gather-split 65: want 0..64"},
		{[]string{"bench", "-gather-split", "2", "-gather=false"}, 2, "-gather-split 2: want 0 with -gather=false"},
		{[]string{"dump", "-tokens", "65536"}, 2, "1..65535"},
		{[]string{"dump", "-head-block", "64", "-target", "sm_120"}, 2, "-head-block 16 -tile 32"},
		{[]string{"dump", "-pkg", "kernel"}, 2, "-pkg is not a flag of ptxgen-gpu dump -kernel mla_decode: want one of "},
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
// GPU: shape selection, serving pool, both plans, timing loop, correctness check,
// Triton and FlashMLA merges, JSON, SVGs and Markdown. (Its times are emulation
// wall times, not GPU figures.)
func TestBenchPlumbing(t *testing.T) {
	dir := t.TempDir()
	triton := filepath.Join(dir, "triton.json")
	if err := os.WriteFile(triton, []byte(`[{"name":"H8_T1_K128+512","median_us":50,"ok":true}]`), 0o644); err != nil {
		t.Fatal(err)
	}
	flashmla := filepath.Join(dir, "flashmla.json")
	if err := os.WriteFile(flashmla, []byte(`{"results":[{"folder":"H8_T1_K128+512","status":"ok","us_events":17.5,"check":{"ok":true}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	args := []string{"bench", "-shapes", "H8_T1_K128+512", "-iters", "2", "-warmup", "0", "-flush-mb", "0",
		"-bw", "4.3e12", "-flops", "636e12", "-json", filepath.Join(dir, "r.json"), "-svg", filepath.Join(dir, "r.svg"),
		"-bars-svg", filepath.Join(dir, "bars.svg"), "-md", filepath.Join(dir, "r.md"), "-triton", triton, "-flashmla", flashmla}
	if code := run(args, &out, &errOut, emuOpener("sm_90")); code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	for _, want := range []string{"H8_T1_K128+512", "ptxgen/Triton", "ptxgen/FlashMLA", "17.5", "sm_120 plan", "serving pool", "true/true",
		"gather ceiling gather 16x1x1/128 60KB", "ptxgen/gather"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, out.String())
		}
	}
	for _, f := range []string{"r.json", "r.svg", "bars.svg", "r.md"} {
		if b, err := os.ReadFile(filepath.Join(dir, f)); err != nil || len(b) < 100 {
			t.Errorf("%s: %v (%d bytes)", f, err, len(b))
		}
	}
	var rep bench.Report
	if b, err := os.ReadFile(filepath.Join(dir, "r.json")); err != nil || strictjson.Decode(b, &rep) != nil || len(rep.Results) != 1 {
		t.Fatalf("r.json: %v", err)
	}
	// The emulator device has 1 MB of L2: at least 3 MB of pool.
	if r := rep.Results[0]; rep.Pool != "serving" || r.PoolBytes < 3<<20 || r.SM120Plan == nil || !r.SM120Plan.OK ||
		r.FlashMLA == nil || r.FlashMLA.MedianUS != 17.5 || r.PlanSM120 == "" {
		t.Errorf("json result: pool %s %+v", rep.Pool, r)
	}
	// The gather ceiling ran on the same inputs, passed its exact check, and has a time.
	if g := rep.Results[0].Gather; g == nil || !g.OK || g.MedianUS <= 0 || rep.Results[0].OfGather() <= 0 {
		t.Errorf("json gather: %+v", g)
	}
	out.Reset()
	if code := run([]string{"bench", "-shapes", "H8_T1_K128+512", "-iters", "1", "-warmup", "0", "-flush-mb", "0", "-bw", "1e12", "-flops", "1e14",
		"-pool", "sparse", "-sm120-plan=false", "-json", filepath.Join(dir, "sparse.json")}, &out, &errOut, emuOpener("sm_90")); code != 0 || !strings.Contains(out.String(), "sparse pool") {
		t.Errorf("-pool sparse: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"bench", "-shapes", "H8_T1_K128+512", "-iters", "1", "-warmup", "0", "-flush-mb", "0", "-bw", "1e12", "-flops", "1e14",
		"-sm120-plan=false", "-gather=false"}, &out, &errOut, emuOpener("sm_90")); code != 0 || strings.Contains(out.String(), "gather ceiling gather") {
		t.Errorf("-gather=false: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"bench", "-shapes", "H8_T1_K128+512", "-iters", "1", "-warmup", "0", "-flush-mb", "0", "-bw", "1e12", "-flops", "1e14",
		"-sm120-plan=false", "-gather-split", "3"}, &out, &errOut, emuOpener("sm_90")); code != 0 || !strings.Contains(out.String(), "gather ceiling gather 3x1x1/128") {
		t.Errorf("-gather-split 3: exit %d\n%s", code, out.String())
	}
	out.Reset()
	if code := run([]string{"bench", "-shapes", "H8_T1_K128+512", "-iters", "1", "-warmup", "0", "-flush-mb", "0", "-bw", "1e12", "-flops", "1e14",
		"-pool", "small", "-sm120-plan=false"}, &out, &errOut, emuOpener("sm_90")); code != 0 || !strings.Contains(out.String(), "small pool") || strings.Contains(out.String(), "sm_120 plan decode") {
		t.Errorf("-pool small: exit %d\n%s", code, out.String())
	}
	if code := run([]string{"bench", "-pool", "big"}, &out, &errOut, emuOpener("sm_90")); code != 2 {
		t.Errorf("-pool big: exit %d, want 2", code)
	}
	vec := filepath.Join(dir, "vec")
	if code := run([]string{"bench", "-shapes", "H8_T1_K128+512", "-vectors-out", vec}, &out, &errOut, emuOpener("sm_90")); code != 0 {
		t.Fatalf("vectors-out: exit %d: %s", code, errOut.String())
	}
	if _, err := os.Stat(filepath.Join(vec, "H8_T1_K128+512", "meta.json")); err != nil {
		t.Error(err)
	}
	// A second run reads those folders instead of generating; a folder of another
	// shape is refused by name.
	out.Reset()
	if code := run([]string{"bench", "-shapes", "H8_T1_K128+512", "-iters", "1", "-warmup", "0", "-flush-mb", "0", "-bw", "1e12", "-flops", "1e14",
		"-vectors-in", vec, "-plan-target", "sm_120", "-sm120-plan=false"}, &out, &errOut, emuOpener("sm_90")); code != 0 || !strings.Contains(out.String(), "decode_h16_split 1x1x4/128") { // 5 tiles a chunk: no Small kernel
		t.Errorf("-vectors-in with the sm_120 plan (4 chunks on the emulator's 4 SMs): exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	if err := os.Rename(filepath.Join(vec, "H8_T1_K128+512"), filepath.Join(vec, "H8_T8_K128+512")); err != nil {
		t.Fatal(err)
	}
	errOut.Reset()
	if code := run([]string{"bench", "-shapes", "H8_T8_K128+512", "-bw", "1e12", "-flops", "1e14", "-vectors-in", vec}, &out, &errOut, emuOpener("sm_90")); code == 0 || !strings.Contains(errOut.String(), "holds T=1 H=8") {
		t.Errorf("-vectors-in of another shape: exit %d: %s", code, errOut.String())
	}
	if code := run([]string{"bench", "-shapes", "nope"}, &out, &errOut, emuOpener("sm_90")); code != 2 {
		t.Errorf("unknown shape: exit %d, want 2", code)
	}
	// -warps64 where no shape has 64-head CTAs would be ignored: refused (issue 22).
	errOut.Reset()
	if code := run([]string{"bench", "-shapes", "H8_T1_K128+512", "-warps64", "16"}, &out, &errOut, emuOpener("sm_90")); code != 2 || !strings.Contains(errOut.String(), "-warps64 16: want 0 here") {
		t.Errorf("-warps64 16 on an 8-head shape: exit %d, %s", code, errOut.String())
	}
}

// TestCheckGPUOutOfPool: -out-of-pool runs GPU and emulator; with -vectors it is
// refused before any device is opened.
func TestCheckGPUOutOfPool(t *testing.T) {
	code, out, errOut := runCLI(emuOpener("sm_90"), "check", "-gpu", "-heads", "8", "-k0", "40", "-k1", "20", "-out-of-pool")
	if code != 0 || !strings.Contains(out, "out-of-pool") || !strings.Contains(out, "SUMMARY gpu=ok emu=ok diff=ok") {
		t.Errorf("-out-of-pool: exit %d\n%s%s", code, out, errOut)
	}
	noDevice := func(int) (device, error) { return nil, errors.New("no device") }
	code, _, errOut = runCLI(noDevice, "check", "-gpu", "-vectors", "x", "-out-of-pool")
	if code != 2 || !strings.Contains(errOut, "-vectors x") {
		t.Errorf("-vectors -out-of-pool: exit %d, stderr %q", code, errOut)
	}
	code, _, errOut = runCLI(emuOpener("sm_90"), "check", "-gpu", "-kernel", "gemm", "-out-of-pool")
	if code != 2 || !strings.Contains(errOut, "mla_decode only") {
		t.Errorf("gemm -out-of-pool: exit %d, %q", code, errOut)
	}
	// Issue 22: mla_decode's input flags are refused for other kernels whatever their
	// value (they used to be ignored), before any device is opened.
	for _, f := range []string{"-invalid=0.5", "-poison", "-poison=false", "-out-of-pool=false", "-pool-gib=0"} {
		code, _, errOut = runCLI(noDevice, "check", "-gpu", "-kernel", "gemm", f)
		name, _, _ := strings.Cut(f, "=")
		if code != 2 || !strings.Contains(errOut, name+" ") || !strings.Contains(errOut, "mla_decode only") {
			t.Errorf("gemm %s: exit %d, %q", f, code, errOut)
		}
	}
}

// TestCheckGPUPoolGiB: -pool-gib runs the GPU (the emulator stands in here) against
// the reference only, over a pool of whole pages with the candidates at its end; bad
// values exit 2 before any device is opened.
func TestCheckGPUPoolGiB(t *testing.T) {
	// 0.001 GiB = 1 MiB: 29 pages of 37376 bytes (fp8ds, 64 tokens) for segment 0.
	code, out, errOut := runCLI(emuOpener("sm_90"), "check", "-gpu", "-heads", "8", "-k0", "40", "-k1", "0", "-pool-gib", "0.001", "-split", "1")
	if code != 0 || !strings.Contains(out, "pool=29 pages") || !strings.Contains(out, "emu=skipped") || !strings.Contains(out, "PASS") {
		t.Errorf("-pool-gib 0.001: exit %d\n%s%s", code, out, errOut)
	}
	noDevice := func(int) (device, error) { return nil, errors.New("no device") }
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "-gpu", "-pool-gib", "33"}, "-pool-gib 33"},
		{[]string{"check", "-gpu", "-pool-gib", "-1"}, "-pool-gib -1"},
		{[]string{"check", "-gpu", "-pool-gib", "NaN"}, "-pool-gib NaN"},
		{[]string{"check", "-gpu", "-vectors", "x", "-pool-gib", "1"}, "-vectors x"},
	} {
		code, _, errOut := runCLI(noDevice, c.args...)
		if code != 2 || !strings.Contains(errOut, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	code, _, errOut = runCLI(emuOpener("sm_90"), "check", "-gpu", "-kernel", "gemm", "-pool-gib", "1")
	if code != 2 || !strings.Contains(errOut, "mla_decode only") {
		t.Errorf("gemm -pool-gib: exit %d, %q", code, errOut)
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
	// Issue 22: a hand-written file and a link (here to one outside) are refused
	// and left as they were; a PTX file ptxgen wrote is replaced.
	hand := filepath.Join(dir, "hand.ptx")
	outside := filepath.Join(t.TempDir(), "notes.txt")
	link := filepath.Join(dir, "link.ptx")
	for _, f := range []string{hand, outside} {
		if err := os.WriteFile(f, []byte("// mine\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{dir, fifo, filepath.Join(dir, "missing", "k.ptx"), hand, link} {
		code, _, errOut := runCLI(emuOpener("sm_90"), "dump", "-kernel", "gemm", "-o", out)
		if code != 2 || !strings.Contains(errOut, "-o "+out) {
			t.Errorf("dump -o %s: exit %d, stderr %q, want 2 naming -o", out, code, errOut)
		}
	}
	for _, f := range []string{hand, outside} {
		if b, _ := os.ReadFile(f); string(b) != "// mine\n" {
			t.Errorf("dump -o overwrote %s", f)
		}
	}
	mine := filepath.Join(dir, "k.ptx")
	for _, m := range []string{"16", "32"} {
		if code, _, errOut := runCLI(emuOpener("sm_90"), "dump", "-kernel", "gemm", "-m", m, "-o", mine); code != 0 {
			t.Fatalf("dump -o %s (-m %s): exit %d: %s", mine, m, code, errOut)
		}
	}
}

// -planned-residency pads a kernel planned under sm_120's limits so that the H200
// holds as many of its CTAs per SM as sm_120 would, and leaves the H200's own alone.
func TestPlannedResidency(t *testing.T) {
	h200 := arch.MustLookup("sm_90")
	for _, c := range []struct {
		planned            arch.Target
		smem, block, perSM int // the kernel, and the CTAs per SM the H200 then holds by shared memory and threads
	}{
		{planned: h200.WithLimitsOf(arch.MustLookup("sm_120")), smem: 45568, block: 128, perSM: 2}, // sm_120: 100K / 45.5K
		{planned: h200.WithLimitsOf(arch.MustLookup("sm_120")), smem: 61440, block: 128, perSM: 1},
		{planned: h200.WithLimitsOf(arch.MustLookup("sm_120")), smem: 0, block: 512, perSM: 3}, // 1536 threads
		{planned: h200, smem: 45568, block: 128, perSM: 5},                                     // its own: unchanged
	} {
		k := &ptx.Kernel{Name: "k", Block: c.block, SharedBytes: c.smem}
		cs := &check.Case{Compiled: &lower.Compiled{Target: c.planned, Kernels: []*ptx.Kernel{k}}}
		plannedResidency(cs, h200)
		if k.SharedBytes < c.smem || k.SharedBytes > h200.MaxSharedPerBlock {
			t.Fatalf("%s, %d bytes: padded to %d", c.planned.PlannedFor, c.smem, k.SharedBytes)
		}
		if got := residentCTAs(h200, k); got != c.perSM {
			t.Errorf("planned for %q, %d bytes, %d threads: padded to %d bytes, %d CTAs per SM on the H200; want %d", c.planned.PlannedFor, c.smem, c.block, k.SharedBytes, got, c.perSM)
		}
	}
}
