package check

import (
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
	arch "github.com/ptxgen/ptxgen/target"
)

func benchConfig(T, H int) kernels.MLAConfig {
	return kernels.MLAConfig{Shape: mla.Shape{T: T, H: H, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true, Segments: []mla.Segment{{K: 128, PageSize: 64, HasLen: true}, {K: 512, PageSize: 64, HasLen: true}}}}
}

func TestMLAPoolPages(t *testing.T) {
	const minBytes = 192 << 20
	stride := int64(64 * 584)
	for _, T := range []int{1, 256, 4096} {
		cfg := benchConfig(T, 64)
		pages, err := MLAPoolPages(cfg, PoolServing, minBytes)
		if err != nil {
			t.Fatal(err)
		}
		total := int64(pages[0]+pages[1]) * stride
		if total < minBytes {
			t.Errorf("T=%d: pool of %d bytes, want >= %d", T, total, minBytes)
		}
		if pages[0] < 2*T || pages[1] < 8*T {
			t.Errorf("T=%d: pages %v hold fewer than the rows' own pages (%d, %d)", T, pages, 2*T, 8*T)
		}
		if T == 1 && total > minBytes+2*stride {
			t.Errorf("T=1: pool of %d bytes, want about %d", total, minBytes)
		}
	}
	small, err := MLAPoolPages(benchConfig(64, 64), PoolSmall, minBytes)
	if err != nil || small[0] != 2*2+4 || small[1] != 2*8+4 {
		t.Errorf("small pool pages %v, %v", small, err)
	}
	if _, err := MLAPoolPages(benchConfig(1, 64), "huge", minBytes); err == nil || err.Error() != `-pool huge: want serving, sparse, small` {
		t.Errorf("bad pool: %v", err)
	}
}

// TestMLABenchPlans: one set of inputs serves the sm_90 plan and the sm_120 plan
// emitted for sm_90; both run in the emulator within tolerance, and the sm_120
// plan's decode stays within sm_120's shared memory.
func TestMLABenchPlans(t *testing.T) {
	cfg := benchConfig(3, 8)
	bc, err := MLABench(cfg, []arch.Target{tgt("sm_90"), tgt("sm_90").WithLimitsOf(tgt("sm_120"))}, PoolServing, 4<<20, 11)
	if err != nil {
		t.Fatal(err)
	}
	cs, bytes := bc.Decode, bc.PoolBytes
	if bytes < 4<<20 || len(cs) != 2 {
		t.Fatalf("pool %d bytes, %d cases", bytes, len(cs))
	}
	if &cs[0].Buffers["cache1"][0] != &cs[1].Buffers["cache1"][0] || &cs[0].Buffers["cache1"][0] != &bc.Gather.Buffers["cache1"][0] {
		t.Errorf("the two plans and the gather ceiling do not share their inputs")
	}
	passesInEmulator(t, bc.Gather)
	for _, c := range cs {
		if c.Compiled.Module.Target != "sm_90" {
			t.Errorf("%s: emitted for %s", c.Name, c.Compiled.Module.Target)
		}
		if k := c.Compiled.Kernels[0]; k.SharedBytes > 99*1024 && c.Compiled.Target.PlannedFor == "sm_120" {
			t.Errorf("%s: %d bytes of shared memory", c.Name, k.SharedBytes)
		}
		res, err := Run(Emulator{}, c)
		if err != nil {
			t.Fatal(err)
		}
		if !res.OK() {
			t.Errorf("%s (seed 11):\n%s", c.Name, res)
		}
	}
}

// TestMLABenchSparse: a sparse pool is SparseSpan times the whole pages its rows'
// candidates need (or the requested bytes), and the decode and its gather ceiling
// pass on it in the emulator.
func TestMLABenchSparse(t *testing.T) {
	cfg := benchConfig(2, 8)
	pages, err := MLAPoolPages(cfg, PoolSparse, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range cfg.Segments {
		if want := SparseSpan * cfg.T * ((s.K + s.PageSize - 1) / s.PageSize); pages[i] != want {
			t.Errorf("segment %d: %d pages, want %d", i, pages[i], want)
		}
	}
	big, _ := MLAPoolPages(cfg, PoolSparse, 64<<20)
	if got := int64(big[0]+big[1]) * 64 * 584; got < 64<<20 {
		t.Errorf("a 64 MiB sparse pool has %d bytes", got)
	}
	bc, err := MLABench(cfg, []arch.Target{tgt("sm_90")}, PoolSparse, 0, 5)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(bc.Decode[0].Name, "pool=sparse") {
		t.Errorf("case name %q does not name the pool", bc.Decode[0].Name)
	}
	passesInEmulator(t, bc.Decode[0])
	passesInEmulator(t, bc.Gather)
}
