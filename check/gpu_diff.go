package check

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/golden"
)

// GPU and emulator outputs differ, for two documented reasons, and Diff bounds by how much.
//
//  1. mma.sync accumulation. The emulator sums each m16n8k16 dot product exactly in float64
//     and rounds once to f32; the tensor cores align the products to the largest exponent,
//     truncate, and normalise in blocks (emu's package doc, ptx.md 3.10), losing up to about
//     one f32 ulp of the largest addend per k16 step. Over a dot of depth K that is at most
//     K/16 such errors against running sums of the output's size: for K = 512, 32 steps of
//     2^-23 give about 4e-6 of the output scale if every error has the same sign (about
//     7e-7 when they add like a random walk).
//  2. ex2.approx.f32 and lg2.approx.f32. The emulator returns the correctly rounded value
//     (or 1 ulp off); the hardware is within 2 ulp for ex2 and within 2^-22 absolute for
//     lg2 in the ranges the kernels use. Softmax weights therefore differ by a few f32 ulps,
//     and lse = m + ln(sum) by about 1e-7 absolute.
//
// The bounds, per output element e (emulator) and g (GPU):
//
//   - f32 outputs: |g - e| <= GPUEmuRel*|e| + GPUEmuScaleRel*S, where S is the RMS of the
//     emulator's finite output (the additive term keeps elements near zero, where a
//     cancelling sum ends, from failing on a difference that is tiny against the sums that
//     made them). 1e-5 and 1.5e-5 are 2 to 4 times the worst case in (1) for the depths
//     the kernels use (gemm K up to 512 in the shape matrix, mla_decode D = 512) and far
//     above (2).
//   - bf16 outputs: the f32 values before the final cvt.rn.bf16.f32 differ as above, so the
//     rounded values are equal except where a bf16 rounding boundary falls between the two
//     f32 values. The probability of that is about |f32 difference| / bf16 ulp, about 1e-6
//     / 2^-8 = 3e-4 per element (a rounded bf16 softmax weight feeding the P·V dot can add
//     one more such flip). So every element must be within one bf16 ulp (of the larger
//     magnitude) or within the f32 bound, and at most GPUEmuBF16Frac of the elements may
//     differ at all: 1%, 30 times the expected rate.
//   - Softmax amplification (mla_decode's out): (1) also applies to the scores q·k, of depth
//     D, and exp2 turns an absolute score error into a relative error of every weight p.
//     The scores' error is at most D/16 ulps of |q||k| (Cauchy-Schwarz bounds every running
//     sum) times the softmax scale, and the max subtracted from them moves by as much, so
//     each p differs by a relative 2 (D/16) 2^-23 scale max|q| max|k| and out = sum p v / l
//     by that times max|v|: an absolute allowance per case (Case.EmuAbs, from the inputs)
//     added to the f32 bound. It matters only where out cancels to far below its scale:
//     one element of 2M at T=64 differed by 7e-6 (the scale's 7e-5) on the H200.
//   - Special values must agree exactly: a NaN on one side only, or an infinity that the
//     other side does not have with the same sign, is a difference beyond any bound.
const (
	GPUEmuRel      = 1e-5
	GPUEmuScaleRel = 1.5e-5
	GPUEmuBF16Frac = 0.01
)

// Diff compares two runs of a case (GPU and emulator) on one output buffer.
type Diff struct {
	Name     string
	Elem     string // "bf16" or "f32"
	N        int    // elements compared
	Differ   int    // elements whose bits differ (NaN against NaN counts as equal)
	MaxAbs   float64
	MaxAbsAt int
	MaxRel   float64 // over elements with a finite nonzero reference (b)
	MaxRelAt int
	MaxULP   int     // bf16 only: largest difference in bf16 ulps (of the larger magnitude)
	Special  int     // NaN or infinity on one side only, or infinities of different sign
	Bad      int     // elements outside the elementwise bound
	Scale    float64 // RMS of b's finite values (S above)
	ExtraAbs float64 // the case's absolute allowance for this buffer (Case.EmuAbs)
	Problem  string
}

// OK reports whether the runs agree within the documented bound.
func (d Diff) OK() bool {
	if d.Problem != "" || d.Special > 0 || d.Bad > 0 {
		return false
	}
	if d.Elem == "bf16" && float64(d.Differ) > GPUEmuBF16Frac*float64(d.N) {
		return false
	}
	return true
}

func (d Diff) String() string {
	if d.Problem != "" {
		return fmt.Sprintf("%s: %s", d.Name, d.Problem)
	}
	verdict := "ok"
	if !d.OK() {
		verdict = "OUTSIDE BOUND"
	}
	s := fmt.Sprintf("%s (%s): %d elements, %d differ (%.3g%%), max abs %.3g at %d, max rel %.3g at %d",
		d.Name, d.Elem, d.N, d.Differ, 100*float64(d.Differ)/math.Max(1, float64(d.N)), d.MaxAbs, d.MaxAbsAt, d.MaxRel, d.MaxRelAt)
	if d.Elem == "bf16" {
		s += fmt.Sprintf(", max %d bf16 ulp", d.MaxULP)
	}
	s += fmt.Sprintf(", special %d, outside bound %d (%s): %s", d.Special, d.Bad, d.Bound(), verdict)
	return s
}

// Bound describes the bound applied.
func (d Diff) Bound() string {
	b := fmt.Sprintf("|d| <= %g|e| + %g*%.3g", GPUEmuRel, GPUEmuScaleRel, d.Scale)
	if d.ExtraAbs > 0 {
		b += fmt.Sprintf(" + %.3g", d.ExtraAbs)
	}
	if d.Elem == "bf16" {
		b = fmt.Sprintf("|d| <= 1 bf16 ulp or %s, differing <= %g%%", b, 100*GPUEmuBF16Frac)
	}
	return b
}

// Outputs lists the case's output buffers with their element types: the buffers some
// kernel writes that are not workspace, sorted by name.
func (c *Case) Outputs() map[string]string {
	ws := map[string]bool{}
	for _, w := range c.Compiled.Workspace {
		ws[w.Name] = true
	}
	out := map[string]string{}
	for _, k := range c.Compiled.Kernels {
		for _, p := range k.Params {
			if p.Kind == "ptr" && p.Written && !ws[p.Name] {
				out[p.Name] = p.Elem
			}
		}
	}
	return out
}

// DiffRuns compares every output of two runs of c: a (the GPU) against b (the emulator).
func DiffRuns(c *Case, a, b map[string][]byte) []Diff {
	outs := c.Outputs()
	var names []string
	for n := range outs {
		names = append(names, n)
	}
	sort.Strings(names)
	var ds []Diff
	for _, n := range names {
		ds = append(ds, diffBuffer(n, outs[n], a[n], b[n], c.EmuAbs[n]))
	}
	return ds
}

// DiffsOK reports whether every diff is within its bound.
func DiffsOK(ds []Diff) bool {
	for _, d := range ds {
		if !d.OK() {
			return false
		}
	}
	return len(ds) > 0
}

// FormatDiffs renders diffs one per line.
func FormatDiffs(ds []Diff) string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString(d.String())
		b.WriteString("\n")
	}
	return b.String()
}

func diffBuffer(name, elem string, a, b []byte, extraAbs float64) Diff {
	d := Diff{Name: name, Elem: elem, ExtraAbs: extraAbs}
	if len(a) != len(b) {
		d.Problem = fmt.Sprintf("sizes differ: %d and %d bytes", len(a), len(b))
		return d
	}
	var ga, gb []float64
	var ua, ub []uint16
	switch elem {
	case "f32":
		for _, v := range f32s(a) {
			ga = append(ga, float64(v))
		}
		for _, v := range f32s(b) {
			gb = append(gb, float64(v))
		}
	case "bf16":
		ua, ub = u16s(a), u16s(b)
		for i := range ua {
			ga = append(ga, dtype.BF16(ua[i]).F64())
			gb = append(gb, dtype.BF16(ub[i]).F64())
		}
	default:
		d.Problem = fmt.Sprintf("no GPU-emulator bound for element type %q", elem)
		return d
	}
	d.N = len(ga)
	var ss float64
	var nf int
	for _, v := range gb {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			ss += v * v
			nf++
		}
	}
	if nf > 0 {
		d.Scale = math.Sqrt(ss / float64(nf))
	}
	for i := range ga {
		x, y := ga[i], gb[i]
		xn, yn := math.IsNaN(x), math.IsNaN(y)
		if xn || yn {
			if xn != yn {
				d.Special++
				d.Differ++
			}
			continue
		}
		if math.IsInf(x, 0) || math.IsInf(y, 0) {
			if x != y {
				d.Special++
				d.Differ++
			}
			continue
		}
		if x == y {
			continue
		}
		d.Differ++
		diff := math.Abs(x - y)
		if diff > d.MaxAbs {
			d.MaxAbs, d.MaxAbsAt = diff, i
		}
		if y != 0 {
			if r := diff / math.Abs(y); r > d.MaxRel {
				d.MaxRel, d.MaxRelAt = r, i
			}
		}
		within := diff <= GPUEmuRel*math.Abs(y)+GPUEmuScaleRel*d.Scale+d.ExtraAbs
		if elem == "bf16" {
			u := bf16ULPs(x, y)
			d.MaxULP = max(d.MaxULP, u)
			within = within || u <= 1
		}
		if !within {
			d.Bad++
		}
	}
	return d
}

// bf16ULPs is |x - y| in units of the bf16 ulp at the larger of the two magnitudes
// (rounded up), for finite bf16 values.
func bf16ULPs(x, y float64) int {
	m := math.Max(math.Abs(x), math.Abs(y))
	ulp := bf16ULP(m)
	return int(math.Ceil(math.Abs(x-y)/ulp - 1e-9))
}

// bf16ULP is the spacing of bf16 values at magnitude m (8 significant bits; subnormals
// below 2^-126 have the fixed spacing 2^-133).
func bf16ULP(m float64) float64 {
	if m < 0x1p-126 {
		return 0x1p-133
	}
	_, e := math.Frexp(m) // m = f * 2^e, f in [0.5, 1)
	return math.Ldexp(1, e-8)
}

// mlaSoftmaxAllowance is the absolute GPU-emulator allowance on mla_decode's out for
// the softmax amplification of score errors (see the bounds above):
// 2 (D/16) 2^-23 scale max|q| max|k| max|v| over the rows' valid candidates.
func mlaSoftmaxAllowance(g golden.MLAConfig, in *golden.MLAInputs) float64 {
	D := g.D()
	qt, qh := g.QStrides()
	var maxQ float64
	for t := 0; t < g.T; t++ {
		for h := 0; h < g.H; h++ {
			var ss float64
			for _, x := range in.Q[t*qt+h*qh : t*qt+h*qh+D] {
				ss += x.F64() * x.F64()
			}
			maxQ = math.Max(maxQ, math.Sqrt(ss))
		}
	}
	var maxK, maxV float64
	var k []float64
	for s := range g.Segments {
		for t := 0; t < g.T; t++ {
			for _, id := range g.Candidates(in, s, t) {
				k = g.LoadK(k[:0], in, s, id)
				var ss float64
				for _, x := range k {
					ss += x * x
					maxV = math.Max(maxV, math.Abs(x))
				}
				maxK = math.Max(maxK, math.Sqrt(ss))
			}
		}
	}
	return 2 * float64(D) / 16 * 0x1p-23 * g.SoftmaxScale() * maxQ * maxK * maxV
}
