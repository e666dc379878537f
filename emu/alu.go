package emu

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/ptx"
)

// ---- per-lane executors ----

func exec1(d, a int, f func(x uint64) uint64) execFn {
	return func(w *warp, mask uint32) error {
		D, A := w.slot(d), w.slot(a)
		if mask == fullMask {
			for l := range D {
				D[l] = f(A[l])
			}
			return nil
		}
		for m := mask; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			D[l] = f(A[l])
		}
		return nil
	}
}

func exec2(d, a, b int, f func(x, y uint64) uint64) execFn {
	return func(w *warp, mask uint32) error {
		D, A, B := w.slot(d), w.slot(a), w.slot(b)
		if mask == fullMask {
			for l := range D {
				D[l] = f(A[l], B[l])
			}
			return nil
		}
		for m := mask; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			D[l] = f(A[l], B[l])
		}
		return nil
	}
}

func exec3(d, a, b, c int, f func(x, y, z uint64) uint64) execFn {
	return func(w *warp, mask uint32) error {
		D, A, B, C := w.slot(d), w.slot(a), w.slot(b), w.slot(c)
		if mask == fullMask {
			for l := range D {
				D[l] = f(A[l], B[l], C[l])
			}
			return nil
		}
		for m := mask; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			D[l] = f(A[l], B[l], C[l])
		}
		return nil
	}
}

// ---- integer helpers ----

type itype struct {
	w      int
	signed bool
	mask   uint64
}

func intType(t string) (itype, bool) {
	var it itype
	switch t {
	case "u16", "b16":
		it = itype{w: 16}
	case "s16":
		it = itype{w: 16, signed: true}
	case "u32", "b32":
		it = itype{w: 32}
	case "s32":
		it = itype{w: 32, signed: true}
	case "u64", "b64":
		it = itype{w: 64}
	case "s64":
		it = itype{w: 64, signed: true}
	case "u8", "b8":
		it = itype{w: 8}
	case "s8":
		it = itype{w: 8, signed: true}
	default:
		return it, false
	}
	it.mask = widthMask(it.w)
	return it, true
}

func widthMask(w int) uint64 {
	if w >= 64 {
		return ^uint64(0)
	}
	return 1<<w - 1
}

// sext sign-extends the low w bits of x.
func sext(x uint64, w int) int64 {
	s := 64 - w
	return int64(x<<s) >> s
}

// ext extends the low t.w bits of x by t's signedness, as a uint64.
func (t itype) ext(x uint64) uint64 {
	if t.signed {
		return uint64(sext(x, t.w))
	}
	return x & t.mask
}

func (t itype) min() int64 {
	if !t.signed {
		return 0
	}
	return -1 << (t.w - 1)
}

func (t itype) max() uint64 {
	if !t.signed {
		return t.mask
	}
	return 1<<(t.w-1) - 1
}

// ---- float helpers ----

func f32(x uint64) float32 { return math.Float32frombits(uint32(x)) }
func b32(f float32) uint64 { return uint64(math.Float32bits(f)) }
func f64(x uint64) float64 { return math.Float64frombits(x) }
func b64(f float64) uint64 { return math.Float64bits(f) }
func ftzBits32(x uint64) uint64 {
	if x&0x7F800000 == 0 {
		return x & 0x80000000
	}
	return x & 0xFFFFFFFF
}

const canonNaN32 = 0x7FFFFFFF

func sat32(f float32) float32 {
	if !(f > 0) { // also NaN
		return 0
	}
	if f > 1 {
		return 1
	}
	return f
}

// fma32 is fma.rn.f32: a*b+c with a single rounding. The product is exact in float64;
// the sum is rounded to odd in float64, which makes the final rounding to float32
// correct (53 >= 24+2).
func fma32(a, b, c float32) float32 {
	return float32(sumToOdd(float64(a)*float64(b), float64(c)))
}

// max32 and min32 follow PTX max/min.f32: a NaN input is ignored, two NaNs give the
// canonical NaN, and +0 > -0. Widening to f64 and back is exact, and max64/min64
// return one of their inputs, so the f64 rules serve.
func max32(a, b float32) uint64 {
	if a != a && b != b {
		return canonNaN32
	}
	return b32(float32(max64(float64(a), float64(b))))
}

func min32(a, b float32) uint64 {
	if a != a && b != b {
		return canonNaN32
	}
	return b32(float32(min64(float64(a), float64(b))))
}

// max64 and min64 follow PTX max/min.f64: a NaN input is ignored, +0 > -0.
func max64(a, b float64) float64 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == b && a == 0:
		if math.Signbit(a) {
			return b
		}
		return a
	case a > b:
		return a
	}
	return b
}

func min64(a, b float64) float64 {
	switch {
	case a != a:
		return b
	case b != b:
		return a
	case a == b && a == 0:
		if math.Signbit(a) {
			return a
		}
		return b
	case a < b:
		return a
	}
	return b
}

// ---- mov ----

func (d *decoder) mov(in *instr, m *mods) (execFn, error) {
	t, err := m.typ()
	if err != nil {
		return nil, err
	}
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	dst, a := in.src.Args[0], in.src.Args[1]
	if t == "pred" {
		pd, err := d.pred(dst)
		if err != nil {
			return nil, err
		}
		if imm, ok := a.(ptx.Imm); ok {
			return func(w *warp, mask uint32) error {
				if imm != 0 {
					w.p[pd] |= mask
				} else {
					w.p[pd] &^= mask
				}
				return nil
			}, nil
		}
		pa, err := d.pred(a)
		if err != nil {
			return nil, err
		}
		return func(w *warp, mask uint32) error {
			w.p[pd] = w.p[pd]&^mask | w.p[pa]&mask
			return nil
		}, nil
	}
	tw := typeBits(t)
	if tw == 0 {
		return nil, fmt.Errorf("bad mov type .%s", t)
	}
	// Pack: mov.b32 d, {lo, hi}.
	if v, ok := a.(ptx.Vec); ok {
		n := len(v)
		if n < 2 || tw%n != 0 {
			return nil, fmt.Errorf("cannot pack %d elements into .%s", n, t)
		}
		ew := tw / n
		srcs, err := d.vecSrc(a, n)
		if err != nil {
			return nil, err
		}
		dd, err := d.dst(dst)
		if err != nil {
			return nil, err
		}
		em := widthMask(ew)
		if n == 2 {
			s0, s1 := srcs[0], srcs[1]
			return exec2(dd, s0, s1, func(x, y uint64) uint64 { return x&em | (y&em)<<ew }), nil
		}
		return func(w *warp, mask uint32) error {
			D := w.slot(dd)
			forLanes(mask, func(l int) {
				var v uint64
				for i, s := range srcs {
					v |= (w.r[s*32+l] & em) << (i * ew)
				}
				D[l] = v
			})
			return nil
		}, nil
	}
	// Unpack: mov.b32 {lo, hi}, s.
	if v, ok := dst.(ptx.Vec); ok {
		n := len(v)
		if n < 2 || tw%n != 0 {
			return nil, fmt.Errorf("cannot unpack .%s into %d elements", t, n)
		}
		ew := tw / n
		dsts, err := d.vecDst(dst, n)
		if err != nil {
			return nil, err
		}
		sa, err := d.src(a)
		if err != nil {
			return nil, err
		}
		em := widthMask(ew)
		return func(w *warp, mask uint32) error {
			A := *w.slot(sa) // copy: a destination may alias the source
			forLanes(mask, func(l int) {
				for i, s := range dsts {
					w.r[s*32+l] = A[l] >> (i * ew) & em
				}
			})
			return nil
		}, nil
	}
	dd, err := d.dst(dst)
	if err != nil {
		return nil, err
	}
	if _, ok := a.(ptx.Sym); ok {
		if _, isParam := d.params[string(a.(ptx.Sym))]; isParam {
			return nil, fmt.Errorf("mov of a parameter address is not supported; use ld.param")
		}
	}
	sa, err := d.src(a)
	if err != nil {
		return nil, err
	}
	tm := widthMask(tw)
	return exec1(dd, sa, func(x uint64) uint64 { return x & tm }), nil
}

// ---- arithmetic ----

func (d *decoder) alu(in *instr, m *mods) (execFn, error) {
	op := m.base
	args := in.src.Args
	// Predicate logic.
	if op == "and" || op == "or" || op == "xor" || op == "not" {
		if m.has("pred") {
			return d.predLogic(in, op)
		}
	}
	if op == "prmt" {
		return d.prmt(in, m)
	}
	if (op == "mul" || op == "fma") && m.has("bf16x2") {
		return d.bf16x2(in, m)
	}
	// Width-changing and special forms are handled first.
	var sub string
	switch op {
	case "mul", "mad":
		sub = m.one("lo", "hi", "wide")
	}
	rnd := m.one("rn", "rz", "rm", "rp")
	approx := m.has("approx")
	full := m.has("full")
	ftz := m.has("ftz")
	sat := m.has("sat")
	nan := m.has("NaN")
	t, err := m.typ()
	if err != nil {
		return nil, err
	}
	isFloat := t == "f32" || t == "f64"
	if !isFloat && (rnd != "" || approx || full || ftz || nan) {
		return nil, fmt.Errorf("float modifier on .%s", t)
	}
	if isFloat && sub != "" {
		return nil, fmt.Errorf("modifier .%s on a float op", sub)
	}
	if rnd != "" && rnd != "rn" {
		return nil, fmt.Errorf("rounding mode .%s is not supported (only .rn)", rnd)
	}
	nsrc := map[string]int{"neg": 1, "abs": 1, "not": 1, "popc": 1, "clz": 1, "brev": 1,
		"ex2": 1, "lg2": 1, "rcp": 1, "sqrt": 1, "rsqrt": 1, "sin": 1, "cos": 1, "tanh": 1,
		"mad": 3, "fma": 3}[op]
	if nsrc == 0 {
		nsrc = 2
	}
	switch t {
	case "f32":
		err = f32Modifiers(op, rnd, approx, full, sat, nan)
	case "f64":
		err = f64Modifiers(op, rnd, approx, ftz, sat, nan)
	}
	if err != nil {
		return nil, err
	}
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	dd, err := d.dst(args[0])
	if err != nil {
		return nil, err
	}
	s := make([]int, nsrc)
	for i := range s {
		if s[i], err = d.src(args[i+1]); err != nil {
			return nil, err
		}
	}
	if t == "f32" {
		return d.f32op(op, rnd, approx, full, ftz, sat, nan, dd, s)
	}
	if t == "f64" {
		return d.f64op(op, rnd, dd, s)
	}
	it, ok := intType(t)
	if !ok {
		return nil, fmt.Errorf("type .%s not supported for %s", t, op)
	}
	if sat && !(it.w == 32 && it.signed && (op == "add" || op == "sub")) {
		return nil, fmt.Errorf(".sat is only supported on add/sub.s32")
	}
	return intOp(op, sub, sat, it, dd, s)
}

func (d *decoder) predLogic(in *instr, op string) (execFn, error) {
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	p := make([]int, len(in.src.Args))
	for i := range p {
		var err error
		if p[i], err = d.pred(in.src.Args[i]); err != nil {
			return nil, err
		}
		if p[i] < 0 {
			return nil, fmt.Errorf("sink in predicate logic")
		}
	}
	return func(w *warp, mask uint32) error {
		var r uint32
		switch op {
		case "and":
			r = w.p[p[1]] & w.p[p[2]]
		case "or":
			r = w.p[p[1]] | w.p[p[2]]
		case "xor":
			r = w.p[p[1]] ^ w.p[p[2]]
		case "not":
			r = ^w.p[p[1]]
		}
		w.p[p[0]] = w.p[p[0]]&^mask | r&mask
		return nil
	}, nil
}

func intOp(op, sub string, sat bool, it itype, dd int, s []int) (execFn, error) {
	msk, w := it.mask, it.w
	ext := it.ext
	switch op {
	case "add":
		if sat {
			return exec2(dd, s[0], s[1], func(x, y uint64) uint64 {
				r := int64(int32(x)) + int64(int32(y))
				return uint64(uint32(int32(max(min(r, math.MaxInt32), math.MinInt32))))
			}), nil
		}
		if w == 32 {
			return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return uint64(uint32(x + y)) }), nil
		}
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return (x + y) & msk }), nil
	case "sub":
		if sat {
			return exec2(dd, s[0], s[1], func(x, y uint64) uint64 {
				r := int64(int32(x)) - int64(int32(y))
				return uint64(uint32(int32(max(min(r, math.MaxInt32), math.MinInt32))))
			}), nil
		}
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return (x - y) & msk }), nil
	case "mul", "mad":
		var mul func(x, y uint64) uint64
		switch sub {
		case "lo":
			mul = func(x, y uint64) uint64 { return x * y & msk }
		case "hi":
			switch {
			case w == 64 && it.signed:
				mul = func(x, y uint64) uint64 {
					hi, _ := bits.Mul64(x, y)
					if int64(x) < 0 {
						hi -= y
					}
					if int64(y) < 0 {
						hi -= x
					}
					return hi
				}
			case w == 64:
				mul = func(x, y uint64) uint64 { hi, _ := bits.Mul64(x, y); return hi }
			default:
				mul = func(x, y uint64) uint64 { return ext(x) * ext(y) >> w & msk }
			}
		case "wide":
			if w == 64 {
				return nil, fmt.Errorf(".wide on a 64-bit type")
			}
			wm := widthMask(2 * w)
			mul = func(x, y uint64) uint64 { return ext(x) * ext(y) & wm }
			msk = wm
		default:
			return nil, fmt.Errorf("integer %s needs .lo, .hi or .wide", op)
		}
		if op == "mul" {
			return exec2(dd, s[0], s[1], mul), nil
		}
		if sub == "lo" && w == 32 {
			return exec3(dd, s[0], s[1], s[2], func(x, y, z uint64) uint64 { return uint64(uint32(x*y + z)) }), nil
		}
		return exec3(dd, s[0], s[1], s[2], func(x, y, z uint64) uint64 { return (mul(x, y) + z) & msk }), nil
	case "div":
		// Division by zero is undefined in PTX; the result here is what NVIDIA hardware
		// gives for unsigned division (all ones) and -1 for signed.
		if it.signed {
			return exec2(dd, s[0], s[1], func(x, y uint64) uint64 {
				a, b := sext(x, w), sext(y, w)
				if b == 0 {
					return msk
				}
				if b == -1 {
					return uint64(-a) & msk // MIN / -1 wraps to MIN
				}
				return uint64(a/b) & msk
			}), nil
		}
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 {
			a, b := x&msk, y&msk
			if b == 0 {
				return msk
			}
			return a / b
		}), nil
	case "rem":
		if it.signed {
			return exec2(dd, s[0], s[1], func(x, y uint64) uint64 {
				a, b := sext(x, w), sext(y, w)
				if b == 0 || b == -1 {
					if b == -1 {
						return 0
					}
					return uint64(a) & msk
				}
				return uint64(a%b) & msk
			}), nil
		}
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 {
			a, b := x&msk, y&msk
			if b == 0 {
				return a
			}
			return a % b
		}), nil
	case "min", "max":
		isMax := op == "max"
		if it.signed {
			return exec2(dd, s[0], s[1], func(x, y uint64) uint64 {
				a, b := sext(x, w), sext(y, w)
				if (a > b) == isMax {
					return uint64(a) & msk
				}
				return uint64(b) & msk
			}), nil
		}
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 {
			a, b := x&msk, y&msk
			if (a > b) == isMax {
				return a
			}
			return b
		}), nil
	case "neg":
		return exec1(dd, s[0], func(x uint64) uint64 { return -x & msk }), nil
	case "abs":
		return exec1(dd, s[0], func(x uint64) uint64 {
			a := sext(x, w)
			if a < 0 {
				a = -a
			}
			return uint64(a) & msk
		}), nil
	case "and":
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return x & y & msk }), nil
	case "or":
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return (x | y) & msk }), nil
	case "xor":
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return (x ^ y) & msk }), nil
	case "not":
		return exec1(dd, s[0], func(x uint64) uint64 { return ^x & msk }), nil
	case "shl":
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 {
			if uint32(y) >= uint32(w) {
				return 0
			}
			return x << uint32(y) & msk
		}), nil
	case "shr":
		if it.signed {
			return exec2(dd, s[0], s[1], func(x, y uint64) uint64 {
				n := uint32(y)
				if n >= uint32(w) {
					n = uint32(w) - 1
				}
				return uint64(sext(x, w)>>n) & msk
			}), nil
		}
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 {
			if uint32(y) >= uint32(w) {
				return 0
			}
			return (x & msk) >> uint32(y)
		}), nil
	case "popc":
		return exec1(dd, s[0], func(x uint64) uint64 { return uint64(bits.OnesCount64(x & msk)) }), nil
	case "clz":
		return exec1(dd, s[0], func(x uint64) uint64 { return uint64(w - bits.Len64(x&msk)) }), nil
	case "brev":
		return exec1(dd, s[0], func(x uint64) uint64 { return bits.Reverse64(x) >> (64 - w) }), nil
	}
	return nil, fmt.Errorf("%s is not an integer instruction", op)
}

// f32Modifiers checks which modifiers each f32 op accepts (before its operands, so
// that an opcode without a form is refused with the reason).
func f32Modifiers(op, rnd string, approx, full, sat, nan bool) error {
	needApprox := map[string]bool{"ex2": true, "lg2": true, "rsqrt": true, "sin": true, "cos": true, "tanh": true}
	switch {
	case needApprox[op] && !approx:
		return fmt.Errorf("%s.f32 needs .approx", op)
	case (op == "rcp" || op == "sqrt") && approx == (rnd == "rn"):
		return fmt.Errorf("%s.f32 needs exactly one of .approx and .rn", op)
	case op == "div" && btoi(approx)+btoi(full)+btoi(rnd == "rn") != 1:
		return fmt.Errorf("div.f32 needs one of .approx, .full and .rn")
	case op == "fma" && rnd != "rn":
		return fmt.Errorf("fma.f32 needs .rn")
	case approx && !needApprox[op] && op != "rcp" && op != "sqrt" && op != "div":
		return fmt.Errorf(".approx on %s.f32", op)
	case full && op != "div":
		return fmt.Errorf(".full on %s.f32", op)
	case nan && op != "min" && op != "max":
		return fmt.Errorf(".NaN on %s.f32", op)
	case sat && !(op == "add" || op == "sub" || op == "mul" || op == "fma" || op == "mad"):
		return fmt.Errorf(".sat on %s.f32", op)
	case rnd != "" && (op == "min" || op == "max" || op == "neg" || op == "abs" || needApprox[op]):
		return fmt.Errorf(".%s on %s.f32", rnd, op)
	case op == "mad" && rnd != "rn":
		return fmt.Errorf("mad.f32 needs .rn")
	}
	return nil
}

func (d *decoder) f32op(op, rnd string, approx, full, ftz, sat, nan bool, dd int, s []int) (execFn, error) {
	in := func(x uint64) float32 { return f32(x) }
	out := func(f float32) uint64 { return b32(f) }
	if ftz {
		in = func(x uint64) float32 { return f32(ftzBits32(x)) }
		out = func(f float32) uint64 { return ftzBits32(b32(f)) }
	}
	if sat {
		o := out
		out = func(f float32) uint64 { return o(sat32(f)) }
	}
	var f1 func(a float32) float32
	var f2 func(a, b float32) float32
	switch op {
	case "add":
		if !ftz && !sat {
			return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return b32(f32(x) + f32(y)) }), nil
		}
		f2 = func(a, b float32) float32 { return a + b }
	case "sub":
		f2 = func(a, b float32) float32 { return a - b }
	case "mul":
		if !ftz && !sat {
			return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return b32(float32(f32(x) * f32(y))) }), nil
		}
		f2 = func(a, b float32) float32 { return float32(a * b) }
	case "div":
		f2 = func(a, b float32) float32 { return float32(float64(a) / float64(b)) }
	case "fma", "mad":
		if !ftz && !sat {
			return exec3(dd, s[0], s[1], s[2], func(x, y, z uint64) uint64 { return b32(fma32(f32(x), f32(y), f32(z))) }), nil
		}
		return exec3(dd, s[0], s[1], s[2], func(x, y, z uint64) uint64 { return out(fma32(in(x), in(y), in(z))) }), nil
	case "min", "max":
		mm := min32
		if op == "max" {
			mm = max32
		}
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 {
			a, b := in(x), in(y)
			if nan && (a != a || b != b) {
				return canonNaN32
			}
			r := mm(a, b)
			if ftz {
				r = ftzBits32(r)
			}
			return r
		}), nil
	case "neg":
		return exec1(dd, s[0], func(x uint64) uint64 { return b32(in(x)) ^ 0x80000000 }), nil
	case "abs":
		return exec1(dd, s[0], func(x uint64) uint64 { return b32(in(x)) &^ 0x80000000 }), nil
	case "copysign":
		// copysign.f32 d, a, b: |b| with the sign of a.
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return y&0x7FFFFFFF | x&0x80000000 }), nil
	case "ex2":
		f1 = func(a float32) float32 { return float32(math.Exp2(float64(a))) }
	case "lg2":
		f1 = func(a float32) float32 { return float32(math.Log2(float64(a))) }
	case "rcp":
		f1 = func(a float32) float32 { return float32(1 / float64(a)) }
	case "sqrt":
		f1 = func(a float32) float32 { return float32(math.Sqrt(float64(a))) }
	case "rsqrt":
		f1 = func(a float32) float32 { return float32(1 / math.Sqrt(float64(a))) }
	case "sin":
		f1 = func(a float32) float32 { return float32(math.Sin(float64(a))) }
	case "cos":
		f1 = func(a float32) float32 { return float32(math.Cos(float64(a))) }
	case "tanh":
		f1 = func(a float32) float32 { return float32(math.Tanh(float64(a))) }
	default:
		return nil, fmt.Errorf("%s.f32 is not supported", op)
	}
	if f1 != nil {
		return exec1(dd, s[0], func(x uint64) uint64 { return out(f1(in(x))) }), nil
	}
	return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return out(f2(in(x), in(y))) }), nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// f64Modifiers checks the modifiers of an f64 op (before its operands, as f32Modifiers).
func f64Modifiers(op, rnd string, approx, ftz, sat, nan bool) error {
	needRn := op == "fma" || op == "mad" || op == "div" || op == "sqrt" || op == "rcp"
	switch {
	case ftz || sat || nan:
		return fmt.Errorf("modifier not supported on .f64")
	case needRn && rnd != "rn":
		return fmt.Errorf("%s.f64 needs .rn", op)
	case approx:
		return fmt.Errorf(".approx on %s.f64 is not supported", op)
	}
	return nil
}

func (d *decoder) f64op(op, rnd string, dd int, s []int) (execFn, error) {
	switch op {
	case "add":
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return b64(f64(x) + f64(y)) }), nil
	case "sub":
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return b64(f64(x) - f64(y)) }), nil
	case "mul":
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return b64(float64(f64(x) * f64(y))) }), nil
	case "div":
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return b64(f64(x) / f64(y)) }), nil
	case "fma", "mad":
		return exec3(dd, s[0], s[1], s[2], func(x, y, z uint64) uint64 { return b64(math.FMA(f64(x), f64(y), f64(z))) }), nil
	case "min":
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return b64(min64(f64(x), f64(y))) }), nil
	case "max":
		return exec2(dd, s[0], s[1], func(x, y uint64) uint64 { return b64(max64(f64(x), f64(y))) }), nil
	case "neg":
		return exec1(dd, s[0], func(x uint64) uint64 { return x ^ 1<<63 }), nil
	case "abs":
		return exec1(dd, s[0], func(x uint64) uint64 { return x &^ (1 << 63) }), nil
	case "sqrt":
		return exec1(dd, s[0], func(x uint64) uint64 { return b64(math.Sqrt(f64(x))) }), nil
	case "rcp":
		return exec1(dd, s[0], func(x uint64) uint64 { return b64(1 / f64(x)) }), nil
	}
	return nil, fmt.Errorf("%s.f64 is not supported", op)
}

// ---- setp, selp ----

func (d *decoder) setp(in *instr, m *mods) (execFn, error) {
	cmp := m.one("eq", "ne", "lt", "le", "gt", "ge", "lo", "ls", "hi", "hs",
		"equ", "neu", "ltu", "leu", "gtu", "geu", "num", "nan")
	if cmp == "" {
		return nil, fmt.Errorf("setp needs a comparison")
	}
	boolOp := m.one("and", "or", "xor")
	ftz := m.has("ftz")
	t, err := m.typ()
	if err != nil {
		return nil, err
	}
	args := in.src.Args
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	p, q, err := d.predPair(args[0])
	if err != nil {
		return nil, err
	}
	a, err := d.src(args[1])
	if err != nil {
		return nil, err
	}
	b, err := d.src(args[2])
	if err != nil {
		return nil, err
	}
	c := -1
	if boolOp != "" {
		if c, err = d.pred(args[3]); err != nil || c < 0 {
			return nil, fmt.Errorf("bad predicate operand %s", ptx.OperandString(args[3]))
		}
	}
	var f func(x, y uint64) bool
	switch t {
	case "f32", "f64":
		var conv func(x uint64) float64
		if t == "f32" {
			conv = func(x uint64) float64 { return float64(f32(x)) }
			if ftz {
				conv = func(x uint64) float64 { return float64(f32(ftzBits32(x))) }
			}
		} else {
			if ftz {
				return nil, fmt.Errorf(".ftz on .f64")
			}
			conv = f64
		}
		if f, err = floatCmp(cmp, conv); err != nil {
			return nil, err
		}
	default:
		if ftz {
			return nil, fmt.Errorf(".ftz on .%s", t)
		}
		it, ok := intType(t)
		if !ok {
			return nil, fmt.Errorf("setp type .%s not supported", t)
		}
		if f, err = intCmp(cmp, it, t[0] == 'b'); err != nil {
			return nil, err
		}
	}
	return func(w *warp, mask uint32) error {
		A, B := w.slot(a), w.slot(b)
		var r uint32
		for m := mask; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			if f(A[l], B[l]) {
				r |= 1 << l
			}
		}
		pr, qr := r, ^r
		if c >= 0 {
			cv := w.p[c]
			switch boolOp {
			case "and":
				pr, qr = pr&cv, qr&cv
			case "or":
				pr, qr = pr|cv, qr|cv
			case "xor":
				pr, qr = pr^cv, qr^cv
			}
		}
		if p >= 0 {
			w.p[p] = w.p[p]&^mask | pr&mask
		}
		if q >= 0 {
			w.p[q] = w.p[q]&^mask | qr&mask
		}
		return nil
	}, nil
}

func floatCmp(cmp string, conv func(uint64) float64) (func(x, y uint64) bool, error) {
	var f func(a, b float64) bool
	switch cmp {
	case "eq":
		f = func(a, b float64) bool { return a == b }
	case "ne":
		f = func(a, b float64) bool { return a != b && a == a && b == b }
	case "lt":
		f = func(a, b float64) bool { return a < b }
	case "le":
		f = func(a, b float64) bool { return a <= b }
	case "gt":
		f = func(a, b float64) bool { return a > b }
	case "ge":
		f = func(a, b float64) bool { return a >= b }
	case "equ":
		f = func(a, b float64) bool { return !(a < b || a > b) }
	case "neu":
		f = func(a, b float64) bool { return a != b }
	case "ltu":
		f = func(a, b float64) bool { return !(a >= b) }
	case "leu":
		f = func(a, b float64) bool { return !(a > b) }
	case "gtu":
		f = func(a, b float64) bool { return !(a <= b) }
	case "geu":
		f = func(a, b float64) bool { return !(a < b) }
	case "num":
		f = func(a, b float64) bool { return a == a && b == b }
	case "nan":
		f = func(a, b float64) bool { return a != a || b != b }
	default:
		return nil, fmt.Errorf("comparison .%s on a float type", cmp)
	}
	return func(x, y uint64) bool { return f(conv(x), conv(y)) }, nil
}

func intCmp(cmp string, it itype, bitsType bool) (func(x, y uint64) bool, error) {
	if bitsType && cmp != "eq" && cmp != "ne" {
		return nil, fmt.Errorf("comparison .%s on a bit-size type", cmp)
	}
	w, msk := it.w, it.mask
	switch cmp {
	case "eq":
		return func(x, y uint64) bool { return x&msk == y&msk }, nil
	case "ne":
		return func(x, y uint64) bool { return x&msk != y&msk }, nil
	case "lo":
		return func(x, y uint64) bool { return x&msk < y&msk }, nil
	case "ls":
		return func(x, y uint64) bool { return x&msk <= y&msk }, nil
	case "hi":
		return func(x, y uint64) bool { return x&msk > y&msk }, nil
	case "hs":
		return func(x, y uint64) bool { return x&msk >= y&msk }, nil
	}
	if it.signed {
		switch cmp {
		case "lt":
			return func(x, y uint64) bool { return sext(x, w) < sext(y, w) }, nil
		case "le":
			return func(x, y uint64) bool { return sext(x, w) <= sext(y, w) }, nil
		case "gt":
			return func(x, y uint64) bool { return sext(x, w) > sext(y, w) }, nil
		case "ge":
			return func(x, y uint64) bool { return sext(x, w) >= sext(y, w) }, nil
		}
	} else {
		switch cmp {
		case "lt":
			return func(x, y uint64) bool { return x&msk < y&msk }, nil
		case "le":
			return func(x, y uint64) bool { return x&msk <= y&msk }, nil
		case "gt":
			return func(x, y uint64) bool { return x&msk > y&msk }, nil
		case "ge":
			return func(x, y uint64) bool { return x&msk >= y&msk }, nil
		}
	}
	return nil, fmt.Errorf("comparison .%s on an integer type", cmp)
}

func (d *decoder) selp(in *instr, m *mods) (execFn, error) {
	t, err := m.typ()
	if err != nil {
		return nil, err
	}
	tw := typeBits(t)
	if tw == 0 {
		return nil, fmt.Errorf("selp type .%s not supported", t)
	}
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	args := in.src.Args
	dd, err := d.dst(args[0])
	if err != nil {
		return nil, err
	}
	a, err := d.src(args[1])
	if err != nil {
		return nil, err
	}
	b, err := d.src(args[2])
	if err != nil {
		return nil, err
	}
	c, err := d.pred(args[3])
	if err != nil || c < 0 {
		return nil, fmt.Errorf("bad predicate operand %s", ptx.OperandString(args[3]))
	}
	tm := widthMask(tw)
	return func(w *warp, mask uint32) error {
		D, A, B := w.slot(dd), w.slot(a), w.slot(b)
		cv := w.p[c]
		for m := mask; m != 0; m &= m - 1 {
			l := bits.TrailingZeros32(m)
			if cv>>l&1 != 0 {
				D[l] = A[l] & tm
			} else {
				D[l] = B[l] & tm
			}
		}
		return nil
	}, nil
}

// prmtModes gives, for each mode of prmt and each value of c[1:0], the source byte
// of d.b0..d.b3 (PTX ISA, prmt: the table of modes, read right to left).
var prmtModes = map[string][4][4]uint8{
	"f4e":  {{0, 1, 2, 3}, {1, 2, 3, 4}, {2, 3, 4, 5}, {3, 4, 5, 6}},
	"b4e":  {{0, 7, 6, 5}, {1, 0, 7, 6}, {2, 1, 0, 7}, {3, 2, 1, 0}},
	"rc8":  {{0, 0, 0, 0}, {1, 1, 1, 1}, {2, 2, 2, 2}, {3, 3, 3, 3}},
	"ecl":  {{0, 1, 2, 3}, {1, 1, 2, 3}, {2, 2, 2, 3}, {3, 3, 3, 3}},
	"ecr":  {{0, 0, 0, 0}, {0, 1, 1, 1}, {0, 1, 2, 2}, {0, 1, 2, 3}},
	"rc16": {{0, 1, 0, 1}, {2, 3, 2, 3}, {0, 1, 0, 1}, {2, 3, 2, 3}},
}

// prmt picks four bytes of the eight of {b, a} (a is bytes 0..3). Without a mode,
// nibble i of c selects d.bi: its low three bits the byte, its bit 3 replication of
// that byte's sign bit over all eight bits. A mode uses c[1:0] and the table above.
func (d *decoder) prmt(in *instr, m *mods) (execFn, error) {
	if !m.has("b32") {
		return nil, fmt.Errorf("prmt needs .b32")
	}
	mode := m.one("f4e", "b4e", "rc8", "ecl", "ecr", "rc16")
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	dd, err := d.dst(in.src.Args[0])
	if err != nil {
		return nil, err
	}
	var s [3]int
	for i := range s {
		if s[i], err = d.src(in.src.Args[i+1]); err != nil {
			return nil, err
		}
	}
	if mode != "" {
		tab := prmtModes[mode]
		return exec3(dd, s[0], s[1], s[2], func(a, b, c uint64) uint64 {
			src := b<<32 | a&0xFFFFFFFF
			var r uint64
			for i, sel := range tab[c&3] {
				r |= src >> (8 * sel) & 0xFF << (8 * i)
			}
			return r
		}), nil
	}
	return exec3(dd, s[0], s[1], s[2], func(a, b, c uint64) uint64 {
		src := b<<32 | a&0xFFFFFFFF
		var r uint64
		for i := 0; i < 4; i++ {
			sel := c >> (4 * i) & 0xF
			by := src >> (8 * (sel & 7)) & 0xFF
			if sel&8 != 0 {
				by = 0
				if src>>(8*(sel&7)+7)&1 != 0 {
					by = 0xFF
				}
			}
			r |= by << (8 * i)
		}
		return r
	}), nil
}

// bf16x2 is mul.rn.bf16x2 and fma.rn.bf16x2: each 16-bit half (lo with lo, hi
// with hi) computed exactly and rounded once to bf16, to nearest even, subnormal
// inputs and results kept (bf16 arithmetic has no .ftz). A NaN result is the
// canonical NaN 0x7FFF.
func (d *decoder) bf16x2(in *instr, m *mods) (execFn, error) {
	op := m.base
	if m.one("rn") == "" {
		return nil, fmt.Errorf("%s.bf16x2 needs .rn", op)
	}
	n := 3
	if op == "fma" {
		n = 4
	}
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	dd, err := d.dst(in.src.Args[0])
	if err != nil {
		return nil, err
	}
	s := make([]int, n-1)
	for i := range s {
		if s[i], err = d.src(in.src.Args[i+1]); err != nil {
			return nil, err
		}
	}
	half := func(x uint64, i int) float64 { return float64(bf16ToF32(x >> (16 * i))) }
	if op == "mul" {
		return exec2(dd, s[0], s[1], func(a, b uint64) uint64 {
			var r uint64
			for i := 0; i < 2; i++ {
				r |= uint64(roundBF16(half(a, i)*half(b, i))) << (16 * i)
			}
			return r
		}), nil
	}
	return exec3(dd, s[0], s[1], s[2], func(a, b, c uint64) uint64 {
		var r uint64
		for i := 0; i < 2; i++ {
			r |= uint64(roundBF16(sumToOdd(half(a, i)*half(b, i), half(c, i)))) << (16 * i)
		}
		return r
	}), nil
}

// sumToOdd is p+c rounded to odd in float64 (TwoSum gives the error term): a
// later rounding to a format of at most 51 bits of precision is then correct.
func sumToOdd(p, c float64) float64 {
	s := p + c
	if s == 0 || math.IsInf(s, 0) || math.IsNaN(s) {
		return s
	}
	bb := s - p
	e := (p - (s - bb)) + (c - bb)
	if e != 0 {
		u := math.Float64bits(s)
		if u&1 == 0 {
			if (e > 0) == (s > 0) {
				u++
			} else {
				u--
			}
			s = math.Float64frombits(u)
		}
	}
	return s
}

// roundBF16 rounds x to bf16 in one step, ties to even, subnormals kept; a NaN
// becomes the canonical NaN.
func roundBF16(x float64) uint16 {
	if x != x {
		return bf16CanonNaN
	}
	return uint16(dtype.BF16FromF64(x))
}
