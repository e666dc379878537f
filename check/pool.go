package check

import (
	"fmt"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/kernels"
	arch "github.com/ptxgen/ptxgen/target"
)

// Pools for benchmark inputs (golden.GenMLAPool): where the rows' candidates live.
const (
	// PoolServing gives every row pages of its own, distinct across rows and
	// randomly placed in a pool of at least the requested bytes, as in serving:
	// no record is read twice in a call.
	PoolServing = "serving"
	// PoolSmall is one pool of 2*ceil(K/B)+4 pages per segment (about 1 MB) that
	// every row draws from, so after the first rows the gathers hit L2.
	PoolSmall = "small"
)

// MLAPoolPages returns the pages per segment of a pool for cfg: for PoolServing
// each segment's pages are the larger of what the rows need (T*ceil(K/B)) and its
// share, by candidates, of minBytes; for PoolSmall 2*ceil(K/B)+4.
func MLAPoolPages(cfg kernels.MLAConfig, pool string, minBytes int64) ([]int, error) {
	g := golden.PackedMLAConfig(cfg.Shape, make([]int, len(cfg.Segments)))
	totalK := 0
	for _, s := range cfg.Segments {
		totalK += s.K
	}
	pages := make([]int, len(cfg.Segments))
	for i, s := range cfg.Segments {
		perRow := (s.K + s.PageSize - 1) / s.PageSize
		switch pool {
		case PoolSmall:
			pages[i] = golden.MLAPoolPages(cfg.Shape)[i]
		case PoolServing:
			stride := int64(g.Layouts[i].PageStride)
			share := (minBytes*int64(s.K)/int64(totalK) + stride - 1) / stride
			pages[i] = int(max(int64(cfg.T)*int64(perRow), share))
		default:
			return nil, &kernels.ConfigError{Flag: "pool", Value: pool, Want: PoolServing + " or " + PoolSmall}
		}
	}
	return pages, nil
}

// MLABench returns one seeded mla_decode case per target, all on the same inputs
// (pool as in MLAPoolPages) and compared with one float64 reference, computed
// once; and the pool's size in bytes (every segment's cache). A target may carry
// another target's limits (target.Target.WithLimitsOf, -plan-target).
func MLABench(cfg kernels.MLAConfig, targets []arch.Target, pool string, minBytes int64, seed uint64) ([]*Case, int64, error) {
	pages, err := MLAPoolPages(cfg, pool, minBytes)
	if err != nil {
		return nil, 0, err
	}
	g := golden.PackedMLAConfig(cfg.Shape, pages)
	in, err := golden.GenMLAPool(g, seed, pool == PoolSmall)
	if err != nil {
		return nil, 0, err
	}
	var bytes int64
	for _, s := range in.Segments {
		bytes += int64(len(s.Cache))
	}
	out, lse, err := golden.MLADecodeParallel(g, in)
	if err != nil {
		return nil, 0, err
	}
	var cases []*Case
	for _, t := range targets {
		name := fmt.Sprintf("mla_decode %s target=%s pool=%s seed=%d", describeMLA(cfg), t, pool, seed)
		c, err := mlaCase(name, cfg, g, in, out, lse, t)
		if err != nil {
			return nil, 0, err
		}
		cases = append(cases, c)
	}
	return cases, bytes, nil
}

// MLABenchVectors is MLABench on the inputs and float64 outputs of a test-vector
// folder that an MLABench case wrote (ptxgen-gpu bench -vectors-out), so a second
// run needs neither the generator nor the reference. The folder must hold cfg's
// shape; the error says what differs.
func MLABenchVectors(dir string, cfg kernels.MLAConfig, targets []arch.Target) ([]*Case, int64, error) {
	v, err := golden.LoadVectors(dir)
	if err != nil {
		return nil, 0, err
	}
	shape := cfg
	shape.Split, shape.SMs, shape.HeadBlock, shape.Tile = 0, 0, 0, 0
	if got, want := describeMLA(kernels.MLAConfig{Shape: v.Config.Shape}), describeMLA(shape); got != want {
		return nil, 0, fmt.Errorf("%s holds %s, want %s", dir, got, want)
	}
	var bytes int64
	for _, s := range v.Inputs.Segments {
		bytes += int64(len(s.Cache))
	}
	var cases []*Case
	for _, t := range targets {
		c, err := mlaCase(fmt.Sprintf("vectors %s (%s) target=%s", v.Name, describeMLA(cfg), t), cfg, v.Config, v.Inputs, v.Out, v.LSE, t)
		if err != nil {
			return nil, 0, err
		}
		cases = append(cases, c)
	}
	return cases, bytes, nil
}
