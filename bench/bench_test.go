package bench

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/internal/strictjson"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/target"
)

// TestFloorOfTheIssue: the issue quotes a floor of about 7.7 us for H=64, T=64,
// K1=512 (K0=128) on the H200 ceilings; the cost model must agree.
func TestFloorOfTheIssue(t *testing.T) {
	var s Shape
	for _, x := range Shapes() {
		if x.H == 64 && x.T == 64 && x.K1 == 512 && x.Cache == "fp8ds" {
			s = x
		}
	}
	c := CostOf(s)
	// 64 rows x 640 candidates x 584 B + q + out + lse.
	wantBytes := 64.0*640*584 + 64*64*512*2*2 + 64*64*4
	if c.Bytes != wantBytes {
		t.Errorf("bytes = %v, want %v", c.Bytes, wantBytes)
	}
	if want := 64.0 * 2 * 64 * 640 * 1024; c.Flops != want {
		t.Errorf("flops = %v, want %v", c.Flops, want)
	}
	floor := c.Floor(NotesCeilings) * 1e6
	if math.Abs(floor-7.7) > 0.8 {
		t.Errorf("floor = %.2f us, the issue says about 7.7", floor)
	}
}

func TestShapesCoverTheList(t *testing.T) {
	s := Shapes()
	// 6 at H=64, 4 at H=16 and 8, 2 at H=32, 3 at H=128, K1=2048 at H=64 and 128,
	// K1=1024 and 1152 at H=16 (T 64 and 256), bf16.
	if want := 6 + 4 + 4 + 2 + 3 + 2 + 4 + 1; len(s) != want {
		t.Fatalf("%d shapes, want %d", len(s), want)
	}
	names := map[string]bool{}
	for _, x := range s {
		if names[x.Name] {
			t.Errorf("duplicate shape name %s", x.Name)
		}
		names[x.Name] = true
		if err := x.Config().Validate(); err != nil {
			t.Errorf("%s: %v", x.Name, err)
		}
	}
	for _, n := range []string{"H64_T32_K128+512", "H64_T128_K128+512", "H128_T8_K128+512", "H128_T64_K128+512",
		"H128_T256_K128+512", "H128_T64_K128+2048", "H64_T64_K128+2048", "H16_T256_K128+512", "H64_T64_K128+512_bf16",
		"H32_T64_K128+512", "H32_T256_K128+512", "H16_T64_K128+1024", "H16_T256_K128+1024", "H16_T64_K128+1152", "H16_T256_K128+1152"} {
		if !names[n] {
			t.Errorf("no shape %s", n)
		}
	}
}

// sampleReport has three shapes with every implementation's column filled in
// some way: times, a failed check, a skipped folder.
func sampleReport(t *testing.T) Report {
	r := Report{GPU: "NVIDIA H200", Driver: "580", Target: "sm_90", Date: "2026-11-29", Ceilings: NotesCeilings, Pool: "serving", PoolMinBytes: 192 << 20}
	for i, s := range Shapes()[:3] {
		x := Result{Shape: s, Cost: CostOf(s), PoolBytes: 200 << 20, Plan: "grid 4x1x10", PTXGen: Timing{MedianUS: 10 + float64(i), OK: true},
			SM120Plan: &Timing{MedianUS: 20 + float64(i), OK: true}}
		if i < 2 {
			x.Gather = &Timing{MedianUS: 4 + float64(i), OK: true} // ptxgen/gather 2.50x, 2.20x
			x.BF16P = &Timing{MedianUS: 8 + float64(i), OK: i == 0}
		}
		r.Results = append(r.Results, x)
	}
	r.MergeTriton([]TritonRecord{{Name: &r.Results[0].Shape.Name, MedianUS: 40, OK: true}})
	doc := `{"results": [{"folder": "H64_T1_K128+512", "status": "ok", "us_events": 16.0, "check": {"ok": true}},
		{"folder": "H64_T8_K128+512", "status": "fail", "us_events": 18.0, "check": {"ok": false, "over": 3}},
		{"folder": "H64_T32_K128+512", "status": "skipped", "reason": "bf16 cache"}]}`
	f, err := ParseFlashMLA([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	r.MergeFlashMLA(f)
	return r
}

func TestReportRenders(t *testing.T) {
	r := sampleReport(t)
	if fm := r.Results[1].FlashMLA; fm == nil || fm.OK || fm.MedianUS != 18 || fm.Error != "" {
		t.Errorf("a FlashMLA check miss keeps its time and says not ok: %+v", fm)
	}
	if fm := r.Results[2].FlashMLA; fm == nil || fm.Error != "skipped: bf16 cache" {
		t.Errorf("a skipped FlashMLA folder: %+v", fm)
	}
	tab := r.Table()
	// ptxgen/Triton 10/40, ptxgen/FlashMLA 10/16 and 11/18; the check miss is starred.
	for _, want := range []string{"0.25x", "0.62x", "0.61x", "18.0*", "H64_T1_K128+512", "serving pool", "200", "20.0",
		"gather us", "ptxgen/gather", "2.50x", "2.20x", "gather ceiling"} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
	lines := strings.Split(strings.TrimSpace(tab), "\n")
	if len(lines) != 3+1+3 {
		t.Errorf("table has %d lines", len(lines))
	}
	md := r.Markdown()
	if strings.Count(md, "\n|") != 1+1+3 || !strings.Contains(md, "| ptxgen/FlashMLA |") || !strings.Contains(md, "| 4.0 | 2.50x |") {
		t.Errorf("markdown:\n%s", md)
	}
	svg := r.SVG()
	// ptxgen 3, sm120 plan 3 (hollow circles), legend 2 circles.
	if !strings.HasPrefix(svg, "<svg") || strings.Count(svg, "<circle") != 3+3+2 || strings.Count(svg, "<polygon") != 2+1 {
		t.Errorf("svg:\n%s", svg)
	}
	bars := r.BarsSVG()
	// Bars: 3 ptxgen + 3 sm120 + 2 FlashMLA + 1 Triton + 2 gather ceilings, plus the
	// background and 5 legend swatches; the roofline has no gather point.
	if n := strings.Count(bars, "<rect"); n != 11+1+5 {
		t.Errorf("bars svg has %d rects, want 17:\n%s", n, bars)
	}
	if !strings.Contains(bars, "gather ceiling") || strings.Contains(svg, "gather ceiling") || strings.Contains(svg, "#7f7f7f") {
		t.Errorf("the gather ceiling belongs in the bars and not on the roofline")
	}
	if !strings.Contains(bars, "ptxgen/FlashMLA 0.62x") || strings.Contains(bars, "NaN") {
		t.Errorf("bars svg lacks the ratio:\n%s", bars)
	}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := strictjson.Decode(b, &back); err != nil || len(back.Results) != 3 || back.Results[0].Triton == nil ||
		back.Results[0].FlashMLA == nil || back.Results[0].SM120Plan == nil || back.Results[0].PoolBytes != 200<<20 {
		t.Errorf("json round trip: %v", err)
	}
	for _, key := range []string{`"pool_bytes"`, `"sm120_plan"`, `"flashmla"`, `"median_us"`, `"pool": "serving"`, `"gather": {`, `"bf16p": {`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("json lacks %s", key)
		}
	}
	if b := back.Results[0].BF16P; b == nil || b.MedianUS != 8 || !b.OK || back.Results[1].BF16P.OK || back.Results[2].BF16P != nil {
		t.Errorf("json round trip of bf16p: %+v", back.Results[0].BF16P)
	}
	if back.Results[0].Gather == nil || back.Results[0].Gather.MedianUS != 4 || back.Results[2].Gather != nil {
		t.Errorf("json round trip of the gather ceiling: %+v, %+v", back.Results[0].Gather, back.Results[2].Gather)
	}
	if got := back.Results[1].OfGather(); math.Abs(got-11.0/5) > 1e-12 {
		t.Errorf("OfGather = %v, want 2.2", got)
	}
	if got := back.Results[2].OfGather(); got != 0 {
		t.Errorf("OfGather without a gather time = %v, want 0", got)
	}
}

// TestRooflineLabelsDoNotOverlap: shapes with (nearly) the same intensity and
// time, as H64_T256 and H64_T64_K2048 or the H16 pair were, get label boxes that
// do not overlap.
func TestRooflineLabelsDoNotOverlap(t *testing.T) {
	r := Report{GPU: "g", Ceilings: NotesCeilings, Pool: "serving"}
	for _, s := range Shapes() {
		if s.H == 64 || s.H == 16 {
			c := CostOf(s)
			// Every shape at 135 TFLOP/s: points with one intensity coincide.
			r.Results = append(r.Results, Result{Shape: s, Cost: c, PTXGen: Timing{MedianUS: c.Flops / 135e12 * 1e6, OK: true}})
		}
	}
	type lab struct{ x, y float64 }
	var ls []lab
	for _, line := range strings.Split(r.SVG(), "\n") {
		var x, y float64
		var name string
		if n, _ := fmt.Sscanf(line, `<text x="%f" y="%f">%s`, &x, &y, &name); n == 3 && strings.HasPrefix(name, "H") {
			ls = append(ls, lab{x, y})
		}
	}
	if len(ls) != len(r.Results) {
		t.Fatalf("%d labels for %d shapes", len(ls), len(r.Results))
	}
	for i := range ls {
		for j := i + 1; j < len(ls); j++ {
			if math.Abs(ls[i].x-ls[j].x) < 100 && math.Abs(ls[i].y-ls[j].y) < 11.5 {
				t.Errorf("labels %d and %d overlap at (%.0f, %.0f) and (%.0f, %.0f)", i, j, ls[i].x, ls[i].y, ls[j].x, ls[j].y)
			}
		}
	}
}

func TestMedian(t *testing.T) {
	if m := Median([]float64{5, 1, 3}); m != 3 {
		t.Errorf("median = %v", m)
	}
	if m := Median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median = %v", m)
	}
}

// TestParseFlashMLANonFinite: vs.py writes Python's NaN and Infinity tokens; they
// parse (as absent), and strings that spell them stay strings.
func TestParseFlashMLANonFinite(t *testing.T) {
	doc := `{"results": [{"folder": "H8_T1_K128+512", "status": "fail", "reason": "NaN", "us_events": NaN,
		"check": {"ok": false, "over": 2, "max_abs": Infinity, "cos_diff": -Infinity, "rel": [NaN, 1]}}]}`
	f, err := ParseFlashMLA([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	if r := f.Results[0]; r.USEvents != nil || r.Reason != "NaN" || r.Check == nil || r.Check.Over != 2 {
		t.Errorf("parsed %+v", r)
	}
}

// TestShapesRunTheCapacitysCode: the bench generates each shape for a capacity of its
// own rows; a serving engine generates once for many more. The kernels a call runs
// must be the same bytes either way, so the bench times the run-time path.
func TestShapesRunTheCapacitysCode(t *testing.T) {
	for _, s := range Shapes() {
		cfg := s.Config()
		var text [2]string
		var names [2]string
		for i, capacity := range []int{0, 4096} {
			cfg.MaxT = capacity
			call, ch, err := kernels.MLACall(cfg, target.MustLookup("sm_90"))
			if err != nil {
				t.Fatal(err)
			}
			comp, err := lower.CompileProgram(call.Program, call.Sequences(), target.MustLookup("sm_90"))
			if err != nil {
				t.Fatal(err)
			}
			text[i], names[i] = comp.Module.Print(), fmt.Sprint(ch.Kernels, ch.Split)
			if !strings.Contains(text[i], ".entry "+ch.Kernels[0]+"(") {
				t.Fatalf("%s: the call's PTX lacks %s", s.Name, ch.Kernels[0])
			}
		}
		if names[0] != names[1] || text[0] != text[1] {
			t.Errorf("%s: capacity %d runs %s, capacity 4096 runs %s; same PTX: %v", s.Name, s.T, names[0], names[1], text[0] == text[1])
		}
	}
}

// TestParseShapeName: every listed shape's name parses back to that shape, a one-list
// shape outside the list parses, and malformed or impossible names are refused.
func TestParseShapeName(t *testing.T) {
	for _, s := range Shapes() {
		got, err := ParseShapeName(s.Name)
		if err != nil {
			t.Fatalf("%s: %v", s.Name, err)
		}
		if got != s {
			t.Errorf("%s: parsed %+v, want %+v", s.Name, got, s)
		}
	}
	one, err := ParseShapeName("H16_T64_K4096+0")
	if err != nil {
		t.Fatal(err)
	}
	if c := one.Config(); len(c.Segments) != 1 || c.Segments[0].K != 4096 || one.Name != "H16_T64_K4096+0" {
		t.Errorf("H16_T64_K4096+0: %+v, config %+v", one, c)
	}
	for _, bad := range []string{"H16_T64", "H16_T64_K128+512x", "h16_T64_K128+512", "H16_T64_K0+512", "H0_T64_K128+512", "H16_T64_K128+512_f16", "H16_T64_K-5+512"} {
		if _, err := ParseShapeName(bad); err == nil {
			t.Errorf("%s: accepted", bad)
		}
	}
}

// TestLegendNamesThePool: a sparse run says so, with its least pool size.
func TestLegendNamesThePool(t *testing.T) {
	r := sampleReport(t)
	r.Pool = "sparse"
	if tab := r.Table(); !strings.Contains(tab, "sparse pool") || !strings.Contains(tab, "at least 192 MiB") {
		t.Errorf("sparse table:\n%s", tab)
	}
	r.Pool = "small"
	if tab := r.Table(); !strings.Contains(tab, "small pool") || strings.Contains(tab, "at least") {
		t.Errorf("small table:\n%s", tab)
	}
}

// The legend says at whose CTAs per SM the sm120 plan column ran.
func TestLegendNamesTheResidency(t *testing.T) {
	r := sampleReport(t)
	if tab := r.Table(); !strings.Contains(tab, "at this GPU's CTAs per SM") {
		t.Errorf("unpadded table:\n%s", tab)
	}
	r.PlannedResidency = true
	if tab := r.Table(); !strings.Contains(tab, "at sm_120's CTAs per SM") {
		t.Errorf("padded table:\n%s", tab)
	}
}

// TestTableBF16P: the table shows bf16p's time, its ratio to FlashMLA and its
// check, beside exact's.
func TestTableBF16P(t *testing.T) {
	r := sampleReport(t)
	tab := r.Table()
	for _, want := range []string{"bf16p us", "bf16p/FlashMLA", "true/true/true", "true/true/false"} {
		if !strings.Contains(tab, want) {
			t.Errorf("table lacks %q:\n%s", want, tab)
		}
	}
}

// TestParseBaselinesStrict: the baselines' results (vs.py's, triton_seed.py's) are
// read for some of their keys, strictly: a key of another case is not taken for
// one (encoding/json read "Results" as results), a required field is not null, and
// the files the runs wrote (docs/flashmla-h200.json, docs/triton-h200.json, with
// their other keys and "error": null) still parse.
func TestParseBaselinesStrict(t *testing.T) {
	for _, c := range []struct{ doc, want string }{
		{`{"Results": [{"folder": "a", "status": "ok"}]}`, `keys are case-sensitive, did you mean "results"?`},
		{`{"results": [{"folder": "a", "Status": "ok"}]}`, `did you mean "status"?`},
		{`{"results": [{"folder": "a", "status": null}]}`, "results[0].status is null: want a string"},
		{`{"results": [{"folder": "a", "status": "ok", "us_events": "16.0"}]}`, `results[0].us_events is the string "16.0"`},
	} {
		if _, err := ParseFlashMLA([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseFlashMLA(%s) = %v, want %q", c.doc, err, c.want)
		}
	}
	for _, c := range []struct{ doc, want string }{
		{`[{"Name": "H8_T1_K128+512", "median_us": 50, "ok": true}]`, `did you mean "name"?`},
		{`[{"name": "H8_T1_K128+512", "median_us": 50, "ok": null}]`, "[0].ok is null: want true or false"},
		{`[{"name": "H8_T1_K128+512", "median_us": null, "ok": true}]`, "[0].median_us is null: want a number"},
	} {
		if _, err := ParseTriton([]byte(c.doc)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("ParseTriton(%s) = %v, want %q", c.doc, err, c.want)
		}
	}
	b, err := os.ReadFile("../docs/flashmla-h200.json")
	if err != nil {
		t.Fatal(err)
	}
	if f, err := ParseFlashMLA(b); err != nil || len(f.Results) == 0 {
		t.Errorf("docs/flashmla-h200.json: %v (%d results)", err, len(f.Results))
	}
	if b, err = os.ReadFile("../docs/triton-h200.json"); err != nil {
		t.Fatal(err)
	}
	recs, err := ParseTriton(b)
	if err != nil || len(recs) == 0 || recs[0].Name == nil || recs[0].Error != nil || recs[0].MedianUS <= 0 {
		t.Errorf("docs/triton-h200.json: %v (%d records, first %+v)", err, len(recs), recs)
	}
	if recs, err := ParseTriton([]byte(`[{"name": null, "ok": false, "error": "setup: no GPU"}]`)); err != nil || recs[0].Name != nil || *recs[0].Error != "setup: no GPU" {
		t.Errorf("a setup failure's record (no name): %v, %+v", err, recs)
	}
}
