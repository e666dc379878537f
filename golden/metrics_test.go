package golden

import (
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/dtype"
)

func TestCompareCounts(t *testing.T) {
	want := []float64{1, -2, 3, 4, math.Inf(1), 0.5}
	tol := Tolerance{Abs: 0.01, Rel: 0.01}
	// Element 1 is off by just under 0.03 (limit 0.01+0.02 = 0.03: inside);
	// element 2 off by 0.05 (limit 0.04: out); element 3 NaN; element 4 must
	// be +Inf exactly and is finite.
	got := []float32{1, -2.03, 3.05, float32(math.NaN()), 1e30, 0.5}
	r := Compare("x", got, want, []int{2, 3}, tol)
	if r.Bad != 3 || r.NaNs != 1 || r.OK() {
		t.Fatalf("Bad = %d, NaNs = %d, OK = %v, want 3, 1, false\n%s", r.Bad, r.NaNs, r.OK(), r)
	}
	wantIdx := [][]int{{0, 2}, {1, 0}, {1, 1}}
	for i, m := range r.Mismatches {
		if m.Index[0] != wantIdx[i][0] || m.Index[1] != wantIdx[i][1] {
			t.Errorf("mismatch %d at %v, want %v", i, m.Index, wantIdx[i])
		}
	}
	if math.Abs(r.MaxAbs-0.05) > 1e-6 || r.MaxAbsAt[0] != 0 || r.MaxAbsAt[1] != 2 {
		t.Errorf("MaxAbs = %v at %v, want 0.05 at [0 2]", r.MaxAbs, r.MaxAbsAt)
	}
	s := r.String()
	for _, frag := range []string{"x: FAIL", "outside tol   3", "NaN in got    1", "mismatch      [1 0]"} {
		if !strings.Contains(s, frag) {
			t.Errorf("String() lacks %q:\n%s", frag, s)
		}
	}
}

func TestCompareInfAndCos(t *testing.T) {
	want := []float64{math.Inf(1), 2, -3}
	if r := Compare("lse", []float64{math.Inf(1), 2, -3}, want, nil, MLALSETolerance); !r.OK() || r.CosDist != 0 {
		t.Errorf("equal vectors with +Inf: %s", r)
	}
	if r := Compare("lse", []float64{math.Inf(-1), 2, -3}, want, nil, MLALSETolerance); r.OK() {
		t.Errorf("-Inf against +Inf passed: %s", r)
	}
	// Every element within a loose tolerance, but the direction is off: the
	// cosine check alone must fail it.
	w := []float64{1, 1, 1, 1}
	g := []float64{1.1, 0.9, 1.1, 0.9}
	r := Compare("out", g, w, nil, Tolerance{Abs: 0.2, MaxCosDist: 1e-3})
	if r.Bad != 0 || r.OK() || math.Abs(r.CosDist-(1-4/math.Sqrt(4*4.04))) > 1e-12 {
		t.Errorf("cos check: Bad %d OK %v CosDist %v\n%s", r.Bad, r.OK(), r.CosDist, r)
	}
	if r := Compare("bf16", []dtype.BF16{0x3F80}, []float64{1.001}, nil, Tolerance{Rel: 2.01 / 128}); !r.OK() {
		t.Errorf("bf16 1.0 vs 1.001: %s", r)
	}
	if r := Compare("len", []float64{1}, []float64{1, 2}, nil, Tolerance{}); r.OK() || r.Problem == "" {
		t.Errorf("length mismatch passed: %s", r)
	}
}

// TestCompareRelL2: rel L2 is ||got-want|| / ||want|| over the finite wants, and
// MaxRelL2 fails a report above it (and is printed only where checked).
func TestCompareRelL2(t *testing.T) {
	want := []float64{3, 4, math.Inf(1)}
	got := []float64{3, 4.05, math.Inf(1)} // ||d|| = 0.05, ||want|| = 5
	loose := Tolerance{Abs: 1, MaxRelL2: 0.02}
	r := Compare("out", got, want, nil, loose)
	if math.Abs(r.RelL2-0.01) > 1e-12 || !r.OK() || !strings.Contains(r.String(), "rel L2 err    0.01 (limit 0.02) ok") {
		t.Errorf("rel L2 %g, ok %v:\n%s", r.RelL2, r.OK(), r)
	}
	tight := loose
	tight.MaxRelL2 = 0.005
	if r := Compare("out", got, want, nil, tight); r.OK() {
		t.Errorf("rel L2 %g passed a limit of %g", r.RelL2, tight.MaxRelL2)
	}
	if r := Compare("out", got, want, nil, Tolerance{Abs: 1}); !r.OK() || strings.Contains(r.String(), "rel L2") {
		t.Errorf("unchecked rel L2 failed or printed:\n%s", r)
	}
}

// TestCompareCopiesNoOutput: Compare converts got to float64 in chunks; a whole copy
// took 8 bytes per element, more than the check's other copies of a large output.
func TestCompareCopiesNoOutput(t *testing.T) {
	const n = 1 << 20
	got, want := make([]float32, n), make([]float64, n)
	for i := range got {
		got[i] = float32(i%1000) + 0.5
		want[i] = float64(got[i])
	}
	got[n-1] = 7 // one mismatch, found past the first chunks
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	r := Compare("x", got, want, nil, Tolerance{})
	runtime.ReadMemStats(&after)
	if r.Bad != 1 || len(r.Mismatches) != 1 || r.Mismatches[0].Index[0] != n-1 {
		t.Errorf("one mismatch at %d: %s", n-1, r)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 1<<20 {
		t.Errorf("Compare of %d float32 allocated %d bytes, want under 1 MiB (no float64 copy)", n, alloc)
	}
}
