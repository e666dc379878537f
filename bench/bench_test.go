package bench

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
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
	if len(s) != 14 {
		t.Fatalf("%d shapes, want 14 (12 + K1=2048 + bf16)", len(s))
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
}

func TestReportRenders(t *testing.T) {
	r := Report{GPU: "NVIDIA H200", Driver: "580", Target: "sm_90", Date: "2026-11-29", Ceilings: NotesCeilings}
	for i, s := range Shapes()[:3] {
		x := Result{Shape: s, Cost: CostOf(s), Plan: "grid 4x1x10", PTXGen: Timing{MedianUS: 10 + float64(i), OK: true}}
		r.Results = append(r.Results, x)
	}
	r.MergeTriton([]TritonRecord{{Name: r.Results[0].Shape.Name, MedianUS: 40, OK: true}})
	tab := r.Table()
	if !strings.Contains(tab, "0.25x") || !strings.Contains(tab, "H64_T1_K128+512") {
		t.Errorf("table:\n%s", tab)
	}
	lines := strings.Split(strings.TrimSpace(tab), "\n")
	if len(lines) != 2+1+3 {
		t.Errorf("table has %d lines", len(lines))
	}
	svg := r.SVG()
	if !strings.HasPrefix(svg, "<svg") || strings.Count(svg, "<circle") != 3+1 || strings.Count(svg, "<rect") < 2 {
		t.Errorf("svg:\n%s", svg)
	}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil || len(back.Results) != 3 || back.Results[0].Triton == nil {
		t.Errorf("json round trip: %v", err)
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
