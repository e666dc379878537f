package golden

import (
	"fmt"
	"math"
	"strings"

	"github.com/ptxgen/ptxgen/dtype"
)

// Tolerance is the accuracy demanded of a kernel output against a float64
// reference: each element must satisfy |got-want| <= Abs + Rel*|want|, and
// when MaxCosDist > 0 the whole output must have 1 - cos(got, want) <=
// MaxCosDist (0 means cosine distance is reported, not checked), and when
// MaxRelL2 > 0, ||got-want|| / ||want|| <= MaxRelL2 (the figure FlashMLA reports).
type Tolerance struct {
	Abs        float64
	Rel        float64
	MaxCosDist float64
	MaxRelL2   float64
}

// The spec's thresholds (section 6, FlashMLA's own test thresholds) for the
// bf16-MMA path of the MLA decode. Treat them as constants.
var (
	// MLAOutTolerance applies to out (bf16) against MLADecode's out.
	MLAOutTolerance = Tolerance{Abs: 1e-3, Rel: 2.01 / 128, MaxCosDist: 5e-6}
	// MLALSETolerance applies to lse (f32) against MLADecode's lse.
	MLALSETolerance = Tolerance{Abs: 1e-6, Rel: 8.0 / 65536}
	// MLAOutToleranceBF16P applies to out at -precision bf16p (P as one bf16
	// term, as FlashMLA and FlashInfer do), not the spec's: rounding P to 8 bits
	// moves sum_j p_j v_j by up to 2^-9 sum_j p_j |v_j|, which where the terms
	// cancel puts a few elements past the spec's abs 1e-3 (the shared test
	// vectors need up to 7.6e-3; DESIGN.md, "Precisions"). So abs 2e-2 per
	// element, the spec's rel and cosine distance, and a rel L2 of at most 3e-3
	// over the output (FlashMLA measures about 2e-3; the final bf16 rounding of
	// out alone gives 1.6e-3).
	MLAOutToleranceBF16P = Tolerance{Abs: 2e-2, Rel: 2.01 / 128, MaxCosDist: 5e-6, MaxRelL2: 3e-3}
)

// Real is the element types Compare accepts.
type Real interface {
	float32 | float64 | dtype.BF16
}

// Mismatch is one element outside tolerance.
type Mismatch struct {
	Index []int // multi-dimensional index in the compared shape
	Got   float64
	Want  float64
}

// MaxMismatches is how many mismatches a Report keeps.
const MaxMismatches = 8

// Report is the outcome of one Compare.
type Report struct {
	Name     string
	Shape    []int
	Tol      Tolerance
	N        int     // elements compared
	MaxAbs   float64 // largest |got-want| over elements with finite want
	MaxAbsAt []int
	MaxRel   float64 // largest |got-want|/|want| over elements with finite nonzero want
	MaxRelAt []int
	CosDist  float64 // 1 - cos(got, want) over elements with finite want
	RelL2    float64 // ||got-want|| / ||want|| over elements with finite want
	NaNs     int     // NaNs in got (each is also a mismatch)
	Bad      int     // elements outside tolerance
	// Mismatches holds the first MaxMismatches bad elements, in index order.
	Mismatches []Mismatch
	// Problem is set when the comparison could not be made (length mismatch).
	Problem string
}

// OK reports whether every element is within tolerance and the cosine
// distance within its limit.
func (r Report) OK() bool {
	return r.Problem == "" && r.Bad == 0 && (r.Tol.MaxCosDist <= 0 || r.CosDist <= r.Tol.MaxCosDist) &&
		(r.Tol.MaxRelL2 <= 0 || r.RelL2 <= r.Tol.MaxRelL2)
}

// String renders the report one metric per line, for a CLI or a test log.
func (r Report) String() string {
	var b strings.Builder
	verdict := func(ok bool) string {
		if ok {
			return "ok"
		}
		return "FAIL"
	}
	fmt.Fprintf(&b, "%s: %s, %d elements, shape %v\n", r.Name, verdict(r.OK()), r.N, r.Shape)
	if r.Problem != "" {
		fmt.Fprintf(&b, "  problem       %s\n", r.Problem)
		return b.String()
	}
	fmt.Fprintf(&b, "  max abs err   %.3g at %v\n", r.MaxAbs, r.MaxAbsAt)
	fmt.Fprintf(&b, "  max rel err   %.3g at %v\n", r.MaxRel, r.MaxRelAt)
	if r.Tol.MaxCosDist > 0 {
		fmt.Fprintf(&b, "  cos dist      %.3g (limit %.3g) %s\n", r.CosDist, r.Tol.MaxCosDist, verdict(r.CosDist <= r.Tol.MaxCosDist))
	} else {
		fmt.Fprintf(&b, "  cos dist      %.3g (not checked)\n", r.CosDist)
	}
	if r.Tol.MaxRelL2 > 0 { // only where checked: the spec's reports read as before
		fmt.Fprintf(&b, "  rel L2 err    %.3g (limit %.3g) %s\n", r.RelL2, r.Tol.MaxRelL2, verdict(r.RelL2 <= r.Tol.MaxRelL2))
	}
	fmt.Fprintf(&b, "  outside tol   %d (abs %.3g + rel %.3g) %s\n", r.Bad, r.Tol.Abs, r.Tol.Rel, verdict(r.Bad == 0))
	fmt.Fprintf(&b, "  NaN in got    %d\n", r.NaNs)
	for _, m := range r.Mismatches {
		fmt.Fprintf(&b, "  mismatch      %v got %.9g want %.9g (diff %.3g)\n", m.Index, m.Got, m.Want, m.Got-m.Want)
	}
	return b.String()
}

// Compare checks got against the float64 reference want, laid out
// row-major with the given shape (nil means one dimension). A NaN in got is
// always a mismatch; an infinite want (lse of an empty row) must be matched
// exactly and is left out of the abs/rel/cosine statistics.
func Compare[T Real](name string, got []T, want []float64, shape []int, tol Tolerance) Report {
	if shape == nil {
		shape = []int{len(want)}
	}
	n := 1
	for _, s := range shape {
		n *= s
	}
	if n != len(want) {
		panic(fmt.Sprintf("golden.Compare(%s): shape %v has %d elements, want has %d", name, shape, n, len(want)))
	}
	r := Report{Name: name, Shape: shape, Tol: tol, N: len(want)}
	if len(got) != len(want) {
		r.Problem = fmt.Sprintf("len(got) = %d, want %d", len(got), len(want))
		return r
	}
	// got in chunks as float64: a whole copy would take 8 bytes per element, more
	// than the check's other copies of a large output.
	var chunk []float64
	var dot, gg, ww, dd float64
	for i, w := range want {
		if i%compareChunk == 0 {
			chunk = toF64Into(chunk, got[i:min(i+compareChunk, len(got))])
		}
		v := chunk[i%compareChunk]
		bad := false
		switch {
		case math.IsNaN(v):
			r.NaNs++
			bad = true
		case math.IsInf(w, 0) || math.IsNaN(w):
			bad = v != w
		default:
			d := math.Abs(v - w)
			if d > r.MaxAbs || r.MaxAbsAt == nil {
				r.MaxAbs, r.MaxAbsAt = d, unravel(i, shape)
			}
			if w != 0 && (d/math.Abs(w) > r.MaxRel || r.MaxRelAt == nil) {
				r.MaxRel, r.MaxRelAt = d/math.Abs(w), unravel(i, shape)
			}
			bad = !(d <= tol.Abs+tol.Rel*math.Abs(w)) // an infinite got fails here
			dot += v * w
			dd += (v - w) * (v - w)
			gg += v * v
			ww += w * w
		}
		if bad {
			r.Bad++
			if len(r.Mismatches) < MaxMismatches {
				r.Mismatches = append(r.Mismatches, Mismatch{Index: unravel(i, shape), Got: v, Want: w})
			}
		}
	}
	switch {
	case gg == 0 && ww == 0:
		r.CosDist = 0
	case gg == 0 || ww == 0:
		r.CosDist = 1
	default:
		// Clamp the rounding noise of equal vectors (cos a hair above 1).
		r.CosDist = max(0, 1-dot/(math.Sqrt(gg)*math.Sqrt(ww)))
	}
	if math.IsNaN(r.CosDist) { // an infinite got
		r.CosDist = math.Inf(1)
	}
	switch {
	case dd == 0:
		r.RelL2 = 0
	case ww == 0:
		r.RelL2 = math.Inf(1)
	default:
		r.RelL2 = math.Sqrt(dd / ww)
	}
	if math.IsNaN(r.RelL2) {
		r.RelL2 = math.Inf(1)
	}
	return r
}

// compareChunk is how many elements Compare converts at a time.
const compareChunk = 4096

// toF64Into converts x to float64 in buf (grown as needed; a []float64 is returned
// as is).
func toF64Into[T Real](buf []float64, x []T) []float64 {
	switch v := any(x).(type) {
	case []float64:
		return v
	case []float32:
		buf = buf[:0]
		for _, f := range v {
			buf = append(buf, float64(f))
		}
		return buf
	case []dtype.BF16:
		buf = buf[:0]
		for _, b := range v {
			buf = append(buf, b.F64())
		}
		return buf
	}
	panic("unreachable")
}

// unravel turns a flat row-major index into coordinates.
func unravel(i int, shape []int) []int {
	idx := make([]int, len(shape))
	for k := len(shape) - 1; k >= 0; k-- {
		idx[k] = i % shape[k]
		i /= shape[k]
	}
	return idx
}
