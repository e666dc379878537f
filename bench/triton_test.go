package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/check"
	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
	"github.com/ptxgen/ptxgen/target"
)

// TestTritonBaselineSelftest runs the pure-Python parts of bench/triton_seed.py (folder
// checks, e4m3/bf16 decoding, its float64 reference against each folder's, and the
// emulation of its kernel's algorithm) on small fp8ds and bf16 folders written by
// check.MLA and on one of the independent test vectors. The Triton kernel itself needs
// the GPU (scripts/bench.sh). python3 is on every machine of this project; CI fails
// rather than skips without it.
func TestTritonBaselineSelftest(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		if v := strings.ToLower(os.Getenv("CI")); v != "" && v != "0" && v != "false" {
			t.Fatalf("python3: %v; CI is set, so this fails instead of skipping", err)
		}
		t.Skipf("skipping: python3: %v", err)
	}
	dir := t.TempDir()
	segs := []mla.Segment{{K: 40, PageSize: 16, HasLen: true}, {K: 24, PageSize: 8, HasLen: true}}
	dirs := []string{"../golden/testdata/vectors/mla_decode/h4_sink_edges"}
	for _, cache := range []mla.CacheFormat{mla.CacheFP8DS, mla.CacheBF16} {
		cfg := kernels.MLAConfig{Shape: mla.Shape{T: 2, H: 8, Nope: 448, Rope: 64, Cache: cache, Sink: true, Segments: segs}}
		seed := uint64(3)
		c, err := check.MLA(cfg, target.MustLookup("sm_90"), golden.MLAGenOptions{Seed: seed, InvalidFrac: 0.2})
		if err != nil {
			t.Fatal(err)
		}
		d := filepath.Join(dir, string(cache))
		if err := c.WriteVectors(d); err != nil {
			t.Fatalf("%s (seed %d): %v", cache, seed, err)
		}
		dirs = append(dirs, d)
	}
	out, err := exec.Command(py, append([]string{"triton_seed.py", "--selftest"}, dirs...)...).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "selftest: all passed") {
		t.Fatalf("triton_seed.py --selftest: %v\n%s", err, out)
	}
	for _, cache := range []mla.CacheFormat{mla.CacheFP8DS, mla.CacheBF16} {
		if !strings.Contains(string(out), "ok   "+string(cache)+": own float64 reference == out_ref/lse_ref") {
			t.Errorf("the selftest did not check the %s folder against its reference:\n%s", cache, out)
		}
	}
}
