package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ptxgen/ptxgen/bench"
	"github.com/ptxgen/ptxgen/check"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/ptx"
	arch "github.com/ptxgen/ptxgen/target"
)

// benchDevice is a device that can time programs with CUDA events.
type benchDevice interface {
	device
	// Prepare loads a case's kernels and copies its buffers to the device sets
	// times, so that timed calls can rotate between input sets.
	Prepare(c *check.Case, sets int) (preparedCase, error)
	// SMs is the device's multiprocessor count; L2Bytes its L2 size.
	SMs() int
	L2Bytes() int64
	Driver() string
}

// preparedCase is a case resident on the device.
type preparedCase interface {
	// Time runs every kernel of the program on input set i between two CUDA events
	// and returns the milliseconds between them, after the flush (outside the
	// timed region).
	Time(i int, f l2Flush) (float64, error)
	// Final copies input set i's buffers back.
	Final(i int) (map[string][]byte, error)
	Close() error
}

// l2Flush is what runs before a timed call to evict L2: Bytes of scratch memory
// written (none if 0), then with Clean 2x L2 of it read back, so that L2 holds
// clean lines and the timed kernel pays no write-back of the flush's dirty ones.
type l2Flush struct {
	Bytes int64
	Clean bool
}

func benchCmd(args []string, stdout, stderr io.Writer, open opener) error {
	fs := flag.NewFlagSet("ptxgen-gpu bench", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ordinal := fs.Int("device", 0, "CUDA device `ordinal`")
	shapes := fs.String("shapes", "all", "comma-separated shape names (see -list), or all")
	list := fs.Bool("list", false, "list the shapes and exit")
	iters := fs.Int("iters", 50, "timed calls per shape (1..10000)")
	warmup := fs.Int("warmup", 5, "untimed calls per shape before timing")
	flushMB := fs.Int("flush-mb", 256, "MB of scratch written before every timed call to evict L2 (0: no flush)")
	flushClean := fs.Bool("flush-clean", false, "after the flush's write, read twice the L2 of the scratch back (read_back), so that the timed call finds L2 clean: a write alone leaves it full of dirty lines whose write-back the timed kernel pays (FlashMLA's vs.py flushes by a write alone)")
	bw, flops := new(float64), new(float64) // finite: NaN or Inf would poison every floor
	kernels.Float32Var(fs, bw, "bw", 0, "bandwidth ceiling in bytes/s (0: measure with the generated copy kernel)")
	kernels.Float32Var(fs, flops, "flops", 0, "mma.sync ceiling in FLOP/s (0: measure with the generated mma_loop kernel)")
	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	svgOut := fs.String("svg", "", "write the SVG roofline plot to this file")
	vectorsIn := fs.String("vectors-in", "", "read each shape's inputs and float64 outputs from DIR/NAME, as -vectors-out wrote them, instead of generating them (the -pool and -seed of that run apply)")
	vectorsOut := fs.String("vectors-out", "", "write each shape's inputs and float64 outputs as a test-vector folder under this directory (for bench/triton_seed.py) and exit")
	triton := fs.String("triton", "", "merge bench/triton_seed.py's JSON output")
	flashmla := fs.String("flashmla", "", "merge FlashMLA's timings: the JSON output of .anchors/flashmla/vs.py on the -vectors-out folders")
	barsOut := fs.String("bars-svg", "", "write the SVG bar chart (us per shape and implementation) to this file")
	mdOut := fs.String("md", "", "write the report as a Markdown table (for docs/perf.md) to this file")
	pool := fs.String("pool", check.PoolServing, "where rows gather from: serving (pages of their own, distinct per row, in a pool of at least 3x L2 per shape), sparse (a sequence of pages of its own per row, its candidates a random subset of the sequence's slots, as a top-k indexer picks them), or small (one shared pool of 2*ceil(K/B)+4 pages per segment, mostly L2 hits)")
	gather := fs.Bool("gather", true, "also time each shape's gather ceiling (mla_gather: the same records through the same indices, summed) and report the decode's time as a multiple of it")
	gatherSplit := fs.Int("gather-split", 0, "CTAs per row of the gather ceiling (1..64; 0: enough for 4 CTAs per SM, at most one per 32-candidate tile), to check that its choice is the fastest")
	planTarget := fs.String("plan-target", "", "plan the first ptxgen column under this target's limits, emitted for the device's target (as dump -plan-target)")
	poolMB := fs.Int("pool-mb", 0, "least MiB of cache per shape in a serving pool (0: 3x this GPU's L2; 1..8192)")
	bf16p := fs.Bool("bf16p", true, "also time each shape's kernel generated with -precision bf16p (P as one bf16 term, as FlashMLA) on the same inputs, held to bf16p's tolerance")
	sm120 := fs.Bool("sm120-plan", true, "also time each shape's kernel planned under sm_120's limits (-plan-target sm_120) on this GPU, split planned for this GPU's SM count")
	headBlock := fs.Int("head-block", 0, "override the heads per CTA of every shape (8 with the heads in the MMA's N dimension, 16, 32 or 64; 0: the generator's choice)")
	split := fs.Int("split", 0, "override the candidate split of every shape (1..64; 0: the generator's choice)")
	tile := fs.Int("tile", 0, "override the candidates per tile of every shape (32 or 64; 0: the generator's choice)")
	warps64 := fs.Int("warps64", 0, "override the warps of every 64-head CTA (8 or 16; 0: the generator's choice)")
	scoreRows := fs.Int("score-rows", 0, "row groups of every 8-warp 64-head CTA's score grid (1, 2 or 4; 0: automatic), as -score-rows in a configuration")
	scoreWarps := fs.Int("score-warps", 0, "warps of every 8-warp 64-head CTA that compute the scores and the softmax: 4 (a score role) or 8 (every warp); 0: automatic, as -score-warps in a configuration")
	producerWarps := fs.Int("producer-warps", 0, "give every 64-head CTA of the fp8ds cache a producer role of this many warps (1, 2 or 4; 0: none), as -producer-warps in a configuration")
	seed := fs.Uint64("seed", 1, "seed of the inputs")
	holdQ := fs.Bool("hold-q", true, "the score dots of every 16-head CTA's large kernels hold their Q slices in registers across the candidate loop, as -hold-q in a configuration; false reads them from shared memory every tile")
	stages := fs.Int("stages", 0, "override the candidate tiles in flight of every shape's decode families (1 or 2; 0: the generator's choice), as -stages in a configuration")
	kPerm := fs.Bool("k-perm", true, "the 16-head CTA's computed fragments read in kperm order (false: pair by pair), as -k-perm in a configuration")
	aheadFlag := fs.Int("ahead", -1, "tiles before their gathers that every shape's candidate loops issue each tile's indices past the preloaded ones (1..3; 0 none; -1 the generator's choice), as -ahead in a configuration")
	var kFrags kernels.MLAKFrags
	kernels.KFragsVar(fs, &kFrags, "k-frags", "where the decode's CTAs evaluate their K and V fragments from the raw ring: auto (the generator's choice), true (the heads-in-N, 16-head and 64-head CTAs) or false, as -k-frags in a configuration")
	plannedRes := fs.Bool("planned-residency", true, "run the kernels planned under another target's limits (the sm_120 plan, -plan-target) at that target's CTAs per SM: their dynamic shared memory is padded so that this GPU's SMs hold no more of them than its SMs would (shared memory and threads; registers are the same 64K on both); the report's KB are then the padded sizes. false runs them at this GPU's residency (the sm120 plan column before session 12)")
	pdl := fs.Bool("pdl", true, "launch kernels that wait for their predecessor (the mla_combine_N kernels on sm_90+) with programmatic dependent launch; false launches them plainly, for A/B timing")
	if err := kernels.ParseFlags(fs, args); err != nil {
		return err
	}
	ahead, err := kernels.MLAAhead(*aheadFlag)
	if err != nil {
		return err
	}
	all := bench.Shapes()
	if *list {
		for _, s := range all {
			c := bench.CostOf(s)
			fmt.Fprintf(stdout, "%-24s %8.1f MB %8.2f GFLOP\n", s.Name, c.Bytes/1e6, c.Flops/1e9)
		}
		return nil
	}
	if *iters < 1 || *iters > 10000 {
		return &kernels.ConfigError{Flag: "iters", Value: fmt.Sprint(*iters), Want: "1..10000"}
	}
	if *flushMB < 0 || *flushMB > 4096 {
		return &kernels.ConfigError{Flag: "flush-mb", Value: fmt.Sprint(*flushMB), Want: "0..4096"}
	}
	if *split < 0 || *split > 64 {
		return &kernels.ConfigError{Flag: "split", Value: fmt.Sprint(*split), Want: "0..64"}
	}
	if *tile != 0 && *tile != 32 && *tile != 64 {
		return &kernels.ConfigError{Flag: "tile", Value: fmt.Sprint(*tile), Want: "0, 32 or 64"}
	}
	if *headBlock != 0 && *headBlock != 8 && *headBlock != 16 && *headBlock != 32 && *headBlock != 64 {
		return &kernels.ConfigError{Flag: "head-block", Value: fmt.Sprint(*headBlock), Want: "0, 8 (the heads in the MMA's N dimension), 16, 32 or 64"}
	}
	var planUnder arch.Target
	if *planTarget != "" {
		var err error
		if planUnder, err = arch.LookupTarget(*planTarget); err != nil {
			return &kernels.ConfigError{Flag: "plan-target", Value: *planTarget, Want: "one of " + strings.Join(arch.Names(), ", ")}
		}
	}
	if *poolMB < 0 || *poolMB > 8192 {
		return &kernels.ConfigError{Flag: "pool-mb", Value: fmt.Sprint(*poolMB), Want: "0 (3x L2) or 1..8192"}
	}
	if !slices.Contains(check.Pools, *pool) {
		return &kernels.ConfigError{Flag: "pool", Value: *pool, Want: strings.Join(check.Pools, ", ")}
	}
	if *gatherSplit < 0 || *gatherSplit > 64 {
		return &kernels.ConfigError{Flag: "gather-split", Value: fmt.Sprint(*gatherSplit), Want: "0..64"}
	}
	if *gatherSplit != 0 && !*gather {
		return &kernels.ConfigError{Flag: "gather-split", Value: fmt.Sprint(*gatherSplit), Want: "0 with -gather=false (no gather ceiling to split)"}
	}
	if *warmup < 0 || *warmup > 10000 {
		return &kernels.ConfigError{Flag: "warmup", Value: fmt.Sprint(*warmup), Want: "0..10000"}
	}
	for _, r := range []struct {
		flag string
		v    float64
	}{{"bw", *bw}, {"flops", *flops}} {
		if r.v < 0 {
			return &kernels.ConfigError{Flag: r.flag, Value: fmt.Sprint(r.v), Want: "0 (measure it) or a positive rate"}
		}
	}
	var picked []bench.Shape
	if *shapes == "all" {
		picked = all
	} else {
		for _, n := range strings.Split(*shapes, ",") {
			found := false
			for _, s := range all {
				if s.Name == n {
					picked, found = append(picked, s), true
				}
			}
			if !found {
				sh, err := bench.ParseShapeName(n)
				if err != nil {
					return &kernels.ConfigError{Flag: "shapes", Value: n, Want: "a name from -list, one of their form (H16_T64_K4096+0: fp8ds, pages of 64, sink), or all (" + err.Error() + ")"}
				}
				picked = append(picked, sh)
			}
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"warps64", *warps64}, {"producer-warps", *producerWarps}, {"score-warps", *scoreWarps}} {
		if f.v == 0 {
			continue
		}
		// Like the flag in a configuration: refused where no shape has 64-head CTAs
		// for it to apply to, rather than ignored.
		wide := false
		for _, sh := range picked {
			c := sh.Config()
			c.HeadBlock = *headBlock
			wide = wide || c.Wide()
		}
		if !wide {
			return &kernels.ConfigError{Flag: f.name, Value: fmt.Sprint(f.v), Want: "0 here: it applies to 64-head CTAs, and none of the shapes has them (-head-block 64, or 0 with 64 heads or more)"}
		}
	}
	// The baselines' results are read before any GPU time is spent.
	var tritonRecs []bench.TritonRecord
	if *triton != "" {
		b, err := os.ReadFile(*triton)
		if err == nil {
			tritonRecs, err = bench.ParseTriton(b)
		}
		if err != nil {
			return &usageError{Msg: fmt.Sprintf("-triton %s: %v", *triton, err)}
		}
	}
	var flashRecs *bench.FlashMLAResults
	if *flashmla != "" {
		b, err := os.ReadFile(*flashmla)
		var f bench.FlashMLAResults
		if err == nil {
			f, err = bench.ParseFlashMLA(b)
		}
		if err != nil {
			return &usageError{Msg: fmt.Sprintf("-flashmla %s: %v", *flashmla, err)}
		}
		flashRecs = &f
	}
	d, err := open(*ordinal)
	if err != nil {
		return fmt.Errorf("opening device %d: %w", *ordinal, err)
	}
	defer d.Close()
	bd, ok := d.(benchDevice)
	if !ok {
		return &usageError{Msg: "this device cannot time programs"}
	}
	target, err := deviceTarget(d.Arch())
	if err != nil {
		return &usageError{Msg: fmt.Sprintf("device %s: %v", d.Arch(), err)}
	}
	// The sm_120 plan runs here as sm_90 (or this device's) code planned under
	// sm_120's limits; on an sm_120 device it is the first column already.
	targets := []arch.Target{target}
	if *planTarget != "" {
		targets[0] = target.WithLimitsOf(planUnder)
	}
	if *sm120 && target.Name != "sm_120" {
		targets = append(targets, target.WithLimitsOf(arch.MustLookup("sm_120")))
	}
	// A serving pool holds at least 3x L2 of cache per shape, so no input copies
	// need rotating; cases are built one shape at a time (each holds its pool).
	minPool := 3 * bd.L2Bytes()
	if *poolMB > 0 {
		minPool = int64(*poolMB) << 20
	}
	build := func(i int, targets []arch.Target) (*check.BenchCases, error) {
		cfg := picked[i].Config()
		cfg.HeadBlock, cfg.Split, cfg.Tile, cfg.SharedQ, cfg.KFrags, cfg.Stages, cfg.Ahead, cfg.KPairwise = *headBlock, *split, *tile, !*holdQ, kFrags, *stages, ahead, !*kPerm
		if cfg.Wide() {
			// The shapes with 64-head CTAs; the others have none to size.
			cfg.Warps64, cfg.ProducerWarps, cfg.ScoreWarps, cfg.ScoreRows = *warps64, *producerWarps, *scoreWarps, *scoreRows
		}
		// Both plans split for this GPU's SM count: the comparison asks what each
		// design does on the same hardware.
		cfg.SMs = bd.SMs()
		var bc *check.BenchCases
		var err error
		if *vectorsIn != "" {
			bc, err = check.MLABenchVectors(filepath.Join(*vectorsIn, picked[i].Name), cfg, targets)
		} else {
			bc, err = check.MLABench(cfg, targets, *pool, minPool, *seed+uint64(i))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", picked[i].Name, err)
		}
		for _, c := range bc.Decode {
			if !*pdl {
				plainLaunch(c)
			}
			if *plannedRes {
				plannedResidency(c, target)
			}
		}
		return bc, nil
	}
	if *vectorsOut != "" {
		for i, s := range picked {
			bc, err := build(i, targets[:1])
			if err != nil {
				return err
			}
			dir := filepath.Join(*vectorsOut, s.Name)
			if err := bc.Decode[0].WriteVectors(dir); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
			fmt.Fprintf(stdout, "wrote %s\n", dir)
		}
		return nil
	}
	flush := l2Flush{Bytes: int64(*flushMB) << 20, Clean: *flushClean && *flushMB > 0}
	rep := bench.Report{
		GPU: strings.TrimSpace(firstLine(d.Info())), Driver: bd.Driver(), Target: target.Name,
		Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Command: "ptxgen-gpu bench " + strings.Join(args, " "),
		NotesCeilings: bench.NotesCeilings, L2Flush: *flushMB > 0, L2FlushClean: flush.Clean, Pool: *pool,
		PlannedResidency: *plannedRes,
	}

	rep.Ceilings = bench.Ceilings{BytesPerSec: *bw, FlopsPerSec: *flops, Source: "given"}
	if *bw == 0 || *flops == 0 {
		measured, err := measureCeilings(bd, target, stdout)
		if err != nil {
			return fmt.Errorf("measuring ceilings: %w", err)
		}
		if *bw == 0 {
			rep.Ceilings.BytesPerSec = measured.BytesPerSec
		}
		if *flops == 0 {
			rep.Ceilings.FlopsPerSec = measured.FlopsPerSec
		}
		rep.Ceilings.Source = "measured"
		if *bw != 0 || *flops != 0 {
			rep.Ceilings.Source = "measured and given"
		}
	}
	for i, s := range picked {
		bc, err := build(i, targets)
		if err != nil {
			return err
		}
		cs, bytes := bc.Decode, bc.PoolBytes
		r := bench.Result{Shape: s, Cost: bench.CostOf(s), PoolBytes: bytes, Plan: plan(cs[0])}
		r.PTXGen = timeCase(bd, cs[0], *warmup, *iters, flush)
		fmt.Fprintf(stdout, "%-24s %s: %.2f us (min %.2f), ok %v %s\n", s.Name, r.Plan, r.PTXGen.MedianUS, r.PTXGen.MinUS, r.PTXGen.OK, r.PTXGen.Error)
		if len(cs) > 1 {
			t := timeCase(bd, cs[1], *warmup, *iters, flush)
			r.SM120Plan, r.PlanSM120 = &t, plan(cs[1])
			fmt.Fprintf(stdout, "%-24s sm_120 plan %s: %.2f us (min %.2f), ok %v %s\n", s.Name, r.PlanSM120, t.MedianUS, t.MinUS, t.OK, t.Error)
		}
		if *bf16p {
			c, err := bc.WithPrecision(kernels.PrecisionBF16P, targets[0])
			if err != nil {
				return fmt.Errorf("%s: bf16p: %w", s.Name, err)
			}
			if !*pdl {
				plainLaunch(c)
			}
			t := timeCase(bd, c, *warmup, *iters, flush)
			r.BF16P = &t
			fmt.Fprintf(stdout, "%-24s bf16p %s: %.2f us (min %.2f), ok %v %s\n", s.Name, plan(c), t.MedianUS, t.MinUS, t.OK, t.Error)
		}
		if *gather {
			if *gatherSplit != 0 {
				if bc.Gather, err = check.MLAGather(bc.Config, bc.Inputs, targets[0], bd.SMs(), *gatherSplit); err != nil {
					return fmt.Errorf("%s: gather ceiling: %w", s.Name, err)
				}
			}
			t := timeCase(bd, bc.Gather, *warmup, *iters, flush)
			r.Gather = &t
			fmt.Fprintf(stdout, "%-24s gather ceiling %s: %.2f us (min %.2f), ok %v %s\n", s.Name, plan(bc.Gather), t.MedianUS, t.MinUS, t.OK, t.Error)
		}
		rep.Results = append(rep.Results, r)
		if *pool != check.PoolSmall && (rep.PoolMinBytes == 0 || bytes < rep.PoolMinBytes) {
			rep.PoolMinBytes = bytes // the report says "at least" the smallest pool
		}
	}
	if tritonRecs != nil {
		rep.MergeTriton(tritonRecs)
	}
	if flashRecs != nil {
		rep.MergeFlashMLA(*flashRecs)
	}
	fmt.Fprint(stdout, "\n"+rep.Table())
	if *jsonOut != "" {
		b, err := rep.JSON()
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, b, 0o644); err != nil {
			return err
		}
	}
	for _, o := range []struct{ path, text string }{{*svgOut, rep.SVG()}, {*barsOut, rep.BarsSVG()}, {*mdOut, rep.Markdown()}} {
		if o.path == "" {
			continue
		}
		if err := os.WriteFile(o.path, []byte(o.text), 0o644); err != nil {
			return err
		}
	}
	for _, r := range rep.Results {
		if !r.PTXGen.OK || r.SM120Plan != nil && !r.SM120Plan.OK || r.Gather != nil && !r.Gather.OK {
			return &failure{fmt.Sprintf("%s: outputs outside tolerance or not run", r.Shape.Name)}
		}
	}
	return nil
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// plan summarizes what the case's call runs: each kernel with its launch grid.
func plan(c *check.Case) string {
	rows, _ := c.Scalars["rows"].(int32)
	split, ok := c.Scalars["split"].(int32)
	if !ok {
		split = 1
	}
	var p []string
	for _, k := range c.Compiled.Kernels {
		g := k.GridFor(int(rows), int(split))
		p = append(p, fmt.Sprintf("%s %dx%dx%d/%d %dKB", strings.TrimPrefix(k.Name, "mla_"), g[0], g[1], g[2], k.Block, k.SharedBytes/1024))
	}
	if c.Variant != "" {
		return "[" + c.Variant + "] " + strings.Join(p, " + ")
	}
	return strings.Join(p, " + ")
}

// setsFor is how many input copies to rotate so the working set of the timed
// calls is at least three times L2.
func setsFor(c *check.Case, l2 int64) int {
	var bytes int64
	for _, b := range c.Buffers {
		bytes += int64(len(b))
	}
	return int(min(max((3*l2+bytes-1)/max(bytes, 1), 1), 8))
}

// timeCase times a case and checks the outputs of one timed set.
func timeCase(d benchDevice, c *check.Case, warmup, iters int, flush l2Flush) bench.Timing {
	sets := setsFor(c, d.L2Bytes())
	p, err := d.Prepare(c, sets)
	if err != nil {
		return bench.Timing{Error: err.Error()}
	}
	defer p.Close()
	for i := 0; i < warmup; i++ {
		if _, err := p.Time(i%sets, l2Flush{}); err != nil {
			return bench.Timing{Error: err.Error()}
		}
	}
	ms := make([]float64, 0, iters)
	for i := 0; i < iters; i++ {
		t, err := p.Time(i%sets, flush)
		if err != nil {
			return bench.Timing{Error: err.Error()}
		}
		ms = append(ms, t)
	}
	minMS := ms[0]
	for _, t := range ms {
		minMS = min(minMS, t)
	}
	out := bench.Timing{MedianUS: bench.Median(ms) * 1e3, MinUS: minMS * 1e3, Iters: iters}
	final, err := p.Final(0)
	if err != nil {
		out.Error = err.Error()
		return out
	}
	res := &check.Result{Case: c.Name, Reports: c.Compare(final)}
	out.OK = res.OK()
	if !out.OK {
		out.Error = "outputs outside tolerance"
	}
	return out
}

// measureCeilings times the generated copy and mma_loop kernels.
func measureCeilings(d benchDevice, target arch.Target, w io.Writer) (bench.Ceilings, error) {
	cp := kernels.CopyConfig{Rows: 1 << 19} // 512 MB each way
	cc, err := check.Copy(cp, target, 1)
	if err != nil {
		return bench.Ceilings{}, err
	}
	ct := timeCase(d, cc, 3, 20, l2Flush{})
	if ct.MedianUS == 0 {
		return bench.Ceilings{}, fmt.Errorf("copy: %s", ct.Error)
	}
	if !ct.OK {
		fmt.Fprintf(w, "warning: copy: %s\n", ct.Error)
	}
	mm := kernels.MMALoopConfig{CTAs: 2 * d.SMs(), Iters: 8192}
	mc, err := check.MMALoop(mm, target, 1)
	if err != nil {
		return bench.Ceilings{}, err
	}
	mt := timeCase(d, mc, 3, 20, l2Flush{})
	if mt.MedianUS == 0 {
		return bench.Ceilings{}, fmt.Errorf("mma_loop: %s", mt.Error)
	}
	if !mt.OK {
		fmt.Fprintf(w, "warning: mma_loop: %s\n", mt.Error)
	}
	c := bench.Ceilings{BytesPerSec: float64(cp.Bytes()) / (ct.MedianUS * 1e-6), FlopsPerSec: mm.Flops() / (mt.MedianUS * 1e-6), Source: "measured"}
	fmt.Fprintf(w, "ceilings: copy %.2f TB/s (%.1f us for %d MB), mma_loop %.0f TFLOP/s (%.1f us)\n",
		c.BytesPerSec/1e12, ct.MedianUS, cp.Bytes()>>20, c.FlopsPerSec/1e12, mt.MedianUS)
	return c, nil
}

// ctaReservedShared is the shared memory the CUDA driver reserves for each resident
// CTA on sm_80 and later.
const ctaReservedShared = 1024

// residentCTAs is how many CTAs of k one SM of t holds by its shared memory and
// threads.
func residentCTAs(t arch.Target, k *ptx.Kernel) int {
	n := t.MaxThreadsPerSM / max(k.Block, 1)
	if k.SharedBytes > 0 {
		n = min(n, t.SharedPerSM/(k.SharedBytes+ctaReservedShared))
	}
	return max(n, 1)
}

// plannedResidency pads the dynamic shared memory of c's kernels so that an SM of dev
// holds no more of their CTAs than an SM of the target whose limits they were planned
// under (c.Compiled.Target): the sm_120 plan then runs on the H200 at sm_120's CTAs
// per SM. Registers need no pad: both have 64K per SM, and the kernel's are the same
// on both.
func plannedResidency(c *check.Case, dev arch.Target) {
	if c.Compiled.Target.PlannedFor == "" {
		return // planned for this GPU
	}
	for _, k := range c.Compiled.Kernels {
		pad := min(dev.MaxSharedPerBlock, dev.SharedPerSM/residentCTAs(c.Compiled.Target, k)-ctaReservedShared)
		k.SharedBytes = max(k.SharedBytes, pad)
	}
}

// plainLaunch launches c's kernels without programmatic dependent launch (they
// still run griddepcontrol.wait, a no-op in a plain launch).
func plainLaunch(c *check.Case) {
	for _, k := range c.Compiled.Kernels {
		k.Programmatic = false
	}
}
