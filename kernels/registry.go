package kernels

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/mla"
	"github.com/ptxgen/ptxgen/plan"
	"github.com/ptxgen/ptxgen/target"
)

// Config is one kernel configuration, bound to command-line flags.
type Config interface {
	// Build returns the program (kernels, workspace and launch plan) in the tile IR
	// for a target (programs may depend on it: SM count, shared memory), or a
	// *ConfigError for a bad value.
	Build(t target.Target) (*plan.Program, error)
	// Args renders the configuration as the flags that reproduce it.
	Args() []string
	// Value returns the validated configuration struct (GEMMConfig, ...).
	Value() (any, error)
}

// BuildCall is the program of what one call runs: for a configuration with a launch
// plan (mla_decode) the kernels the plan chooses for the call's rows (-tokens) on the
// SMs planned for, else Build's program. dump shows it and check runs it; gen writes
// Build's.
func BuildCall(c Config, t target.Target) (*plan.Program, error) {
	if cb, ok := c.(interface {
		BuildCall(t target.Target) (*plan.Program, error)
	}); ok {
		return cb.BuildCall(t)
	}
	return c.Build(t)
}

// Spec describes a kernel family the command line can generate.
type Spec struct {
	Name string
	Doc  string
	// Bind registers the family's configuration flags (with their defaults) on fs and
	// returns the configuration they fill in once fs is parsed.
	Bind func(fs *flag.FlagSet) Config
}

var registry = map[string]Spec{}

// Register adds a kernel family; it is called from init functions in this package.
func Register(s Spec) { registry[s.Name] = s }

// Lookup finds a kernel family by name.
func Lookup(name string) (Spec, error) {
	s, ok := registry[name]
	if !ok {
		return Spec{}, &ConfigError{Flag: "kernel", Value: name, Want: "one of " + strings.Join(Names(), ", ")}
	}
	return s, nil
}

// Names lists the registered kernel families, sorted.
func Names() []string {
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Specs lists the registered kernel families, sorted by name.
func Specs() []Spec {
	var s []Spec
	for _, n := range Names() {
		s = append(s, registry[n])
	}
	return s
}

func init() {
	Register(Spec{
		Name: "gemm",
		Doc:  "C[M,N] = A[M,K] x B[K,N]: bf16 inputs, fp32 accumulation, bf16 or f32 output",
		Bind: func(fs *flag.FlagSet) Config {
			c := &gemmFlags{}
			fs.IntVar(&c.M, "m", 128, "rows of A and C (1..16777216)")
			fs.IntVar(&c.N, "n", 128, "columns of B and C (1..8388480: ceil(n/128) <= 65535 grid rows)")
			fs.IntVar(&c.K, "k", 512, "columns of A, rows of B (1..16777216)")
			fs.StringVar(&c.out, "out", "bf16", "element type of C: bf16 or f32")
			return c
		},
	})
}

type gemmFlags struct {
	GEMMConfig
	out string
}

func (g *gemmFlags) config() (GEMMConfig, error) {
	c := g.GEMMConfig
	switch g.out {
	case "bf16":
		c.Out = ir.BF16
	case "f32":
		c.Out = ir.F32
	default:
		return c, &ConfigError{Flag: "out", Value: g.out, Want: "bf16 or f32"}
	}
	return c, c.Validate()
}

func (g *gemmFlags) Build(t target.Target) (*plan.Program, error) {
	c, err := g.config()
	if err != nil {
		return nil, err
	}
	k, err := GEMM(c)
	if err != nil {
		return nil, err
	}
	return plan.Unplanned(&ir.Program{Name: "gemm", Kernels: []*ir.Kernel{k}}), nil
}

// Value returns the validated configuration (a GEMMConfig).
func (g *gemmFlags) Value() (any, error) { return g.config() }

func (g *gemmFlags) Args() []string {
	return []string{"-kernel", "gemm", "-m", fmt.Sprint(g.M), "-n", fmt.Sprint(g.N), "-k", fmt.Sprint(g.K), "-out", g.out}
}

func init() {
	Register(Spec{
		Name: "mla_decode",
		Doc:  "DeepSeek-V4 sparse MLA decode: paged fp8ds/bf16 KV gathered through index lists, online softmax, sink, LSE",
		Bind: func(fs *flag.FlagSet) Config {
			m := &mlaFlags{}
			fs.IntVar(&m.T, "tokens", 1, "query rows T of the call dump shows and check runs (decode tokens, 1..65535; at most -max-tokens)")
			fs.IntVar(&m.MaxT, "max-tokens", 0, "capacity: the most rows a call of the generated kernel may have, sizing the workspace (0 = -tokens, else 1..65535)")
			fs.IntVar(&m.H, "heads", 64, "query heads H (1..128)")
			fs.IntVar(&m.k[0], "k0", 128, "candidates per row in segment 0 (1..1048576)")
			fs.IntVar(&m.k[1], "k1", 512, "candidates per row in segment 1 (0 = no segment 1, else 1..1048576)")
			fs.IntVar(&m.page[0], "page0", 64, "tokens per cache page in segment 0 (1..65536)")
			fs.IntVar(&m.page[1], "page1", 64, "tokens per cache page in segment 1 (1..65536)")
			fs.BoolVar(&m.hasLen[0], "len0", true, "segment 0 has a per-row valid length")
			fs.BoolVar(&m.hasLen[1], "len1", true, "segment 1 has a per-row valid length")
			fs.StringVar((*string)(&m.Cache), "cache", string(mla.CacheFP8DS), "KV cache format: fp8ds (584 B/token) or bf16 ([pages, B, D])")
			fs.IntVar(&m.Nope, "nope", mla.FP8DSNope, "quantized (nope) width of K/V (fp8ds: 448)")
			fs.IntVar(&m.Rope, "rope", mla.FP8DSRope, "rope width of K/V (fp8ds: 64)")
			fs.BoolVar(&m.Sink, "sink", true, "a per-head f32 attention sink is given")
			Float32Var(fs, &m.Scale, "scale", 0, "softmax scale (0 = 1/sqrt(nope+rope))")
			fs.IntVar(&m.Split, "split", 0, "candidate chunks per row across CTAs (0 = planned per call from its rows and the SM count; 1..64, counted as the chunks that get candidate tiles: -split 3 over 4 tiles runs 2 chunks of 2)")
			fs.IntVar(&m.SMs, "sms", 0, "SM count every call is planned for, and only the kernels its calls choose are generated (0 = the device's at launch; dump and check assume the target's: sm_120 188, sm_90 132, sm_80 108)")
			fs.IntVar(&m.HeadBlock, "head-block", 0, "heads per CTA: 8 (the heads in the MMA's N dimension), 16, 32 or 64 (4, 4, 8 and 8 warps; -warps64 16 for 16); 0 = automatic")
			fs.IntVar(&m.Warps64, "warps64", 0, "warps per 64-head CTA: 8 or 16; 0 = automatic (8); only where 64-head CTAs exist (-head-block 64, or 0 with -heads 64 or more)")
			fs.IntVar(&m.Tile, "tile", 0, "candidates per loop iteration: 32 or 64; 0 = automatic (64 with 64-head CTAs where shared memory allows)")
			fs.IntVar(&m.ProducerWarps, "producer-warps", 0, "experimental: warps of a producer role in each 64-head CTA of the fp8ds cache, besides its math warps: 1, 2 or 4 gather and dequantize every candidate tile into a ring the math warps read (two slots with -tile 32). Without setmaxnreg every warp then gets 168 registers and the math warps spill (run 42, docs/perf-notes.md v14); 0 = none, the default")
			fs.IntVar(&m.ScoreWarps, "score-warps", 0, "warps of each 8-warp 64-head CTA that compute the scores and the softmax: 4 (a score role, 32 x 32 quadrants of each tile; every warp dequantizes and computes P·V) or 8 (every warp); 0 = automatic (4 with 64-candidate tiles and no producer role)")
			fs.IntVar(&m.ScoreRows, "score-rows", 0, "experimental: row groups of each 8-warp 64-head CTA's score grid, 1, 2 or 4 (those that divide it); with computed fragments each row group converts its candidates' K pairs, so 2 converts each pair twice a tile instead of 4 times (not yet run on a GPU); 0 = the grid that reads the fewest bytes")
			fs.BoolVar(&m.holdQ, "hold-q", true, "the score dots of 16-head CTAs' large kernels hold their Q slices in registers across the candidate loop (a regs; 2-3% faster at T >= 64, runs 61-62); false reads them from shared memory every tile")
			KFragsVar(fs, &m.KFrags, "k-frags", "the decode's CTAs evaluate their K and V fragments in registers from the raw e4m3 ring (a computed, b computed) instead of storing a dequantized bf16 K tile in shared memory: auto (the default) for the heads-in-N CTA (8 heads) where that gives it another CTA per SM at the same stages, and under sm_120's limits for the calls whose rows fill the SMs (a 16-head family of 2 CTAs per SM, and at 64 heads or more the one 64-head CTA that fits 99 KB); true for the heads-in-N, 16-head and 64-head CTAs of every call, false for none")
			fs.IntVar(&m.Stages, "stages", 0, "candidate tiles every decode family's loops keep in flight: 1 or 2 (a ring of gathers issued a tile ahead); 0 = automatic (2 where it keeps 2 CTAs per SM or as many as one stage, and for 64-head CTAs wherever it fits)")
			fs.BoolVar(&m.kPerm, "k-perm", true, "the 16-head CTA's computed K and V fragments (-k-frags true, or the family of the rows that fill the SMs) read in kperm order, one 4-byte read per thread and k16 step (0.6-2.2% faster, run 88); false reads them pair by pair, two 2-byte reads")
			fs.IntVar(&m.ahead, "ahead", -1, "tiles before their gathers that the candidate loops issue each tile's indices where a CTA walks more candidates than it preloads (2048 per list): 1..3, 0 none (the gathers then wait for their indices in their own iteration and are not pipelined); -1 = automatic (the stages less one, at least 1)")
			fs.StringVar(&m.precision, "precision", PrecisionExact.String(), "arithmetic of P·V: exact (P in two bf16 terms, the spec's thresholds) or bf16p (P as one bf16 term, as FlashMLA: half the tensor work of P·V, its own tolerance)")
			return m
		},
	})
}

type mlaFlags struct {
	MLAConfig
	k, page   [2]int
	hasLen    [2]bool
	precision string
	holdQ     bool
	kPerm     bool
	ahead     int
}

// MLAAhead is MLAConfig.Ahead for a value of the -ahead flag: its -1 (automatic)
// and 0 (none) are the loop clause's 0 and ir.NoAhead.
func MLAAhead(flag int) (int, error) {
	switch {
	case flag == -1:
		return 0, nil
	case flag == 0:
		return ir.NoAhead, nil
	case flag > 0 && flag <= ir.MaxAhead:
		return flag, nil
	}
	return 0, &ConfigError{Flag: "ahead", Value: fmt.Sprint(flag), Want: fmt.Sprintf("-1 (automatic), 0 (none) or 1..%d", ir.MaxAhead)}
}

func (m *mlaFlags) config() (MLAConfig, error) {
	c := m.MLAConfig
	c.SharedQ, c.KPairwise = !m.holdQ, !m.kPerm
	var err error
	if c.Ahead, err = MLAAhead(m.ahead); err != nil {
		return c, err
	}
	if m.k[1] == 0 && (m.page[1] != 64 || !m.hasLen[1]) {
		// Segment 1's flags would be ignored without segment 1.
		v := fmt.Sprintf("%d", m.page[1])
		flag := "page1"
		if m.page[1] == 64 {
			flag, v = "len1", fmt.Sprint(m.hasLen[1])
		}
		return c, &ConfigError{Flag: flag, Value: v, Want: "no segment-1 flag with -k1 0 (there is no segment 1)"}
	}
	if c.MaxT == 0 {
		c.MaxT = c.T // the configuration names its capacity, also by default
	}
	if c.Precision, err = ParseMLAPrecision(m.precision); err != nil {
		return c, err
	}
	c.Segments = nil
	for s := 0; s < 2; s++ {
		if s == 1 && m.k[1] == 0 {
			break
		}
		c.Segments = append(c.Segments, mla.Segment{K: m.k[s], PageSize: m.page[s], HasLen: m.hasLen[s]})
	}
	return c, c.Validate()
}

func (m *mlaFlags) Build(t target.Target) (*plan.Program, error) {
	c, err := m.config()
	if err != nil {
		return nil, err
	}
	return MLA(c, t)
}

// BuildCall is the program a call of -tokens rows runs (MLACall).
func (m *mlaFlags) BuildCall(t target.Target) (*plan.Program, error) {
	c, err := m.config()
	if err != nil {
		return nil, err
	}
	p, _, err := MLACall(c, t)
	return p, err
}

// Value returns the validated configuration (an MLAConfig).
func (m *mlaFlags) Value() (any, error) { return m.config() }

func (m *mlaFlags) Args() []string {
	a := []string{"-kernel", "mla_decode", "-tokens", fmt.Sprint(m.T), "-max-tokens", fmt.Sprint(m.Capacity()), "-heads", fmt.Sprint(m.H),
		"-k0", fmt.Sprint(m.k[0]), "-page0", fmt.Sprint(m.page[0]), fmt.Sprintf("-len0=%v", m.hasLen[0]),
		"-k1", fmt.Sprint(m.k[1])}
	if m.k[1] != 0 {
		a = append(a, "-page1", fmt.Sprint(m.page[1]), fmt.Sprintf("-len1=%v", m.hasLen[1]))
	}
	a = append(a, "-cache", string(m.Cache), "-nope", fmt.Sprint(m.Nope), "-rope", fmt.Sprint(m.Rope),
		fmt.Sprintf("-sink=%v", m.Sink), "-scale", fmt.Sprint(m.Scale), "-split", fmt.Sprint(m.Split), "-sms", fmt.Sprint(m.SMs),
		"-head-block", fmt.Sprint(m.HeadBlock), "-tile", fmt.Sprint(m.Tile), "-warps64", fmt.Sprint(m.Warps64),
		// Defaults included, like every flag above: a command that leaves one out
		// generates other code once its default changes.
		"-precision", m.precision, "-producer-warps", fmt.Sprint(m.ProducerWarps), "-score-warps", fmt.Sprint(m.ScoreWarps), "-score-rows", fmt.Sprint(m.ScoreRows),
		fmt.Sprintf("-hold-q=%v", m.holdQ), "-k-frags="+m.KFrags.String(), "-stages", fmt.Sprint(m.Stages), "-ahead", fmt.Sprint(m.ahead), fmt.Sprintf("-k-perm=%v", m.kPerm))
	return a
}

func fmtInt(n int) string { return fmt.Sprint(n) }

func init() {
	Register(Spec{
		Name: "copy",
		Doc:  "ceiling kernel: copies rows of 1 KB through shared memory with 16-byte accesses",
		Bind: func(fs *flag.FlagSet) Config {
			c := &copyFlags{}
			fs.IntVar(&c.Rows, "rows", 1<<18, "rows of 1 KB to copy (1..16777216)")
			return c
		},
	})
	Register(Spec{
		Name: "mma_loop",
		Doc:  "ceiling kernel: a loop of bf16 mma.sync on tiles held in shared memory",
		Bind: func(fs *flag.FlagSet) Config {
			c := &mmaLoopFlags{}
			fs.IntVar(&c.CTAs, "ctas", 528, "CTAs (1..1048576)")
			fs.IntVar(&c.Iters, "iters", 4096, "k16 steps per CTA (1..16777216)")
			return c
		},
	})
}

type copyFlags struct{ CopyConfig }

func (c *copyFlags) Build(t target.Target) (*plan.Program, error) {
	k, err := Copy(c.CopyConfig)
	if err != nil {
		return nil, err
	}
	return plan.Unplanned(&ir.Program{Name: "copy", Kernels: []*ir.Kernel{k}}), nil
}

func (c *copyFlags) Value() (any, error) { return c.CopyConfig, c.Validate() }

func (c *copyFlags) Args() []string { return []string{"-kernel", "copy", "-rows", fmt.Sprint(c.Rows)} }

type mmaLoopFlags struct{ MMALoopConfig }

func (c *mmaLoopFlags) Build(t target.Target) (*plan.Program, error) {
	k, err := MMALoop(c.MMALoopConfig)
	if err != nil {
		return nil, err
	}
	return plan.Unplanned(&ir.Program{Name: "mma_loop", Kernels: []*ir.Kernel{k}}), nil
}

func (c *mmaLoopFlags) Value() (any, error) { return c.MMALoopConfig, c.Validate() }

func (c *mmaLoopFlags) Args() []string {
	return []string{"-kernel", "mma_loop", "-ctas", fmt.Sprint(c.CTAs), "-iters", fmt.Sprint(c.Iters)}
}
