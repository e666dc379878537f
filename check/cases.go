package check

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	arch "github.com/ptxgen/ptxgen/target"
)

func sortedNames[V any](m map[string]V) []string {
	var n []string
	for k := range m {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// GEMM returns a seeded gemm case: dense row-major A, B, C (strides K, N, N).
func GEMM(cfg kernels.GEMMConfig, target arch.Target, seed uint64) (*Case, error) {
	return GEMMStrided(cfg, target, seed, 0, 0)
}

// GEMMStrided is GEMM with A and B row strides lda >= K and ldb >= N (0 means
// dense). golden.GenGemm fills the gaps with NaN, so a kernel that lets a byte
// outside the logical matrix reach an output produces NaN.
func GEMMStrided(cfg kernels.GEMMConfig, target arch.Target, seed uint64, lda, ldb int) (*Case, error) {
	return gemmCase(cfg, target, seed, lda, ldb, nil)
}

// gemmCase is GEMMStrided; admit, if set, judges the lowered program before any
// buffer is allocated (ForConfig: the host memory).
func gemmCase(cfg kernels.GEMMConfig, target arch.Target, seed uint64, lda, ldb int, admit func(*lower.Compiled) error) (*Case, error) {
	k, err := kernels.GEMM(cfg)
	if err != nil {
		return nil, err
	}
	comp, err := compileKernel(k, target)
	if err != nil {
		return nil, err
	}
	if admit != nil {
		if err := admit(comp); err != nil {
			return nil, err
		}
	}
	gc := golden.GemmConfig{M: cfg.M, N: cfg.N, K: cfg.K, LDA: lda, LDB: ldb}
	lda, ldb = gc.Strides()
	for _, p := range comp.Kernels[0].Params {
		for name, v := range map[string]int{"lda": lda, "ldb": ldb} {
			if p.Name == name && p.Align > 0 && v%p.Align != 0 {
				return nil, fmt.Errorf("%s = %d is not a multiple of %d, which the kernel assumes", name, v, p.Align)
			}
		}
	}
	a, b, err := golden.GenGemm(gc, seed)
	if err != nil {
		return nil, err
	}
	want, err := golden.Gemm(gc, a, b)
	if err != nil {
		return nil, err
	}
	bf16Out := cfg.Out == ir.BF16
	name := fmt.Sprintf("gemm m=%d n=%d k=%d out=%s target=%s seed=%d", cfg.M, cfg.N, cfg.K, cfg.Out, target, seed)
	if lda != cfg.K || ldb != cfg.N {
		name += fmt.Sprintf(" lda=%d ldb=%d", lda, ldb)
	}
	c := &Case{
		Name:     name,
		Compiled: comp,
		Buffers: map[string][]byte{
			"a": bytesOf(a), "b": bytesOf(b),
			"c": poison(int64(cfg.M) * int64(cfg.N) * int64(cfg.Out.Size())),
		},
		Scalars: map[string]any{"lda": int64(lda), "ldb": int64(ldb), "ldc": int64(cfg.N)},
	}
	tol := golden.GemmTolerance(cfg.K, 1, bf16Out)
	shape := []int{cfg.M, cfg.N}
	c.Compare = func(final map[string][]byte) []golden.Report {
		if bf16Out {
			return []golden.Report{golden.Compare("c", bf16s(final["c"]), want, shape, tol)}
		}
		return []golden.Report{golden.Compare("c", f32s(final["c"]), want, shape, tol)}
	}
	return c, nil
}

// MLA returns a seeded mla_decode case.
func MLA(cfg kernels.MLAConfig, target arch.Target, opt golden.MLAGenOptions) (*Case, error) {
	return MLAPool(cfg, target, opt, 0)
}

// MaxPoolBytes bounds MLAPool's pools: the case holds each on the host (two
// segments: 64 GiB of the GPU machine's 128) and on the device.
const MaxPoolBytes = 32 << 30

// MLAPool is MLA over pools of at least poolBytes bytes per segment (whole
// pages; 0 means the small pools MLA uses) whose valid candidates all lie in the
// last pages (golden.MLAGenOptions.TailPages): with poolBytes above 4 GiB every
// record the kernel reads sits past 2^32 bytes. Only those pages are written;
// the rest of each pool is one zeroed allocation. Meant for the GPU: the
// emulator would copy every pool twice.
func MLAPool(cfg kernels.MLAConfig, target arch.Target, opt golden.MLAGenOptions, poolBytes int64) (*Case, error) {
	return mlaPool(cfg, target, opt, poolBytes, nil)
}

// mlaPool is MLAPool; admit, if set, judges the lowered program before any input is
// generated (ForConfig: the host memory).
func mlaPool(cfg kernels.MLAConfig, target arch.Target, opt golden.MLAGenOptions, poolBytes int64, admit func(*lower.Compiled) error) (*Case, error) {
	if poolBytes < 0 || poolBytes > MaxPoolBytes {
		return nil, &kernels.ConfigError{Flag: "pool-gib", Value: fmt.Sprint(float64(poolBytes) / (1 << 30)), Want: fmt.Sprintf("0 (small pools) or up to %d GiB per segment", MaxPoolBytes>>30)}
	}
	pages := golden.MLAPoolPages(cfg.Shape)
	g := golden.PackedMLAConfig(cfg.Shape, pages)
	if poolBytes > 0 {
		opt.TailPages = pages[0]
		for i := range g.Layouts {
			sg := &g.Layouts[i]
			opt.TailPages = max(opt.TailPages, pages[i])
			sg.Pages = max(pages[i], int((poolBytes+int64(sg.PageStride)-1)/int64(sg.PageStride)))
			if slots := int64(sg.Pages) * int64(g.Segments[i].PageSize); slots > math.MaxInt32 {
				return nil, &kernels.ConfigError{Flag: "pool-gib", Value: fmt.Sprint(float64(poolBytes) / (1 << 30)),
					Want: fmt.Sprintf("a pool of at most 2^31-1 slots (segment %d would have %d)", i, slots)}
			}
		}
	}
	prog, choice, design, err := kernels.MLACallDesign(cfg, target)
	if err != nil {
		return nil, err
	}
	comp, err := lower.CompileProgram(prog.Program, prog.Sequences(), target)
	if err != nil {
		return nil, err
	}
	if admit != nil {
		if err := admit(comp); err != nil {
			return nil, err
		}
	}
	in, err := golden.GenMLA(g, opt)
	if err != nil {
		return nil, err
	}
	name := fmt.Sprintf("mla_decode %s target=%s seed=%d", describeMLA(cfg), target, opt.Seed)
	if opt.OutOfPool {
		name += " out-of-pool"
	}
	if poolBytes > 0 {
		var ps []string
		for _, sg := range g.Layouts {
			ps = append(ps, fmt.Sprint(sg.Pages))
		}
		name += fmt.Sprintf(" pool=%s pages (%.3g GiB per segment)", strings.Join(ps, "+"), float64(poolBytes)/(1<<30))
	}
	return mlaCaseOf(name, cfg, g, in, nil, nil, comp, choice.Split, design.Variant.Short())
}

// Vectors returns a case for a test-vector folder: its inputs and its own float64
// reference outputs. The launch is planned by plan's Split, SMs, HeadBlock and Tile
// (0: automatic); meta.json sets the rest. The case also fails when meta.json's
// valid_candidates_per_row differs from the count its len and idx files give.
// maxHostBytes bounds the folder's arrays (0: HostMemoryLimit).
func Vectors(dir string, target arch.Target, plan kernels.MLAConfig, maxHostBytes int64) (*Case, error) {
	if maxHostBytes <= 0 {
		maxHostBytes = HostMemoryLimit()
	}
	v, err := golden.LoadVectorsLimit(dir, maxHostBytes/2) // read, then decoded: twice
	if err != nil {
		return nil, err
	}
	cfg := kernels.MLAConfig{Shape: v.Config.Shape}
	if err := cfg.Validate(); err != nil {
		return nil, metaFieldError(err) // before the plan's flags: these values are meta.json's
	}
	cfg.Split, cfg.SMs, cfg.HeadBlock, cfg.Tile, cfg.Precision = plan.Split, plan.SMs, plan.HeadBlock, plan.Tile, plan.Precision
	prog, choice, design, err := kernels.MLACallDesign(cfg, target)
	if err != nil {
		return nil, err
	}
	comp, err := lower.CompileProgram(prog.Program, prog.Sequences(), target)
	if err != nil {
		return nil, err
	}
	// The folder's own layout (pools of any size) sizes the case, not check.MLA's.
	a := &hostAdmission{v: vectorsMemory{cfg, v.Config}, target: target, limit: maxHostBytes}
	if err := a.admit(comp); err != nil {
		return nil, err
	}
	name := fmt.Sprintf("vectors %s (%s) target=%s", v.Name, describeMLA(cfg), target)
	c, err := mlaCaseOf(name, cfg, v.Config, v.Inputs, v.Out, v.LSE, comp, choice.Split, design.Variant.Short())
	if err != nil {
		return nil, err
	}
	c.AdmittedBytes = a.admitted
	counted := validPerRow(v.Config, v.Inputs)
	compare := c.Compare
	// meta.json's counts ("got") against the files' (want), exactly.
	listed := make([]float32, len(v.ValidPerRow))
	for i, n := range v.ValidPerRow {
		listed[i] = float32(n)
	}
	want := make([]float64, len(counted))
	for i, n := range counted {
		want[i] = float64(n)
	}
	c.Compare = func(final map[string][]byte) []golden.Report {
		r := golden.Compare("meta.json valid_candidates_per_row (want: counted in len and idx)", listed, want, nil, golden.Tolerance{})
		return append(compare(final), r)
	}
	return c, nil
}

// metaFields maps the mla_decode flags a test-vector folder's meta.json sets to its
// fields.
var metaFields = map[string]string{
	"tokens": "T", "max-tokens": "T", "heads": "H", "nope": "nope", "rope": "rope", "scale": "sm_scale", "cache": "cache",
	"k0": "segments[0].K", "k1": "segments[1].K", "page0": "segments[0].page_size", "page1": "segments[1].page_size",
}

// metaFieldError restates a configuration error of a value meta.json set (the
// kernel's limits: -heads 200) as the meta.json field that holds it, since the user
// gave no such flag.
func metaFieldError(err error) error {
	var ce *kernels.ConfigError
	if errors.As(err, &ce) {
		if field, ok := metaFields[ce.Flag]; ok {
			return fmt.Errorf("meta.json %s = %s: want %s", field, ce.Value, ce.Want)
		}
	}
	return fmt.Errorf("meta.json: %v", err)
}

// validPerRow counts each row's valid candidates over all segments.
func validPerRow(g golden.MLAConfig, in *golden.MLAInputs) []int {
	out := make([]int, g.T)
	for t := range out {
		for s := range g.Segments {
			out[t] += len(g.Candidates(in, s, t))
		}
	}
	return out
}

// MLATolerances are the thresholds out and lse are held to at precision p: the
// spec's for exact, bf16p's own for out with one bf16 P (lse does not pass
// through P·V, so the spec's holds for it in both).
func MLATolerances(p kernels.MLAPrecision) (out, lse golden.Tolerance) {
	if p == kernels.PrecisionBF16P {
		return golden.MLAOutToleranceBF16P, golden.MLALSETolerance
	}
	return golden.MLAOutTolerance, golden.MLALSETolerance
}

func describeMLA(c kernels.MLAConfig) string {
	s := fmt.Sprintf("T=%d H=%d D=%d+%d cache=%s sink=%v", c.T, c.H, c.Nope, c.Rope, c.Cache, c.Sink)
	for i, seg := range c.Segments {
		s += fmt.Sprintf(" K%d=%d B%d=%d", i, seg.K, i, seg.PageSize)
		if !seg.HasLen {
			s += fmt.Sprintf(" nolen%d", i)
		}
	}
	if c.Split > 0 {
		s += fmt.Sprintf(" split=%d", c.Split)
	}
	if c.HeadBlock > 0 {
		s += fmt.Sprintf(" head-block=%d", c.HeadBlock)
	}
	if c.Tile > 0 {
		s += fmt.Sprintf(" tile=%d", c.Tile)
	}
	if c.SMs > 0 {
		s += fmt.Sprintf(" sms=%d", c.SMs)
	}
	if c.Precision != kernels.PrecisionExact {
		s += fmt.Sprintf(" precision=%s", c.Precision)
	}
	return s
}

// mlaCase binds inputs to the kernels' parameters. wantOut and wantLSE are the
// expected outputs; nil means compute them with the package's float64 reference.
func mlaCase(name string, cfg kernels.MLAConfig, g golden.MLAConfig, in *golden.MLAInputs, wantOut, wantLSE []float64, target arch.Target) (*Case, error) {
	prog, choice, design, err := kernels.MLACallDesign(cfg, target)
	if err != nil {
		return nil, err
	}
	comp, err := lower.CompileProgram(prog.Program, prog.Sequences(), target)
	if err != nil {
		return nil, err
	}
	return mlaCaseOf(name, cfg, g, in, wantOut, wantLSE, comp, choice.Split, design.Variant.Short())
}

// mlaCaseOf is mlaCase for the program already lowered, comp, a call of split whose
// design is variant (kernels.MLAVariant.Short).
func mlaCaseOf(name string, cfg kernels.MLAConfig, g golden.MLAConfig, in *golden.MLAInputs, wantOut, wantLSE []float64, comp *lower.Compiled, split int, variant string) (*Case, error) {
	var err error
	if wantOut == nil {
		if wantOut, wantLSE, err = golden.MLADecodeParallel(g, in); err != nil {
			return nil, err
		}
	}
	D := cfg.D()
	qt, qh := g.QStrides()
	c := &Case{
		Name:     name,
		Compiled: comp,
		Variant:  variant,
		Buffers: map[string][]byte{
			"q":   bytesOf(in.Q),
			"out": poison(int64(cfg.T) * int64(cfg.H) * int64(D) * 2),
			"lse": poison(int64(cfg.T) * int64(cfg.H) * 4),
		},
		Scalars: map[string]any{"rows": int32(cfg.T), "split": int32(split), "q_stride_t": int64(qt), "q_stride_h": int64(qh)},
	}
	if cfg.Sink {
		c.Buffers["sink"] = bytesOf(in.Sink)
	}
	bindSegments(c, g, in)
	addWorkspace(c, cfg.T*split)
	c.EmuAbs = map[string]float64{"out": mlaSoftmaxAllowance(g, in)}
	c.WriteVectors = func(dir string) error { return golden.WriteVectors(dir, g, in, wantOut, wantLSE) }
	c.Compare = func(final map[string][]byte) []golden.Report {
		outTol, lseTol := MLATolerances(cfg.Precision)
		return []golden.Report{
			golden.Compare("out", bf16s(final["out"]), wantOut, []int{cfg.T, cfg.H, D}, outTol),
			golden.Compare("lse", f32s(final["lse"]), wantLSE, []int{cfg.T, cfg.H}, lseTol),
		}
	}
	return c, nil
}

// compileKernel lowers k as a program of its own, named after it.
func compileKernel(k *ir.Kernel, target arch.Target) (*lower.Compiled, error) {
	return lower.CompileProgram(&ir.Program{Name: k.Name, Kernels: []*ir.Kernel{k}}, nil, target)
}

// Copy returns a copy case: random f32 rows, compared exactly.
func Copy(cfg kernels.CopyConfig, target arch.Target, seed uint64) (*Case, error) {
	return copyCase(cfg, target, seed, nil)
}

// copyCase is Copy; admit, if set, judges the lowered program first.
func copyCase(cfg kernels.CopyConfig, target arch.Target, seed uint64, admit func(*lower.Compiled) error) (*Case, error) {
	k, err := kernels.Copy(cfg)
	if err != nil {
		return nil, err
	}
	comp, err := compileKernel(k, target)
	if err != nil {
		return nil, err
	}
	if admit != nil {
		if err := admit(comp); err != nil {
			return nil, err
		}
	}
	n := int(cfg.Bytes() / 8)
	rng := rand.New(rand.NewPCG(seed, 0x636f7079))
	src := make([]float32, n)
	want := make([]float64, n)
	for i := range src {
		src[i] = float32(rng.NormFloat64())
		want[i] = float64(src[i])
	}
	c := &Case{
		Name:     fmt.Sprintf("copy rows=%d target=%s seed=%d", cfg.Rows, target, seed),
		Compiled: comp,
		Buffers:  map[string][]byte{"src": bytesOf(src), "dst": poison(int64(4 * n))},
	}
	c.Compare = func(final map[string][]byte) []golden.Report {
		return []golden.Report{golden.Compare("dst", f32s(final["dst"]), want, nil, golden.Tolerance{})}
	}
	return c, nil
}

// MMALoop returns an mma_loop case: every CTA's output is Iters x (A·B).
func MMALoop(cfg kernels.MMALoopConfig, target arch.Target, seed uint64) (*Case, error) {
	return mmaLoopCase(cfg, target, seed, nil)
}

// mmaLoopCase is MMALoop; admit, if set, judges the lowered program first.
func mmaLoopCase(cfg kernels.MMALoopConfig, target arch.Target, seed uint64, admit func(*lower.Compiled) error) (*Case, error) {
	k, err := kernels.MMALoop(cfg)
	if err != nil {
		return nil, err
	}
	comp, err := compileKernel(k, target)
	if err != nil {
		return nil, err
	}
	if admit != nil {
		if err := admit(comp); err != nil {
			return nil, err
		}
	}
	gc := golden.GemmConfig{M: 128, N: 128, K: 16}
	a, b, err := golden.GenGemm(gc, seed)
	if err != nil {
		return nil, err
	}
	ab, err := golden.Gemm(gc, a, b)
	if err != nil {
		return nil, err
	}
	want := make([]float64, 0, cfg.CTAs*len(ab))
	for i := 0; i < cfg.CTAs; i++ {
		for _, x := range ab {
			want = append(want, x*float64(cfg.Iters))
		}
	}
	c := &Case{
		Name:     fmt.Sprintf("mma_loop ctas=%d iters=%d target=%s seed=%d", cfg.CTAs, cfg.Iters, target, seed),
		Compiled: comp,
		Buffers:  map[string][]byte{"a": bytesOf(a), "b": bytesOf(b), "c": poison(int64(cfg.CTAs) * 128 * 128 * 4)},
	}
	// Iters fp32 accumulations of the same product. Tensor cores truncate rather
	// than round, so the error is biased and grows linearly: up to an ulp of the
	// running sum per step, Iters * 2^-23 of the result.
	tol := golden.Tolerance{Abs: float64(cfg.Iters) * 1e-6, Rel: float64(cfg.Iters) * 0x1p-22}
	c.Compare = func(final map[string][]byte) []golden.Report {
		return []golden.Report{golden.Compare("c", f32s(final["c"]), want, []int{cfg.CTAs, 128, 128}, tol)}
	}
	return c, nil
}

// bindSegments binds each candidate segment's arguments, under the names the decode
// and the gather ceiling share: the cache, indices and lengths, the page stride, the
// pool's slots and the index row stride.
func bindSegments(c *Case, g golden.MLAConfig, in *golden.MLAInputs) {
	for s := range g.Segments {
		seg, si := g.Segment(s), in.Segments[s]
		c.Buffers[fmt.Sprintf("cache%d", s)] = si.Cache
		c.Buffers[fmt.Sprintf("idx%d", s)] = bytesOf(si.Idx)
		if seg.HasLen {
			c.Buffers[fmt.Sprintf("len%d", s)] = bytesOf(si.Len)
		}
		stride := seg.IdxStride
		if stride == 0 {
			stride = seg.K
		}
		c.Scalars[fmt.Sprintf("page_stride%d", s)] = int64(seg.PageStride)
		c.Scalars[fmt.Sprintf("slots%d", s)] = int32(seg.Slots()) // golden.MLAConfig.Validate keeps it <= 2^31-1
		c.Scalars[fmt.Sprintf("idx_stride%d", s)] = int64(stride)
	}
}

// ReadBack returns a read_back case: random 32-bit words, each CTA's per-lane
// maxima compared exactly (the words are within ±2^20, exact in f32).
func ReadBack(cfg kernels.ReadBackConfig, target arch.Target, seed uint64) (*Case, error) {
	k, err := kernels.ReadBack(cfg)
	if err != nil {
		return nil, err
	}
	comp, err := compileKernel(k, target)
	if err != nil {
		return nil, err
	}
	const rows, cols = 128, 32
	rng := rand.New(rand.NewPCG(seed, 0x72656164))
	src := make([]byte, 4*cfg.Words)
	for i := 0; i < cfg.Words; i++ {
		binary.LittleEndian.PutUint32(src[4*i:], uint32(int32(rng.IntN(1<<21)-1<<20)))
	}
	tiles := cfg.Words / (rows * cols)
	per := (tiles + cfg.CTAs - 1) / cfg.CTAs
	want := make([]float64, cfg.CTAs*rows)
	for c := range cfg.CTAs {
		for j := c * per; j < min((c+1)*per, tiles); j++ {
			for r := range rows {
				for x := range cols {
					w := float64(int32(binary.LittleEndian.Uint32(src[4*((j*rows+r)*cols+x):])))
					want[c*rows+r] = max(want[c*rows+r], w)
				}
			}
		}
	}
	c := &Case{
		Name:     fmt.Sprintf("read_back words=%d ctas=%d target=%s seed=%d", cfg.Words, cfg.CTAs, target, seed),
		Compiled: comp,
		Buffers:  map[string][]byte{"src": src, "out": poison(int64(len(want)) * 4)},
	}
	c.Compare = func(final map[string][]byte) []golden.Report {
		return []golden.Report{golden.Compare("out", f32s(final["out"]), want, []int{cfg.CTAs, rows}, golden.Tolerance{})}
	}
	return c, nil
}
