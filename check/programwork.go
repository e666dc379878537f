package check

import (
	"fmt"
	"math"

	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/ir"
)

// MaxProgramWork is the emulation budget of a program of one's own (ptxgen check
// -emu -from), in emu.Work units of about one ALU warp instruction's time: about half
// a minute on a loaded 2-core machine (0.1 to 0.4 µs a unit). Before the run,
// programWork refuses a call whose least work is over it; during the run emu.Work
// stops a launch whose first CTA's work times its CTAs would pass it, and the run
// where it does.
const MaxProgramWork = 1 << 26

// workBound is a lower bound of a program call's emulation work and what makes most
// of it, for the refusal.
type workBound struct {
	units int64
	what  string
}

// programWork is a lower bound of the emulation work (emu.Work units) of a call of p
// with the given scalar arguments (int32, int64 or float32 by name) and CTAs per
// kernel: every mma.sync of its dots (ceil(M/16) x ceil(N/8) x ceil(K/16) each, more
// when the lowering pads them) and the add, compare and branch each iteration of a
// loop ends with, on one warp at least, times the trip counts its bounds give
// (constants, arguments, program ids and arithmetic on them; a bound read from
// memory counts no iteration), times the CTAs. A lower bound: it refuses only what
// cannot fit the budget, and emu.Work stops the rest at run time.
func programWork(p *ir.Program, args map[string]any, ctas map[string]int64, grids map[string][3]int) workBound {
	var total workBound
	largest := workBound{}
	for _, k := range p.Kernels {
		n := ctas[k.Name]
		if n == 0 {
			continue
		}
		ev := &scalarEval{args: args, grid: grids[k.Name], known: map[*ir.Value]interval{}}
		w := ev.block(k.Body)
		units := satMul(w.units, n)
		total.units = satAdd(total.units, units)
		if units > largest.units {
			ctaWord := "CTAs, each"
			if n == 1 {
				ctaWord = "CTA"
			}
			largest = workBound{units, fmt.Sprintf("kernel %s, %d %s with %s", k.Name, n, ctaWord, w.what)}
		}
	}
	total.what = largest.what
	return total
}

// interval is the range of a scalar integer value over the CTAs and iterations of a
// call; ok false where it is not known (read from memory, a carried value).
type interval struct {
	lo, hi int64
	ok     bool
}

// scalarEval evaluates a kernel's scalar integer values as intervals, and the least
// work of its blocks.
type scalarEval struct {
	args  map[string]any
	grid  [3]int
	known map[*ir.Value]interval
}

func exact(v int64) interval { return interval{v, v, true} }

func (e *scalarEval) value(v *ir.Value) interval {
	if iv, ok := e.known[v]; ok {
		return iv
	}
	iv := e.compute(v)
	e.known[v] = iv
	return iv
}

func (e *scalarEval) compute(v *ir.Value) interval {
	if v.Type.Kind != ir.Scalar || (v.Type.Elem != ir.I32 && v.Type.Elem != ir.I64) {
		return interval{}
	}
	if v.Def == nil { // a parameter, or a block argument (set by block)
		switch a := e.args[v.Name].(type) {
		case int32:
			return exact(int64(a))
		case int64:
			return exact(a)
		}
		return interval{}
	}
	o := v.Def
	switch o.Kind {
	case ir.OpConst:
		return exact(o.Int)
	case ir.OpProgramID:
		if o.Int >= 0 && o.Int < 3 && e.grid[o.Int] > 0 {
			return interval{0, int64(e.grid[o.Int]) - 1, true}
		}
		return interval{}
	case ir.OpCast:
		iv := e.value(o.Args[0])
		if v.Type.Elem == ir.I32 && (iv.lo < math.MinInt32 || iv.hi > math.MaxInt32) {
			return interval{} // an i64 narrowed to i32 wraps
		}
		return iv
	}
	if len(o.Args) != 2 {
		return interval{}
	}
	a, b := e.value(o.Args[0]), e.value(o.Args[1])
	if !a.ok || !b.ok {
		return interval{}
	}
	var c []float64
	switch o.Kind {
	case ir.OpAdd:
		c = []float64{float64(a.lo) + float64(b.lo), float64(a.hi) + float64(b.hi)}
	case ir.OpSub:
		c = []float64{float64(a.lo) - float64(b.hi), float64(a.hi) - float64(b.lo)}
	case ir.OpMul:
		c = []float64{float64(a.lo) * float64(b.lo), float64(a.lo) * float64(b.hi), float64(a.hi) * float64(b.lo), float64(a.hi) * float64(b.hi)}
	case ir.OpMin:
		return interval{min(a.lo, b.lo), min(a.hi, b.hi), true}
	case ir.OpMax:
		return interval{max(a.lo, b.lo), max(a.hi, b.hi), true}
	case ir.OpDiv:
		if b.lo <= 0 || b.lo != b.hi { // a positive constant divisor only
			return interval{}
		}
		return interval{a.lo / b.lo, a.hi / b.lo, true}
	default:
		return interval{}
	}
	lo, hi := c[0], c[0]
	for _, x := range c {
		lo, hi = min(lo, x), max(hi, x)
	}
	// Wrapped arithmetic has no interval: leave it unknown.
	limit := float64(math.MaxInt32)
	if v.Type.Elem == ir.I64 {
		limit = math.MaxInt64 / 2
	}
	if lo < -limit || hi > limit {
		return interval{}
	}
	return interval{int64(lo), int64(hi), true}
}

// trips is the fewest iterations loop o runs over the call (0 where its bounds are
// not known), and the most, for its induction variable's interval.
func (e *scalarEval) trips(o *ir.Op) (least int64, iv interval) {
	lo, hi := e.value(o.Args[0]), e.value(o.Args[1])
	step := o.Int
	if !lo.ok || !hi.ok || step < 1 {
		return 0, interval{}
	}
	iv = interval{lo.lo, max(lo.lo, hi.hi-1), true}
	if span := hi.lo - lo.hi; span > 0 {
		least = (span + step - 1) / step
	}
	return least, iv
}

// block is the least work of one run of b, and what makes most of it.
func (e *scalarEval) block(b *ir.Block) workBound {
	var w workBound
	best := int64(-1)
	add := func(units int64, what string) {
		w.units = satAdd(w.units, units)
		if units > best {
			best, w.what = units, what
		}
	}
	for _, o := range b.Ops {
		switch o.Kind {
		case ir.OpDot:
			if len(o.Args[0].Type.Shape) != 2 || len(o.Args[1].Type.Shape) != 2 {
				continue
			}
			m, k, n := o.Args[0].Type.Shape[0], o.Args[0].Type.Shape[1], o.Args[1].Type.Shape[1]
			mmas := int64((m+15)/16) * int64((n+7)/8) * int64((k+15)/16)
			add(satMul(mmas, emu.InstrCost("mma.sync.aligned.m16n8k16")),
				fmt.Sprintf("dots of %dx%dx%d (%d mma.sync each)", m, n, k, mmas))
		case ir.OpFor:
			least, iv := e.trips(o)
			if len(o.Body.Args) > 0 {
				e.known[o.Body.Args[0]] = iv
			}
			inner := e.block(o.Body)
			// Each iteration ends with the induction variable's add, the compare and
			// the branch back, on every warp that runs the loop: one at least.
			what := fmt.Sprintf("a loop of %d iterations (%%%s)", least, o.Body.Args[0].Name)
			if inner.what != "" {
				what += " of " + inner.what
			}
			add(satMul(satAdd(inner.units, 3), least), what)
		}
	}
	return w
}
