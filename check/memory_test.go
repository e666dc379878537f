package check

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
)

// TestHostMemoryRefused: a case that needs more than the limit is refused before
// anything is allocated, naming the flags of its largest term; one under it is built.
// The limits are given, so the test does not depend on the machine.
func TestHostMemoryRefused(t *testing.T) {
	gemm := kernels.GEMMConfig{M: 1024, N: 1024, K: 1024, Out: ir.BF16}
	need, flags := HostBytes(gemm, tgt("sm_90"))
	// A and B twice (case and executor), C twice, C's float64 reference.
	if want := float64(2*2*1024*1024*2 + 2*1024*1024*2 + 8*1024*1024); need != want || flags != "-m x -n (C and its reference)" {
		t.Errorf("HostBytes(gemm 1024^3) = %v, %q; want %v and C's term", need, flags, want)
	}
	_, err := ForConfig(gemm, tgt("sm_90"), CaseOptions{MaxHostBytes: 16 << 20})
	var ce *kernels.ConfigError
	if !errors.As(err, &ce) || ce.Flag != "m" || !strings.Contains(err.Error(), "host memory") || !strings.Contains(err.Error(), "the limit given") {
		t.Errorf("gemm 1024^3 under 16 MiB: %v, want a ConfigError of -m naming host memory", err)
	}
	if _, err := ForConfig(kernels.GEMMConfig{M: 17, N: 9, K: 33, Out: ir.BF16}, tgt("sm_90"), CaseOptions{MaxHostBytes: 16 << 20}); err != nil {
		t.Errorf("gemm 17x9x33 under 16 MiB: %v", err)
	}
	mla := kernels.MLAConfig{Shape: mla.Shape{T: 4096, H: 64, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Segments: []mla.Segment{{K: 1 << 20, PageSize: 1}}}}
	_, err = ForConfig(mla, tgt("sm_90"), CaseOptions{MaxHostBytes: 1 << 30, Invalid: 0.1})
	if !errors.As(err, &ce) || ce.Flag != "tokens" || !strings.Contains(err.Error(), "-tokens x -k0 (indices)") {
		t.Errorf("mla T=4096 K=2^20 under 1 GiB: %v, want -tokens named with the index term", err)
	}
}

func TestMemTotal(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		text string
		want int64
	}{
		{"MemFree: 1 kB\nMemTotal:       16318932 kB\n", 16318932 * 1024},
		{"MemTotal: 12 MB\n", 0},
		{"MemTotal: x kB\n", 0},
		{"", 0},
	} {
		p := filepath.Join(dir, "meminfo")
		if err := os.WriteFile(p, []byte(c.text), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := memTotal(p); got != c.want {
			t.Errorf("memTotal(%q) = %d, want %d", c.text, got, c.want)
		}
	}
	if got := memTotal(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("memTotal(missing) = %d", got)
	}
}
