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

// pythonPackage is the Python package that reads the manifests this package writes
// (python/ptxgen_mla, docs/python.md); its own CPU tests run from scripts/check-python.sh.
const pythonPackage = "../python"

func python(t *testing.T) string {
	py, err := exec.LookPath("python3")
	if err != nil {
		if v := strings.ToLower(os.Getenv("CI")); v != "" && v != "0" && v != "false" {
			t.Fatalf("python3: %v; CI is set, so this fails instead of skipping", err)
		}
		t.Skipf("skipping: python3: %v", err)
	}
	// Read through the test binary so that go test's cache keys on the reader: an edited
	// reader reruns the test.
	for _, f := range []string{"manifest.py", "plan.py", "catalog.py", "__main__.py"} {
		if _, err := os.ReadFile(filepath.Join(pythonPackage, "ptxgen_mla", f)); err != nil {
			t.Fatal(err)
		}
	}
	return py
}

func runPackage(t *testing.T, py string, args ...string) (string, int) {
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, py, append([]string{"-m", "ptxgen_mla"}, args...)...)
	cmd.Dir = pythonPackage
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("python -m ptxgen_mla %v: %v", args, err)
	}
	return string(out), 0
}

// TestPythonPackageReadsManifest: the Python package (manifest format version 5) reads
// a manifest this package writes for a two-segment decode with a capacity of 8 on
// sm_120 and sm_90, reproduces every plan example with its port of plan.Rule, and
// recognizes the configuration from the recorded command.
func TestPythonPackageReadsManifest(t *testing.T) {
	py := python(t)
	cfg := config(t, "mla_decode", "-heads", "16", "-k1", "100", "-max-tokens", "8")
	files, err := Generate(cfg, lookupAll("sm_120", "sm_90"), Options{Manifest: "mla_decode.json",
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
	out, code := runPackage(t, py, "manifest", filepath.Join(dir, "mla_decode.json"))
	want := "ok, targets sm_120, sm_90, capacity 8, "
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "plan examples reproduced; the call can use it for "+
		"h_q=16, K0=128 in pages of 64, extra segment K1=100 in pages of 64, precision 'exact'") {
		t.Fatalf("python -m ptxgen_mla manifest: exit %d, %q; want %q", code, out, want)
	}
	if strings.Contains(out, " 0 plan examples") {
		t.Errorf("no plan example replayed: %q", out)
	}
}

// TestPythonPackageRefuses: bad manifests are one line on stderr and exit status 2,
// never a traceback, and never block on a FIFO or read /dev/zero (issues 22, 31).
func TestPythonPackageRefuses(t *testing.T) {
	py := python(t)
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	missing := write("m.json", fmt.Sprintf(`{"format": %q, "version": %d}`, ManifestFormat, ManifestVersion))
	deep := write("deep.json", strings.Repeat("[", 100000))
	old := write("old.json", fmt.Sprintf(`{"format": %q, "version": %d}`, ManifestFormat, ManifestVersion-1))
	for _, c := range []struct {
		path, want string
	}{
		{fifo, "fifo.json is not a regular file"},
		{"/dev/zero", "zero is not a regular file"},
		{missing, "manifest: missing generator"},
		{deep, "JSON nested more than 64 deep"},
		{old, fmt.Sprintf("want '%s' version %d", ManifestFormat, ManifestVersion)},
	} {
		out, code := runPackage(t, py, "manifest", c.path)
		if code != 2 || !strings.Contains(out, c.want) || strings.Contains(out, "Traceback") || strings.Count(strings.TrimSpace(out), "\n") != 0 {
			t.Errorf("python -m ptxgen_mla manifest %s: exit %d, %q; want exit 2 and one line with %q", c.path, code, out, c.want)
		}
	}
}
