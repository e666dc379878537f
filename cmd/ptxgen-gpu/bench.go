package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ptxgen/ptxgen/bench"
	"github.com/ptxgen/ptxgen/check"
	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/kernels"
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
	// and returns the milliseconds between them. With flushBytes > 0 it first
	// writes that much scratch memory (outside the timed region) to evict L2.
	Time(i int, flushBytes int64) (float64, error)
	// Final copies input set i's buffers back.
	Final(i int) (map[string][]byte, error)
	Close() error
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
	bw, flops := new(float64), new(float64) // finite: NaN or Inf would poison every floor
	kernels.Float32Var(fs, bw, "bw", 0, "bandwidth ceiling in bytes/s (0: measure with the generated copy kernel)")
	kernels.Float32Var(fs, flops, "flops", 0, "mma.sync ceiling in FLOP/s (0: measure with the generated mma_loop kernel)")
	jsonOut := fs.String("json", "", "write the report as JSON to this file")
	svgOut := fs.String("svg", "", "write the SVG roofline plot to this file")
	vectorsOut := fs.String("vectors-out", "", "write each shape's inputs and float64 outputs as a test-vector folder under this directory (for bench/triton_seed.py) and exit")
	triton := fs.String("triton", "", "merge bench/triton_seed.py's JSON output")
	headBlock := fs.Int("head-block", 0, "override the heads per CTA of every shape (16, 32 or 64; 0: the generator's choice)")
	split := fs.Int("split", 0, "override the candidate split of every shape (1..64; 0: the generator's choice)")
	tile := fs.Int("tile", 0, "override the candidates per tile of every shape (32 or 64; 0: the generator's choice)")
	seed := fs.Uint64("seed", 1, "seed of the inputs")
	pdl := fs.Bool("pdl", true, "launch kernels that wait for their predecessor (mla_combine on sm_90+) with programmatic dependent launch; false launches them plainly, for A/B timing")
	if err := kernels.ParseFlags(fs, args); err != nil {
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
	if *headBlock != 0 && *headBlock != 16 && *headBlock != 32 && *headBlock != 64 {
		return &kernels.ConfigError{Flag: "head-block", Value: fmt.Sprint(*headBlock), Want: "0, 16, 32 or 64"}
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
				return &kernels.ConfigError{Flag: "shapes", Value: n, Want: "a name from -list, or all"}
			}
		}
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
	cases := make([]*check.Case, len(picked))
	for i, s := range picked {
		cfg := s.Config()
		cfg.HeadBlock, cfg.Split, cfg.Tile = *headBlock, *split, *tile
		opts := golden.MLAGenOptions{Seed: *seed + uint64(i)}
		if cases[i], err = check.MLA(cfg, target, opts); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		if !*pdl {
			// The kernels still run griddepcontrol.wait, a no-op in a plain launch.
			for _, k := range cases[i].Compiled.Kernels {
				k.Programmatic = false
			}
		}
	}
	if *vectorsOut != "" {
		for i, c := range cases {
			dir := filepath.Join(*vectorsOut, picked[i].Name)
			if err := c.WriteVectors(dir); err != nil {
				return fmt.Errorf("%s: %w", picked[i].Name, err)
			}
			fmt.Fprintf(stdout, "wrote %s\n", dir)
		}
		return nil
	}
	rep := bench.Report{
		GPU: strings.TrimSpace(firstLine(d.Info())), Driver: bd.Driver(), Target: target,
		Date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), Command: "ptxgen-gpu bench " + strings.Join(args, " "),
		NotesCeilings: bench.NotesCeilings, L2Flush: *flushMB > 0,
	}
	flush := int64(*flushMB) << 20
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
		r := bench.Result{Shape: s, Cost: bench.CostOf(s), Plan: plan(cases[i])}
		r.PTXGen = timeCase(bd, cases[i], *warmup, *iters, flush)
		rep.Results = append(rep.Results, r)
		fmt.Fprintf(stdout, "%-24s %s: %.2f us (min %.2f), ok %v %s\n", s.Name, r.Plan, r.PTXGen.MedianUS, r.PTXGen.MinUS, r.PTXGen.OK, r.PTXGen.Error)
	}
	if *triton != "" {
		b, err := os.ReadFile(*triton)
		if err != nil {
			return &usageError{Msg: fmt.Sprintf("-triton %s: %v", *triton, err)}
		}
		var recs []bench.TritonRecord
		if err := json.Unmarshal(b, &recs); err != nil {
			return &usageError{Msg: fmt.Sprintf("-triton %s: %v", *triton, err)}
		}
		rep.MergeTriton(recs)
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
	if *svgOut != "" {
		if err := os.WriteFile(*svgOut, []byte(rep.SVG()), 0o644); err != nil {
			return err
		}
	}
	for _, r := range rep.Results {
		if !r.PTXGen.OK {
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

// plan summarizes what the generator chose for a case.
func plan(c *check.Case) string {
	var p []string
	for _, k := range c.Compiled.Kernels {
		p = append(p, fmt.Sprintf("%s %dx%dx%d/%d %dKB", strings.TrimPrefix(k.Name, "mla_"), k.Grid[0], k.Grid[1], k.Grid[2], k.Block, k.SharedBytes/1024))
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
func timeCase(d benchDevice, c *check.Case, warmup, iters int, flush int64) bench.Timing {
	sets := setsFor(c, d.L2Bytes())
	p, err := d.Prepare(c, sets)
	if err != nil {
		return bench.Timing{Error: err.Error()}
	}
	defer p.Close()
	for i := 0; i < warmup; i++ {
		if _, err := p.Time(i%sets, 0); err != nil {
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
func measureCeilings(d benchDevice, target string, w io.Writer) (bench.Ceilings, error) {
	cp := kernels.CopyConfig{Rows: 1 << 19} // 512 MB each way
	cc, err := check.Copy(cp, target, 1)
	if err != nil {
		return bench.Ceilings{}, err
	}
	ct := timeCase(d, cc, 3, 20, 0)
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
	mt := timeCase(d, mc, 3, 20, 0)
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
