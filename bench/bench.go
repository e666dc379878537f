// Package bench describes and reports the decode benchmark: the shape list,
// the bytes and FLOPs each shape must move, the roofline floor under measured
// ceilings, and the report (aligned table, JSON, SVG roofline). Timing itself
// needs a GPU and lives in the cuda build (gpu.go, ptxgen-gpu bench).
package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"sort"
	"strings"

	"github.com/ptxgen/ptxgen/internal/strictjson"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/mla"
)

// Shape is one benchmarked mla_decode configuration. All candidates are valid
// (len = K, no -1; check.MLABench), so the work is exactly what the cost counts.
type Shape struct {
	Name   string          `json:"name"`
	T      int             `json:"T"`
	H      int             `json:"H"`
	K0     int             `json:"K0"`
	K1     int             `json:"K1"`
	Page   int             `json:"page"`
	Cache  mla.CacheFormat `json:"cache"`
	Sink   bool            `json:"sink"`
	Nope   int             `json:"nope"`
	Rope   int             `json:"rope"`
	Target string          `json:"target,omitempty"`
}

// Shapes is the benchmark list (issues 8, 13 and 20): fp8ds cache, page 64, sink
// on, K0 = 128 + K1 = 512: H = 64 at T in {1, 8, 32, 64, 128, 256}, H = 16 and 8 at
// T in {1, 8, 64, 256}, H = 32 at T in {64, 256}, H = 128 at T in {8, 64, 256};
// K1 = 2048 at T = 64 for H = 64 and 128; H = 16 with K1 = 1024 and 1152 (the
// top-k widths of V4-Pro and V4.1) at T in {64, 256}; and one bf16-cache shape.
func Shapes() []Shape {
	var s []Shape
	fp8 := func(h, t, k1 int) Shape {
		return Shape{T: t, H: h, K0: 128, K1: k1, Page: 64, Cache: mla.CacheFP8DS, Sink: true, Nope: 448, Rope: 64}
	}
	for _, t := range []int{1, 8, 32, 64, 128, 256} {
		s = append(s, fp8(64, t, 512))
	}
	for _, h := range []int{16, 8} {
		for _, t := range []int{1, 8, 64, 256} {
			s = append(s, fp8(h, t, 512))
		}
	}
	for _, t := range []int{64, 256} {
		s = append(s, fp8(32, t, 512))
	}
	for _, t := range []int{8, 64, 256} {
		s = append(s, fp8(128, t, 512))
	}
	bf16 := fp8(64, 64, 512)
	bf16.Cache = mla.CacheBF16
	s = append(s, fp8(64, 64, 2048), fp8(128, 64, 2048))
	for _, k1 := range []int{1024, 1152} {
		for _, t := range []int{64, 256} {
			s = append(s, fp8(16, t, k1))
		}
	}
	s = append(s, bf16)
	for i := range s {
		s[i].Name = s[i].defaultName()
	}
	return s
}

// ParseShapeName is the shape a name of the list's form spells, "H<heads>_T<rows>_K<k0>+<k1>"
// with "_bf16" after it for the bf16 cache: fp8ds (or bf16), pages of 64, sink, every
// candidate valid, as the listed shapes. K1 0 is one candidate list of K0 (a shape the
// list does not have). The configuration must be one the generator takes.
func ParseShapeName(name string) (Shape, error) {
	base, cache := name, mla.CacheFP8DS
	if b, ok := strings.CutSuffix(name, "_"+string(mla.CacheBF16)); ok {
		base, cache = b, mla.CacheBF16
	}
	var h, t, k0, k1 int
	var rest string
	n, _ := fmt.Sscanf(base, "H%d_T%d_K%d+%d%s", &h, &t, &k0, &k1, &rest)
	if n != 4 || fmt.Sprintf("H%d_T%d_K%d+%d", h, t, k0, k1) != base {
		return Shape{}, fmt.Errorf("shape %q: want H<heads>_T<rows>_K<k0>+<k1>, optionally followed by _bf16 (e.g. H16_T64_K4096+0)", name)
	}
	if k0 < 1 {
		return Shape{}, fmt.Errorf("shape %q: K0 %d, want at least 1 (K1 0 means one candidate list)", name, k0)
	}
	s := Shape{T: t, H: h, K0: k0, K1: k1, Page: 64, Cache: cache, Sink: true, Nope: 448, Rope: 64}
	if err := s.Config().Validate(); err != nil {
		return Shape{}, fmt.Errorf("shape %q: %v", name, err)
	}
	s.Name = s.defaultName()
	return s, nil
}

func (s Shape) defaultName() string {
	n := fmt.Sprintf("H%d_T%d_K%d+%d", s.H, s.T, s.K0, s.K1)
	if s.Cache != mla.CacheFP8DS {
		n += "_" + string(s.Cache)
	}
	return n
}

// Config is the kernel configuration of the shape (split and head block chosen
// by the generator).
func (s Shape) Config() kernels.MLAConfig {
	c := kernels.MLAConfig{Shape: mla.Shape{T: s.T, H: s.H, Nope: s.Nope, Rope: s.Rope, Cache: s.Cache, Sink: s.Sink, Segments: []mla.Segment{{K: s.K0, PageSize: s.Page, HasLen: true}}}}
	if s.K1 > 0 {
		c.Segments = append(c.Segments, mla.Segment{K: s.K1, PageSize: s.Page, HasLen: true})
	}
	return c
}

// Cost is what one call must move and compute at the least.
type Cost struct {
	Bytes float64 `json:"bytes"` // valid candidates x bytes per token, plus q, out and lse
	Flops float64 `json:"flops"` // 2 H candidates (D + D) per row: Q·K and P·V
}

// CostOf counts a shape's floor work with every candidate valid.
func CostOf(s Shape) Cost {
	d := float64(s.Nope + s.Rope)
	cand := float64(s.K0 + s.K1)
	token := 584.0
	if s.Cache == mla.CacheBF16 {
		token = 2 * d
	}
	rows := float64(s.T)
	th := rows * float64(s.H)
	return Cost{
		Bytes: rows*cand*token + th*d*2 /* q */ + th*d*2 /* out */ + th*4, /* lse */
		Flops: rows * 2 * float64(s.H) * cand * (d + d),
	}
}

// Ceilings are the rates the floors divide by.
type Ceilings struct {
	BytesPerSec float64 `json:"bytes_per_sec"`
	FlopsPerSec float64 `json:"flops_per_sec"`
	Source      string  `json:"source"` // "measured" (by generated kernels) or "given"
}

// NotesCeilings are the H200 ceilings measured in shared/notes (copy 4.3 TB/s, an
// mma.sync loop 636 TFLOP/s).
var NotesCeilings = Ceilings{BytesPerSec: 4.3e12, FlopsPerSec: 636e12, Source: "notes"}

// Floor is the roofline lower bound of a call in seconds.
func (c Cost) Floor(ce Ceilings) float64 {
	return math.Max(c.Bytes/ce.BytesPerSec, c.Flops/ce.FlopsPerSec)
}

// Timing is the measured time of one implementation on one shape.
type Timing struct {
	MedianUS float64 `json:"median_us"`
	MinUS    float64 `json:"min_us"`
	Iters    int     `json:"iters"`
	OK       bool    `json:"ok"`              // outputs within the spec's tolerance
	Error    string  `json:"error,omitempty"` // why it did not run
}

// Result is one shape's row of the report.
type Result struct {
	Shape Shape `json:"shape"`
	Cost  Cost  `json:"cost"`
	// PoolBytes is the size of the KV caches the rows gather from (every segment).
	PoolBytes int64  `json:"pool_bytes"`
	Plan      string `json:"plan"` // grid, split, head block: what the generator chose
	PTXGen    Timing `json:"ptxgen"`
	// SM120Plan is the kernel planned under sm_120's limits, run on this GPU
	// (-plan-target sm_120); PlanSM120 its plan.
	SM120Plan *Timing `json:"sm120_plan,omitempty"`
	PlanSM120 string  `json:"plan_sm120,omitempty"`
	// BF16P is the same kernel generated with -precision bf16p (P as one bf16
	// term, FlashMLA's arithmetic), on the same inputs, held to bf16p's tolerance.
	BF16P    *Timing `json:"bf16p,omitempty"`
	FlashMLA *Timing `json:"flashmla,omitempty"`
	Triton   *Timing `json:"triton,omitempty"`
	// Gather is the gather ceiling (kernels.Gather, generated by ptxgen): the
	// shape's records read through the same indices and summed, nothing else, in
	// the same run on the same inputs. ptxgen's time over it is how far the decode
	// is from the limit its gathers set.
	Gather *Timing `json:"gather,omitempty"`
}

// OfGather is ptxgen's time as a multiple of the gather ceiling's (0 when either
// is missing).
func (x Result) OfGather() float64 {
	if x.PTXGen.Error != "" || x.PTXGen.MedianUS <= 0 || !timed(x.Gather) {
		return 0
	}
	return x.PTXGen.MedianUS / x.Gather.MedianUS
}

// Report is a whole benchmark run.
type Report struct {
	GPU      string   `json:"gpu"`
	Driver   string   `json:"driver"`
	Target   string   `json:"target"`
	Date     string   `json:"date"`
	Command  string   `json:"command"`
	Ceilings Ceilings `json:"ceilings"`
	// Reference ceilings, for comparison with the measured ones.
	NotesCeilings Ceilings `json:"notes_ceilings"`
	L2Flush       bool     `json:"l2_flush"`
	// L2FlushClean: the flush's write was read back (bench -flush-clean), so each
	// timed call found L2 holding clean lines.
	L2FlushClean bool `json:"l2_flush_clean,omitempty"`
	// Pool is where rows find their candidates: "serving" (pages of their own in
	// a pool of at least PoolMinBytes), "sparse" (a random subset of a sequence of
	// pages of their own, in a pool of at least PoolMinBytes) or "small" (one
	// shared pool of about 1 MB).
	Pool         string `json:"pool"`
	PoolMinBytes int64  `json:"pool_min_bytes,omitempty"` // the smallest shape's pool
	// PlannedResidency: the kernels planned under another target's limits (the
	// sm120 plan column) ran at that target's CTAs per SM, their shared memory
	// padded (ptxgen-gpu bench -planned-residency).
	PlannedResidency bool     `json:"planned_residency,omitempty"`
	Results          []Result `json:"results"`
}

// Derived quantities of a result under the report's ceilings.
func (r Report) floorUS(x Result) float64 { return x.Cost.Floor(r.Ceilings) * 1e6 }

// JSON renders the report for tools.
func (r Report) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

// timed reports whether t holds a usable time.
func timed(t *Timing) bool { return t != nil && t.Error == "" && t.MedianUS > 0 }

// us and ratio render a time and ptxgen's time over it ("-" when absent).
func us(t *Timing) string {
	switch {
	case t == nil:
		return "-"
	case !timed(t):
		return "error"
	}
	s := fmt.Sprintf("%.1f", t.MedianUS)
	if !t.OK {
		s += "*" // outputs outside the spec's tolerance
	}
	return s
}

func ratio(p Timing, t *Timing) string {
	if p.Error != "" || p.MedianUS <= 0 || !timed(t) {
		return ""
	}
	return fmt.Sprintf("%.2fx", p.MedianUS/t.MedianUS)
}

// columns renders the report's rows as cells (the header first).
func (r Report) columns() [][]string {
	cols := []string{"shape", "plan", "pool MB", "us", "GB/s", "TFLOP/s", "floor us", "of floor",
		"gather us", "ptxgen/gather", "sm120 plan us", "bf16p us", "FlashMLA us", "ptxgen/FlashMLA", "bf16p/FlashMLA", "Triton us", "ptxgen/Triton", "ok"}
	rows := [][]string{cols}
	for _, x := range r.Results {
		row := []string{x.Shape.Name, x.Plan, fmt.Sprintf("%.0f", float64(x.PoolBytes)/(1<<20))}
		if x.PTXGen.Error != "" && x.PTXGen.MedianUS <= 0 {
			row = append(row, "error: "+x.PTXGen.Error, "", "", "", "")
		} else {
			t := x.PTXGen.MedianUS
			floor := r.floorUS(x)
			row = append(row, fmt.Sprintf("%.1f", t),
				fmt.Sprintf("%.0f", x.Cost.Bytes/t/1e3),
				fmt.Sprintf("%.1f", x.Cost.Flops/t/1e6),
				fmt.Sprintf("%.2f", floor),
				fmt.Sprintf("%.0f%%", 100*floor/t))
		}
		ok := fmt.Sprint(x.PTXGen.OK)
		for _, t := range []*Timing{x.SM120Plan, x.BF16P} {
			if t != nil {
				ok += fmt.Sprintf("/%v", t.OK)
			}
		}
		bf := Timing{}
		if x.BF16P != nil {
			bf = *x.BF16P
		}
		row = append(row, us(x.Gather), ratio(x.PTXGen, x.Gather), us(x.SM120Plan), us(x.BF16P), us(x.FlashMLA), ratio(x.PTXGen, x.FlashMLA), ratio(bf, x.FlashMLA), us(x.Triton), ratio(x.PTXGen, x.Triton), ok)
		rows = append(rows, row)
	}
	return rows
}

// legend explains the report's columns.
func (r Report) legend() string {
	var pool string
	switch r.Pool {
	case "serving":
		pool = "serving pool: every row gathers from pages of its own, distinct across rows and randomly placed"
	case "sparse":
		pool = "sparse pool: every row's candidates are a random subset of the slots of a sequence of pages of its own (as a top-k indexer selects them; the sequence at least 4x the pages they would fill), the sequences distinct across rows and randomly placed"
	default:
		pool = "small pool: every row draws from one shared pool of 2*ceil(K/B)+4 pages per segment (gathers mostly hit L2)"
	}
	if r.PoolMinBytes > 0 && r.Pool != "small" {
		pool += fmt.Sprintf(" in at least %d MiB of cache per shape", r.PoolMinBytes>>20)
	}
	residency := "this GPU's CTAs per SM"
	if r.PlannedResidency {
		residency = "sm_120's CTAs per SM (their shared memory padded)"
	}
	return pool + "; all candidates valid. sm120 plan: sm_120's kernels (planned under its 99 KB, 1536 threads and SM count's limits) run on this GPU at " + residency + ". gather: the gather ceiling, a ptxgen kernel reading the same records through the same indices and summing them (ptxgen/gather: the decode's time as a multiple of it). bf16p: the same kernel with -precision bf16p (P as one bf16 term, as FlashMLA), held to bf16p's tolerance. ok: ptxgen/sm120 plan/bf16p outputs within their tolerance; * after a time: that implementation's outputs miss it."
}

// Table renders an aligned text table: one row per shape.
func (r Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "GPU %s, driver %s, target %s, %s\n", r.GPU, r.Driver, r.Target, r.Date)
	clean := ""
	if r.L2FlushClean {
		clean = " (written, then read back: no dirty lines left)"
	}
	fmt.Fprintf(&b, "ceilings (%s): %.2f TB/s, %.0f TFLOP/s; L2 flushed between timed calls: %v%s\n",
		r.Ceilings.Source, r.Ceilings.BytesPerSec/1e12, r.Ceilings.FlopsPerSec/1e12, r.L2Flush, clean)
	fmt.Fprintf(&b, "%s\n", r.legend())
	rows := r.columns()
	width := make([]int, len(rows[0]))
	for _, row := range rows {
		for i, c := range row {
			width[i] = max(width[i], len(c))
		}
	}
	for _, row := range rows {
		for i, c := range row {
			if i > 0 {
				b.WriteString("  ")
			}
			if i <= 1 {
				fmt.Fprintf(&b, "%-*s", width[i], c)
			} else {
				fmt.Fprintf(&b, "%*s", width[i], c)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

// Markdown renders the table for docs/perf.md.
func (r Report) Markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s, driver %s, target %s, %s. %s\n\n", r.GPU, r.Driver, r.Target, r.Date, r.legend())
	for i, row := range r.columns() {
		b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		if i == 0 {
			b.WriteString(strings.Repeat("|---", len(row)) + "|\n")
		}
	}
	return b.String()
}

// Point styles of the plots, one per implementation; the gather ceiling last, in
// the bars only (on the roofline its point would count the decode's FLOPs).
var impls = []struct{ name, color string }{
	{"ptxgen", "#1f77b4"}, {"ptxgen, sm_120 plan", "#9ecae1"}, {"FlashMLA", "#2ca02c"}, {"Triton baseline", "#d62728"},
	{"gather ceiling", "#7f7f7f"},
}

// gatherImpl is the gather ceiling's index in impls and times.
const gatherImpl = 4

// times returns a result's timings in the order of impls (nil where absent or failed).
func (x Result) times() []*Timing {
	p := x.PTXGen
	ts := []*Timing{&p, x.SM120Plan, x.FlashMLA, x.Triton, x.Gather}
	for i, t := range ts {
		if !timed(t) {
			ts[i] = nil
		}
	}
	return ts
}

// marker draws implementation i's point at (x, y).
func marker(b *strings.Builder, i int, x, y float64) {
	c := impls[i].color
	switch i {
	case 0:
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`+"\n", x, y, c)
	case 1:
		fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="4" fill="white" stroke="%s" stroke-width="2"/>`+"\n", x, y, c)
	case 2:
		fmt.Fprintf(b, `<polygon points="%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f" fill="%s"/>`+"\n", x, y-5, x+5, y, x, y+5, x-5, y, c)
	default:
		fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="8" height="8" fill="%s"/>`+"\n", x-4, y-4, c)
	}
}

// SVG renders a roofline plot: achieved TFLOP/s against arithmetic intensity
// (FLOP per byte), both on log scales, under the bandwidth and mma roofs; one
// point per shape and implementation, ptxgen's labelled. Labels that would
// overlap are moved down or up until they do not.
func (r Report) SVG() string {
	const W, H, left, right, top, bottom = 980.0, 600.0, 70.0, 230.0, 30.0, 60.0
	type pt struct {
		x, y  float64
		label string
		impl  int
	}
	var pts []pt
	for _, x := range r.Results {
		ai := x.Cost.Flops / x.Cost.Bytes
		for i, t := range x.times() {
			if t != nil && i != gatherImpl {
				label := ""
				if i == 0 {
					label = x.Shape.Name
				}
				pts = append(pts, pt{ai, x.Cost.Flops / (t.MedianUS * 1e-6), label, i})
			}
		}
	}
	peak, bw := r.Ceilings.FlopsPerSec, r.Ceilings.BytesPerSec
	xmin, xmax := 10.0, 1000.0
	ymin, ymax := 1e11, peak*2
	for _, p := range pts {
		xmin, xmax = math.Min(xmin, p.x/2), math.Max(xmax, p.x*2)
		ymin = math.Min(ymin, p.y/2)
	}
	lx := func(v float64) float64 {
		return left + (math.Log10(v)-math.Log10(xmin))/(math.Log10(xmax)-math.Log10(xmin))*(W-left-right)
	}
	ly := func(v float64) float64 {
		return H - bottom - (math.Log10(v)-math.Log10(ymin))/(math.Log10(ymax)-math.Log10(ymin))*(H-top-bottom)
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="14">mla_decode roofline on %s (%s ceilings: %.2f TB/s, %.0f TFLOP/s), %s pool</text>`+"\n", left, esc(r.GPU), r.Ceilings.Source, bw/1e12, peak/1e12, esc(r.Pool))
	// Axes with decade ticks.
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, H-bottom, W-right, H-bottom)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, top, left, H-bottom)
	for e := math.Ceil(math.Log10(xmin)); e <= math.Log10(xmax); e++ {
		v := math.Pow(10, e)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%g</text>`+"\n", lx(v), H-bottom+16, v)
	}
	for e := math.Ceil(math.Log10(ymin)); e <= math.Log10(ymax); e++ {
		v := math.Pow(10, e)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%g</text>`+"\n", left-4, ly(v)+4, v/1e12)
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">arithmetic intensity (FLOP per byte)</text>`+"\n", (left+W-right)/2, H-18)
	fmt.Fprintf(&b, `<text x="16" y="%.1f" transform="rotate(-90 16 %.1f)" text-anchor="middle">TFLOP/s</text>`+"\n", (top+H-bottom)/2, (top+H-bottom)/2)
	// Roofs: bandwidth slope up to the ridge, then the mma ceiling.
	ridge := peak / bw
	x0 := math.Max(xmin, ymin/bw)
	fmt.Fprintf(&b, `<polyline fill="none" stroke="#888" stroke-width="2" points="%.1f,%.1f %.1f,%.1f %.1f,%.1f"/>`+"\n",
		lx(x0), ly(bw*x0), lx(ridge), ly(peak), lx(xmax), ly(peak))
	// Points behind, labels on top; labels placed greedily from the top of the
	// plot down, each nudged until its box clears every label placed before.
	type box struct{ x0, x1, y float64 }
	var placed []box
	var labels []pt
	// Baselines first, ptxgen last, so coinciding points leave ptxgen's visible.
	for i := len(impls) - 1; i >= 0; i-- {
		for _, p := range pts {
			if p.impl == i {
				marker(&b, p.impl, lx(p.x), ly(p.y))
			}
		}
	}
	for _, p := range pts {
		if p.label != "" {
			labels = append(labels, p)
		}
	}
	sort.SliceStable(labels, func(i, j int) bool { return labels[i].y > labels[j].y })
	const lh = 12.0
	for _, p := range labels {
		x := lx(p.x) + 7
		w := 6.8 * float64(len(p.label))
		y0 := ly(p.y) + 4
		y := y0
		for k := 1; ; k++ {
			clear := true
			for _, q := range placed {
				if x < q.x1 && q.x0 < x+w && math.Abs(y-q.y) < lh {
					clear = false
					break
				}
			}
			if clear || k > 40 {
				break
			}
			step := float64((k+1)/2) * lh // down, up, further down, ...
			if k%2 == 0 {
				step = -step
			}
			y = y0 + step
		}
		placed = append(placed, box{x, x + w, y})
		if y != y0 {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#bbb"/>`+"\n", lx(p.x)+3, ly(p.y), x, y-4)
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", x, y, esc(p.label))
	}
	for i, im := range impls[:gatherImpl] {
		y := 40 + 16*float64(i)
		marker(&b, i, W-right+24, y)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", W-right+34, y+4, im.name)
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// BarsSVG renders µs per shape, one horizontal bar per implementation (ptxgen,
// ptxgen's sm_120 plan, FlashMLA, Triton, the gather ceiling), each shape's bars scaled to its
// slowest, every bar labelled with its time, and ptxgen/FlashMLA written beside
// the shape's name: the plot to read at a glance.
func (r Report) BarsSVG() string {
	const W, left, right, barH, gap, top = 820.0, 190.0, 70.0, 11.0, 14.0, 54.0
	rows := r.Results
	group := func(x Result) int {
		n := 0
		for _, t := range x.times() {
			if t != nil {
				n++
			}
		}
		return max(n, 1)
	}
	H := top + 30
	for _, x := range rows {
		H += float64(group(x))*barH + gap
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="10" y="18" font-size="14">mla_decode on %s, %s pool: µs per call (shorter is faster; bars scaled per shape)</text>`+"\n", esc(r.GPU), esc(r.Pool))
	for i, im := range impls {
		x := 10 + 145*float64(i)
		fmt.Fprintf(&b, `<rect x="%.1f" y="28" width="12" height="10" fill="%s"/><text x="%.1f" y="37">%s</text>`+"\n", x, im.color, x+16, im.name)
	}
	y := top
	for _, x := range rows {
		ts := x.times()
		var worst float64
		for _, t := range ts {
			if t != nil {
				worst = math.Max(worst, t.MedianUS)
			}
		}
		gh := float64(group(x)) * barH
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" font-weight="bold">%s</text>`+"\n", left-8, y+gh/2-1, esc(x.Shape.Name))
		if f := ratio(x.PTXGen, x.FlashMLA); f != "" {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end" fill="#2ca02c">ptxgen/FlashMLA %s</text>`+"\n", left-8, y+gh/2+11, f)
		}
		if worst == 0 {
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">no time</text>`+"\n", left, y+barH)
		}
		yy := y
		for i, t := range ts {
			if t == nil {
				continue
			}
			w := (W - left - right) * t.MedianUS / worst
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"/>`+"\n", left, yy+1, w, barH-2, impls[i].color)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10">%s</text>`+"\n", left+w+4, yy+barH-2, us(t))
			yy += barH
		}
		fmt.Fprintf(&b, `<line x1="10" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#eee"/>`+"\n", y+gh+gap/2, W-10, y+gh+gap/2)
		y += gh + gap
	}
	fmt.Fprintf(&b, `<text x="10" y="%.1f" font-size="10">* that implementation's outputs miss the spec's tolerance. Missing bar: not run or failed (see the report).</text>`+"\n", y+8)
	b.WriteString("</svg>\n")
	return b.String()
}

func esc(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// Median returns the median of xs (which it sorts).
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	sort.Float64s(xs)
	n := len(xs)
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// TritonRecord is one record of bench/triton_seed.py's JSON output.
type TritonRecord struct {
	Name     *string `json:"name"` // null in the record of a run that failed before any folder
	MedianUS float64 `json:"median_us"`
	MinUS    float64 `json:"min_us"`
	Iters    int     `json:"iters"`
	OK       bool    `json:"ok"`
	Error    *string `json:"error"` // null when the folder ran
}

// ParseTriton reads triton_seed.py's results (one record per folder, with more keys
// than the report uses), strictly: strictjson.DecodeSubset.
func ParseTriton(b []byte) ([]TritonRecord, error) {
	var recs []TritonRecord
	err := strictjson.DecodeSubset(b, &recs)
	return recs, err
}

// MergeTriton attaches the Triton baseline's timings (matched by shape name).
func (r *Report) MergeTriton(recs []TritonRecord) {
	by := map[string]TritonRecord{}
	for _, t := range recs {
		if t.Name != nil {
			by[*t.Name] = t
		}
	}
	for i, x := range r.Results {
		if t, ok := by[x.Shape.Name]; ok {
			r.Results[i].Triton = &Timing{MedianUS: t.MedianUS, MinUS: t.MinUS, Iters: t.Iters, OK: t.OK}
			if t.Error != nil {
				r.Results[i].Triton.Error = *t.Error
			}
		}
	}
}

// FlashMLAResults is the part of ../shared/anchors/flashmla/vs.py's JSON output
// the report uses: one record per vector folder (named like the shape).
type FlashMLAResults struct {
	Results []struct {
		Folder   string   `json:"folder"`
		Status   string   `json:"status"` // ok, fail (check missed), skipped, error, bad-vector
		Reason   string   `json:"reason"`
		USEvents *float64 `json:"us_events"`
		Check    *struct {
			OK   bool `json:"ok"`
			Over int  `json:"over"`
		} `json:"check"`
	} `json:"results"`
}

// nonFinite matches the bare NaN and Infinity tokens Python's json module writes
// (never inside a string: they follow a colon, bracket or comma directly).
var nonFinite = regexp.MustCompile(`([:\[,]\s*)(-?Infinity|NaN)\b`)

// ParseFlashMLA reads vs.py's JSON output (with more keys than the report uses),
// strictly (strictjson.DecodeSubset); its non-finite numbers read as null, which
// only the optional numbers take.
func ParseFlashMLA(b []byte) (FlashMLAResults, error) {
	var f FlashMLAResults
	err := strictjson.DecodeSubset(nonFinite.ReplaceAll(b, []byte("${1}null")), &f)
	return f, err
}

// MergeFlashMLA attaches FlashMLA's timings (matched by folder = shape name).
func (r *Report) MergeFlashMLA(f FlashMLAResults) {
	for _, x := range f.Results {
		t := &Timing{OK: x.Status == "ok"}
		if x.USEvents != nil {
			t.MedianUS = *x.USEvents
		}
		switch {
		case x.Status == "fail" && x.Check != nil:
			t.Error = ""
			if t.MedianUS <= 0 {
				t.Error = "no time"
			}
		case x.Status != "ok":
			t.Error = x.Status
			if x.Reason != "" {
				t.Error += ": " + x.Reason
			}
		}
		for i := range r.Results {
			if r.Results[i].Shape.Name == x.Folder {
				r.Results[i].FlashMLA = t
			}
		}
	}
}
