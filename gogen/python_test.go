package gogen

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestPythonHostSelftest runs examples/python/mla_decode.py --selftest: its manifest
// reading (version 5: the families' variants and warp roles included), target choice, its port of plan.Rule against the manifest's plan
// examples, the kernels and split it chooses, argument checks and packing, grids,
// workspace sizes and rows (0, 1, 3, the capacity, past it), the test-vector folders and
// its comparison, on a manifest this
// package writes for one folder's configuration (a capacity of 8, sm_120 and sm_90), and
// that it refuses that manifest for every other folder. The GPU half (torch and
// cuda-python) runs on the GPU machine only. python3 is on every machine of this project;
// CI fails rather than skips without it.
func TestPythonHostSelftest(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if v := strings.ToLower(os.Getenv("CI")); v != "" && v != "0" && v != "false" {
			t.Fatalf("python3: %v; CI is set, so this fails instead of skipping", err)
		}
		t.Skipf("skipping: python3: %v", err)
	}
	script := filepath.Join("..", "examples", "python", "mla_decode.py")
	// Read through the test binary so that go test's cache keys on the script: an
	// edited script reruns the test.
	if _, err := os.ReadFile(script); err != nil {
		t.Fatal(err)
	}
	vectors := filepath.Join("..", "golden", "testdata", "vectors", "mla_decode")
	const matching = "h16_t3_k1_100"
	out, err := exec.Command(py, script, "flags", filepath.Join(vectors, matching)).CombinedOutput()
	if err != nil {
		t.Fatalf("mla_decode.py flags: %v\n%s", err, out)
	}
	flags := strings.Fields(string(out))
	if len(flags) < 4 || flags[0] != "-kernel" || flags[1] != "mla_decode" {
		t.Fatalf("mla_decode.py flags printed %q", out)
	}
	cfg := config(t, "mla_decode", append(flags[2:], "-max-tokens", "8")...)
	targets := []string{"sm_120", "sm_90"}
	files, err := Generate(cfg, lookupAll(targets...), Options{Manifest: "mla_decode.json",
		Command: "ptxgen gen " + strings.Join(cfg.Args(), " ") + " -targets sm_120,sm_90 -manifest mla_decode.json"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	folders, err := filepath.Glob(filepath.Join(vectors, "*"))
	if err != nil || len(folders) < 2 {
		t.Fatalf("test-vector folders: %v %v", folders, err)
	}
	args := append([]string{script, "--selftest", "--manifest", filepath.Join(dir, "mla_decode.json"), "--matching", matching}, folders...)
	out, err = exec.Command(py, args...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "selftest: all passed") {
		t.Fatalf("mla_decode.py --selftest: %v\n%s", err, out)
	}
	for _, want := range []string{"ok   " + matching + ": the manifest's configuration matches", "rows past the capacity are refused: 9 rows, want 0..8",
		"ok   rows 0: nothing to launch", "ok   plan examples: ",
		// 3 rows on 132 SMs split the candidates (a latency-bound launch: the small
		// split kernel, then the combine); 8 rows on 4 SMs fill them (the direct kernel).
		"ok   rows 3: mla_decode_h16_split_small grid (1, 3, ", "ok   rows 3: mla_combine_",
		"ok   rows 3: mla_decode_h16_split_small's ", "ok   rows 8 on 4 SMs: mla_decode_h16 grid (1, 8, 1)",
		// Issue 22: strides bounded by the buffers, and the Go loaders' refusals.
		"ok   a negative q_stride_t is refused", "ok   a zero idx_stride0 over 3 rows is refused",
		"ok   a q_stride_t past the dense one with a dense-sized q is refused", "ok   slots0 past cache0's pages are refused",
		"ok   vectors: a FIFO for q.bf16 is refused", "ok   vectors: q.bf16 a link to /dev/zero is refused",
		"ok   vectors: an idx file named ../idx0.i32 is refused", "ok   vectors: no valid_candidates_per_row is refused",
		"ok   manifest: a missing block is refused", "ok   manifest: an align of '16' is refused",
		"ok   manifest: a capacity of 10^9 is refused", "ok   manifest: a family of 0 head blocks is refused",
		"ok   manifest: a PTX file ../x.ptx is refused", "ok   manifest: a grid bound to 'tokens' is refused",
		"ok   a PTX file that is a link to /dev/zero is refused",
		// Manifest version 5: each family's variant and warp roles, read and checked.
		"ok   sm_90: the families' variants: h16 w4 1x4 t32 s2", "ok   manifest: a family without warps (version 3) is refused",
		"ok   manifest: a warp grid past the warps is refused", "ok   manifest: warps its kernels do not launch is refused",
		"ok   manifest: stages 0 is refused", "ok   a family with a score role reads as h64 w8 2x4 t64 s2 q4",
		"ok   manifest: a score role past the warps is refused", "ok   manifest: roles of more warps than the CTA is refused"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the selftest did not report %q:\n%s", want, out)
		}
	}
}

// TestPythonHostRefuses: the Python host's commands answer a bad manifest or folder
// with one line on stderr and exit status 2, never a traceback, and never block on a
// FIFO (issue 22).
func TestPythonHostRefuses(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skipf("skipping: python3: %v", err) // TestPythonHostSelftest fails for it under CI
	}
	script := filepath.Join("..", "examples", "python", "mla_decode.py")
	if _, err := os.ReadFile(script); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "m.json")
	if err := os.WriteFile(missing, []byte(fmt.Sprintf(`{"format": "ptxgen-launch-manifest", "version": %d}`, ManifestVersion)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--selftest", "--manifest", fifo}, "fifo.json is not a regular file"},
		{[]string{"--selftest", "--manifest", "/dev/zero"}, "zero is not a regular file"},
		{[]string{"--selftest", "--manifest", missing}, "manifest: missing generator"},
		{[]string{"flags", dir}, "meta.json"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		out, err := exec.CommandContext(ctx, py, append([]string{script}, c.args...)...).CombinedOutput()
		cancel()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(string(out), c.want) || strings.Contains(string(out), "Traceback") {
			t.Errorf("mla_decode.py %v: %v, output %q; want exit 2 and %q, no traceback", c.args, err, out, c.want)
		}
	}
}
