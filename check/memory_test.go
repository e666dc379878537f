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
	// A and B as generated and as bytes (then in the case and the emulator); C in the
	// case, the emulator and decoded to compare, and its float64 reference.
	if want := float64(2*2*1024*1024 + 2*2*1024*1024 + 1024*1024*(3*2+8)); need != want || flags != "-m x -n (C and its reference)" {
		t.Errorf("HostBytes(gemm 1024^3) = %v, %q; want %v and C's term", need, flags, want)
	}
	_, err := ForConfig(gemm, tgt("sm_90"), CaseOptions{MaxHostBytes: 16 << 20})
	var ce *kernels.ConfigError
	if !errors.As(err, &ce) || ce.Flag != "m" || !strings.Contains(err.Error(), "host memory") || !strings.Contains(err.Error(), "the limit given") {
		t.Errorf("gemm 1024^3 under 16 MiB: %v, want a ConfigError of -m naming host memory", err)
	}
	if _, err := ForConfig(kernels.GEMMConfig{M: 17, N: 9, K: 33, Out: ir.BF16}, tgt("sm_90"), CaseOptions{MaxHostBytes: 32 << 20}); err != nil {
		t.Errorf("gemm 17x9x33 under 32 MiB (the runtime's 16 MiB included): %v", err)
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

// TestHostMemoryCountsEmulatorState: the emulator's own state (a race record per
// shared byte and warp: 12 MiB for the copy kernel's CTA) is part of what a check
// needs, named in the refusal; a limit that holds the buffers but not it refuses.
func TestHostMemoryCountsEmulatorState(t *testing.T) {
	cfg := kernels.CopyConfig{Rows: 64}
	buffers, _ := HostBytes(cfg, tgt("sm_90"))
	limit := int64(buffers + runtimeBytes(buffers) + 4<<20)
	_, err := ForConfig(cfg, tgt("sm_90"), CaseOptions{MaxHostBytes: limit})
	var ce *kernels.ConfigError
	if !errors.As(err, &ce) || ce.Flag != "rows" || !strings.Contains(err.Error(), "the emulator's own state for kernel copy") {
		t.Errorf("copy -rows 64 under %d bytes (its buffers and 4 MiB): %v, want a ConfigError naming the emulator's state", limit, err)
	}
	c, err := ForConfig(cfg, tgt("sm_90"), CaseOptions{MaxHostBytes: limit + 64<<20})
	if err != nil {
		t.Fatalf("copy -rows 64 under %d bytes: %v", limit+64<<20, err)
	}
	state, _, err := EmulatorStateBytes(c.Compiled)
	if err != nil || state < 8<<20 || c.AdmittedBytes < int64(buffers)+state {
		t.Errorf("copy -rows 64: state %d (%v), admitted with %d; want the state (over 8 MiB) counted", state, err, c.AdmittedBytes)
	}
}
