// Package bench describes and reports the decode benchmark: the shape list,
// the bytes and FLOPs each shape must move, the roofline floor under measured
// ceilings, and the report (aligned table, JSON, SVG roofline). Timing itself
// needs a GPU and lives in the cuda build (gpu.go, ptxgen-gpu bench).
package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ptxgen/ptxgen/kernels"
)

// Shape is one benchmarked mla_decode configuration. All candidates are valid
// (len = K, no -1), so the work is exactly what the cost counts.
type Shape struct {
	Name   string `json:"name"`
	T      int    `json:"T"`
	H      int    `json:"H"`
	K0     int    `json:"K0"`
	K1     int    `json:"K1"`
	Page   int    `json:"page"`
	Cache  string `json:"cache"`
	Sink   bool   `json:"sink"`
	Nope   int    `json:"nope"`
	Rope   int    `json:"rope"`
	Target string `json:"target,omitempty"`
}

// Shapes is the list: fp8ds cache, page 64, sink on, H in {64, 16, 8} x
// T in {1, 8, 64, 256} with K0 = 128 + K1 = 512; H = 64, T = 64 with K1 = 2048;
// and one bf16-cache shape.
func Shapes() []Shape {
	var s []Shape
	for _, h := range []int{64, 16, 8} {
		for _, t := range []int{1, 8, 64, 256} {
			s = append(s, Shape{T: t, H: h, K0: 128, K1: 512, Page: 64, Cache: kernels.CacheFP8DS, Sink: true, Nope: 448, Rope: 64})
		}
	}
	s = append(s,
		Shape{T: 64, H: 64, K0: 128, K1: 2048, Page: 64, Cache: kernels.CacheFP8DS, Sink: true, Nope: 448, Rope: 64},
		Shape{T: 64, H: 64, K0: 128, K1: 512, Page: 64, Cache: kernels.CacheBF16, Sink: true, Nope: 448, Rope: 64})
	for i := range s {
		s[i].Name = s[i].defaultName()
	}
	return s
}

func (s Shape) defaultName() string {
	n := fmt.Sprintf("H%d_T%d_K%d+%d", s.H, s.T, s.K0, s.K1)
	if s.Cache != kernels.CacheFP8DS {
		n += "_" + s.Cache
	}
	return n
}

// Config is the kernel configuration of the shape (split and head block chosen
// by the generator).
func (s Shape) Config() kernels.MLAConfig {
	c := kernels.MLAConfig{T: s.T, H: s.H, Nope: s.Nope, Rope: s.Rope, Cache: s.Cache, Sink: s.Sink,
		Segments: []kernels.MLASegment{{K: s.K0, PageSize: s.Page, HasLen: true}}}
	if s.K1 > 0 {
		c.Segments = append(c.Segments, kernels.MLASegment{K: s.K1, PageSize: s.Page, HasLen: true})
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
	if s.Cache == kernels.CacheBF16 {
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
	Shape  Shape   `json:"shape"`
	Cost   Cost    `json:"cost"`
	Plan   string  `json:"plan"` // grid, split, head block: what the generator chose
	PTXGen Timing  `json:"ptxgen"`
	Triton *Timing `json:"triton,omitempty"`
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
	Results       []Result `json:"results"`
}

// Derived quantities of a result under the report's ceilings.
func (r Report) floorUS(x Result) float64 { return x.Cost.Floor(r.Ceilings) * 1e6 }

// JSON renders the report for tools.
func (r Report) JSON() ([]byte, error) { return json.MarshalIndent(r, "", "  ") }

// Table renders an aligned text table: one row per shape.
func (r Report) Table() string {
	var b strings.Builder
	fmt.Fprintf(&b, "GPU %s, driver %s, target %s, %s\n", r.GPU, r.Driver, r.Target, r.Date)
	fmt.Fprintf(&b, "ceilings (%s): %.2f TB/s, %.0f TFLOP/s; L2 flushed between timed calls: %v\n",
		r.Ceilings.Source, r.Ceilings.BytesPerSec/1e12, r.Ceilings.FlopsPerSec/1e12, r.L2Flush)
	cols := []string{"shape", "plan", "us", "GB/s", "TFLOP/s", "floor us", "of floor", "triton us", "ptxgen/triton", "ok"}
	rows := [][]string{cols}
	for _, x := range r.Results {
		row := []string{x.Shape.Name, x.Plan}
		if x.PTXGen.Error != "" {
			row = append(row, "error: "+x.PTXGen.Error, "", "", "", "", "", "", "")
		} else {
			t := x.PTXGen.MedianUS
			floor := r.floorUS(x)
			row = append(row, fmt.Sprintf("%.1f", t),
				fmt.Sprintf("%.0f", x.Cost.Bytes/t/1e3),
				fmt.Sprintf("%.1f", x.Cost.Flops/t/1e6),
				fmt.Sprintf("%.2f", floor),
				fmt.Sprintf("%.0f%%", 100*floor/t))
			if x.Triton != nil && x.Triton.Error == "" && x.Triton.MedianUS > 0 {
				row = append(row, fmt.Sprintf("%.1f", x.Triton.MedianUS), fmt.Sprintf("%.2fx", t/x.Triton.MedianUS))
			} else if x.Triton != nil {
				row = append(row, "error", "")
			} else {
				row = append(row, "-", "")
			}
			row = append(row, fmt.Sprint(x.PTXGen.OK))
		}
		rows = append(rows, row)
	}
	width := make([]int, len(cols))
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

// SVG renders a roofline plot: achieved TFLOP/s against arithmetic intensity
// (FLOP per byte), both on log scales, under the bandwidth and mma roofs; one
// point per shape for ptxgen (circle) and Triton (square), labelled.
func (r Report) SVG() string {
	const W, H, left, right, top, bottom = 900.0, 560.0, 70.0, 200.0, 30.0, 60.0
	type pt struct {
		x, y  float64
		label string
		sq    bool
	}
	var pts []pt
	for _, x := range r.Results {
		ai := x.Cost.Flops / x.Cost.Bytes
		if x.PTXGen.Error == "" && x.PTXGen.MedianUS > 0 {
			pts = append(pts, pt{ai, x.Cost.Flops / (x.PTXGen.MedianUS * 1e-6), x.Shape.Name, false})
		}
		if x.Triton != nil && x.Triton.Error == "" && x.Triton.MedianUS > 0 {
			pts = append(pts, pt{ai, x.Cost.Flops / (x.Triton.MedianUS * 1e-6), "", true})
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
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="14">mla_decode roofline on %s (%s ceilings: %.2f TB/s, %.0f TFLOP/s)</text>`+"\n", left, esc(r.GPU), r.Ceilings.Source, bw/1e12, peak/1e12)
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
	for i, p := range pts {
		if p.sq {
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="8" height="8" fill="#d62728"/>`+"\n", lx(p.x)-4, ly(p.y)-4)
			continue
		}
		fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="#1f77b4"/>`+"\n", lx(p.x), ly(p.y))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", lx(p.x)+6, ly(p.y)+float64(i%3-1)*10, esc(p.label))
	}
	fmt.Fprintf(&b, `<circle cx="%.1f" cy="40" r="4" fill="#1f77b4"/><text x="%.1f" y="44">ptxgen</text>`+"\n", W-right+20, W-right+30)
	fmt.Fprintf(&b, `<rect x="%.1f" y="52" width="8" height="8" fill="#d62728"/><text x="%.1f" y="60">Triton baseline</text>`+"\n", W-right+16, W-right+30)
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
	Name     string  `json:"name"`
	MedianUS float64 `json:"median_us"`
	MinUS    float64 `json:"min_us"`
	Iters    int     `json:"iters"`
	OK       bool    `json:"ok"`
	Error    string  `json:"error"`
}

// MergeTriton attaches the Triton baseline's timings (matched by shape name).
func (r *Report) MergeTriton(recs []TritonRecord) {
	by := map[string]TritonRecord{}
	for _, t := range recs {
		by[t.Name] = t
	}
	for i, x := range r.Results {
		if t, ok := by[x.Shape.Name]; ok {
			r.Results[i].Triton = &Timing{MedianUS: t.MedianUS, MinUS: t.MinUS, Iters: t.Iters, OK: t.OK, Error: t.Error}
		}
	}
}
