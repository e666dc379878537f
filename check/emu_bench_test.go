package check

import (
	"testing"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
)

// BenchmarkEmulateDecodeCTA measures the emulator on one CTA of the default
// DeepSeek-V4 decode (issue 3 item 5): T=1, 64 heads, 640 candidates (K0=128 and
// K1=512, pages of 64), fp8ds cache, sink, unsplit, for sm_120 (the CLI's default
// target). The kernel takes a block of heads per CTA (16 by default: grid
// (4,1,1)); the benchmark runs the whole grid exactly as check.Emulator does
// (load the buffers, decode the module, launch, read back) and reports the time
// per CTA, s/CTA = elapsed / (b.N * CTAs), next to the usual ns/op for the grid.
//
//	go test ./check -run '^$' -bench EmulateDecodeCTA -benchtime 3x -cpu 1
func BenchmarkEmulateDecodeCTA(b *testing.B) {
	cfg := kernels.MLAConfig{Shape: mla.Shape{T: 1, H: 64, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true, Segments: []mla.Segment{{K: 128, PageSize: 64, HasLen: true}, {K: 512, PageSize: 64, HasLen: true}}}, Split: 1}
	c, err := MLA(cfg, tgt("sm_120"), golden.MLAGenOptions{Seed: 1})
	if err != nil {
		b.Fatal(err)
	}
	if len(c.Compiled.Kernels) != 1 {
		b.Fatalf("%d kernels, want mla_decode alone (split 1)", len(c.Compiled.Kernels))
	}
	k := c.Compiled.Kernels[0]
	ctas := k.Grid[0] * max(k.Grid[1], 1) * max(k.Grid[2], 1)
	b.Logf("%s: grid %v, %d threads per CTA, %d bytes of shared memory", c.Name, k.Grid, k.Block, k.SharedBytes)
	// What is timed must be right: check the outputs once, outside the timer.
	if res, err := Run(Emulator{}, c); err != nil {
		b.Fatal(err)
	} else if !res.OK() {
		b.Fatalf("%s", res)
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := (Emulator{}).Run(c); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N*ctas), "s/CTA")
	b.ReportMetric(float64(ctas), "CTAs")
}
