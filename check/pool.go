package check

import (
	"fmt"
	"strings"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/kernels"
	arch "github.com/ptxgen/ptxgen/target"
)

// Pools for benchmark inputs (golden.GenMLAPool): where the rows' candidates live.
const (
	// PoolServing gives every row pages of its own, distinct across rows and
	// randomly placed in a pool of at least the requested bytes, as in serving:
	// no record is read twice in a call.
	PoolServing = golden.PoolServing
	// PoolSmall is one pool of 2*ceil(K/B)+4 pages per segment (about 1 MB) that
	// every row draws from, so after the first rows the gathers hit L2.
	PoolSmall = golden.PoolSmall
	// PoolSparse gives every row a sequence of its own (an equal share of a pool of
	// at least the requested bytes, at least SparseSpan times its candidates' pages)
	// and picks its candidates as a random subset of that sequence's slots, as a
	// top-k indexer does: records scattered over the pages, none read twice.
	PoolSparse = golden.PoolSparse
)

// SparseSpan is the least length of a sparse pool's row sequence, in multiples of
// the pages its K candidates would fill.
const SparseSpan = 4

// Pools lists the pools, for flag help and errors.
var Pools = []string{PoolServing, PoolSparse, PoolSmall}

// MLAPoolPages returns the pages per segment of a pool for cfg: for PoolServing
// each segment's pages are the larger of what the rows need (T*ceil(K/B)) and its
// share, by candidates, of minBytes; for PoolSparse the larger of SparseSpan times
// what the rows need and that share; for PoolSmall 2*ceil(K/B)+4.
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
		case PoolSparse:
			stride := int64(g.Layouts[i].PageStride)
			share := (minBytes*int64(s.K)/int64(totalK) + stride - 1) / stride
			pages[i] = int(max(SparseSpan*int64(cfg.T)*int64(perRow), share))
		default:
			return nil, &kernels.ConfigError{Flag: "pool", Value: pool, Want: strings.Join(Pools, ", ")}
		}
	}
	return pages, nil
}

// BenchCases is one benchmark shape's cases on one set of inputs: the decode per
// target and the gather ceiling (MLAGather) of the same records, compiled for the
// first target; PoolBytes is the pool's size (every segment's cache).
type BenchCases struct {
	Decode    []*Case
	Gather    *Case
	PoolBytes int64
	// Config and Inputs are the shape's inputs, for another gather case
	// (MLAGather with a split of one's own).
	Config golden.MLAConfig
	Inputs *golden.MLAInputs
	// what WithPrecision needs to build the decode again on the same inputs
	cfg      kernels.MLAConfig
	out, lse []float64
	name     func(arch.Target) string
}

// WithPrecision is the decode case of target on the same inputs and reference,
// generated with precision p and held to p's tolerance (bench's bf16p column).
func (b *BenchCases) WithPrecision(p kernels.MLAPrecision, t arch.Target) (*Case, error) {
	cfg := b.cfg
	cfg.Precision = p
	return mlaCase(b.name(t)+" precision="+p.String(), cfg, b.Config, b.Inputs, b.out, b.lse, t)
}

// MLABench returns one seeded mla_decode case per target, all on the same inputs
// (pool as in MLAPoolPages) and compared with one float64 reference, computed
// once, and the gather ceiling of those inputs. A target may carry another
// target's limits (target.Target.WithLimitsOf, -plan-target).
func MLABench(cfg kernels.MLAConfig, targets []arch.Target, pool string, minBytes int64, seed uint64) (*BenchCases, error) {
	pages, err := MLAPoolPages(cfg, pool, minBytes)
	if err != nil {
		return nil, err
	}
	g := golden.PackedMLAConfig(cfg.Shape, pages)
	in, err := golden.GenMLAPool(g, seed, pool)
	if err != nil {
		return nil, err
	}
	out, lse, err := golden.MLADecodeParallel(g, in)
	if err != nil {
		return nil, err
	}
	return benchCases(cfg, g, in, out, lse, targets, func(t arch.Target) string {
		return fmt.Sprintf("mla_decode %s target=%s pool=%s seed=%d", describeMLA(cfg), t, pool, seed)
	})
}

func benchCases(cfg kernels.MLAConfig, g golden.MLAConfig, in *golden.MLAInputs, out, lse []float64, targets []arch.Target, name func(arch.Target) string) (*BenchCases, error) {
	b := &BenchCases{Config: g, Inputs: in, cfg: cfg, out: out, lse: lse, name: name}
	for _, s := range in.Segments {
		b.PoolBytes += int64(len(s.Cache))
	}
	for _, t := range targets {
		c, err := mlaCase(name(t), cfg, g, in, out, lse, t)
		if err != nil {
			return nil, err
		}
		b.Decode = append(b.Decode, c)
	}
	if len(targets) > 0 {
		var err error
		if b.Gather, err = MLAGather(g, in, targets[0], cfg.SMs, 0); err != nil {
			return nil, fmt.Errorf("gather ceiling: %w", err)
		}
	}
	return b, nil
}

// MLABenchVectors is MLABench on the inputs and float64 outputs of a test-vector
// folder that an MLABench case wrote (ptxgen-gpu bench -vectors-out), so a second
// run needs neither the generator nor the reference. The folder must hold cfg's
// shape; the error says what differs.
func MLABenchVectors(dir string, cfg kernels.MLAConfig, targets []arch.Target) (*BenchCases, error) {
	v, err := golden.LoadVectors(dir)
	if err != nil {
		return nil, err
	}
	shape := cfg
	shape.Split, shape.SMs, shape.HeadBlock, shape.Tile = 0, 0, 0, 0
	if got, want := describeMLA(kernels.MLAConfig{Shape: v.Config.Shape}), describeMLA(shape); got != want {
		return nil, fmt.Errorf("%s holds %s, want %s", dir, got, want)
	}
	return benchCases(cfg, v.Config, v.Inputs, v.Out, v.LSE, targets, func(t arch.Target) string {
		return fmt.Sprintf("vectors %s (%s) target=%s", v.Name, describeMLA(cfg), t)
	})
}
