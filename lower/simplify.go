package lower

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
)

// The simplification rules: constant folding, the identities that index
// arithmetic hits constantly, and integer division and remainder by a constant
// (shifts for powers of two, a magic multiplication for other i32 divisors:
// ptxas 11.8 expands div.s32 by a constant into a float-reciprocal sequence and
// div.s64 into a call). simplifyRule is the one statement of them; it applies in
// two places. The simplify pass decides it for every op whose operands are IR
// constants, and emit applies that decision; during emission the same rule also
// runs on operands that become constant only there (coordinates: a fragment's
// row, a run's column), which no pass before emit can see.

type ruleKind uint8

const (
	noRule    ruleKind = iota
	ruleFold           // the result is the constant value
	ruleKeepA          // the result is operand a (x+0, x-0, x*1, x/1)
	ruleKeepB          // the result is operand b (0+x, 1*x)
	ruleShift          // division or remainder by the power of two value: shifts
	ruleMagic          // i32 division or remainder by value: a magic multiplication
)

// rule is one simplification of a binary op.
type rule struct {
	kind  ruleKind
	value int64
}

func (r rule) String() string {
	switch r.kind {
	case ruleFold:
		return fmt.Sprintf("folds to %d", r.value)
	case ruleKeepA:
		return "is its first operand"
	case ruleKeepB:
		return "is its second operand"
	case ruleShift:
		return fmt.Sprintf("by %d: shifts", r.value)
	case ruleMagic:
		return fmt.Sprintf("by %d: magic multiplication", r.value)
	}
	return "no rule"
}

// simplifyRule is the rule for binary op k on elem with operands a and b, each
// its integer value when constant, else nil.
func simplifyRule(k ir.OpKind, elem ir.Elem, a, b *int64) rule {
	if a != nil && b != nil {
		if c, ok := foldInt(k, *a, *b); ok {
			return rule{ruleFold, c}
		}
	}
	switch {
	case b != nil && *b == 0 && (k == ir.OpAdd || k == ir.OpSub):
		return rule{kind: ruleKeepA}
	case a != nil && *a == 0 && k == ir.OpAdd:
		return rule{kind: ruleKeepB}
	case b != nil && *b == 1 && (k == ir.OpMul || k == ir.OpDiv):
		return rule{kind: ruleKeepA}
	case a != nil && *a == 1 && k == ir.OpMul:
		return rule{kind: ruleKeepB}
	}
	if b != nil && (elem == ir.I32 || elem == ir.I64) && (k == ir.OpDiv || k == ir.OpRem) && *b > 1 && *b <= math.MaxInt32 {
		if *b&(*b-1) == 0 {
			return rule{ruleShift, *b}
		}
		if elem == ir.I32 {
			return rule{ruleMagic, *b}
		}
	}
	return rule{}
}

// simplifyOps is the simplify pass.
//
// Requires: a legalized kernel.
// Guarantees: f.rules holds, for every binary op whose simplification its IR
// constant operands already decide, that rule (simplifyRule); emit applies it
// instead of an instruction, and the check after emit confirms that the emitted
// operands agree. The IR is unchanged; -after simplify annotates the ops.
func simplifyOps(f *fn) error {
	f.rules = map[*ir.Op]rule{}
	walkOps(f.k.Body, func(o *ir.Op) {
		if !o.Kind.Class().Binary {
			return
		}
		r := simplifyRule(o.Kind, o.Args[0].Type.Elem, irConstInt(o.Args[0]), irConstInt(o.Args[1]))
		if r.kind != noRule {
			f.rules[o] = r
		}
	})
	return nil
}

// irConstInt is v's value when every element of v is one integer constant that
// the emitter writes as an immediate (i32, i64, u8; an i1 constant is a
// predicate register), else nil.
func irConstInt(v *ir.Value) *int64 {
	for v.Def != nil && v.Def.Kind == ir.OpBroadcast {
		v = v.Def.Args[0]
	}
	if o := v.Def; o != nil && o.Kind == ir.OpConst {
		if e := v.Type.Elem; e == ir.I32 || e == ir.I64 || e == ir.U8 {
			return &o.Int
		}
	}
	return nil
}

// immInt is x's value when it is an integer immediate, else nil.
func immInt(x ptx.Operand) *int64 {
	if c, ok := x.(ptx.Imm); ok {
		v := int64(c)
		return &v
	}
	return nil
}

// applyRule writes the simplified form of a binary op on operands a and b.
func (e *emitter) applyRule(r rule, k ir.OpKind, elem ir.Elem, a, b ptx.Operand) (ptx.Operand, bool) {
	switch r.kind {
	case ruleFold:
		return ptx.Imm(r.value), true
	case ruleKeepA:
		return a, true
	case ruleKeepB:
		return b, true
	case ruleShift:
		return e.divRemPow2(k, elem, a, int(r.value)), true
	case ruleMagic:
		return e.divRemMagic(k, a, r.value), true
	}
	return nil, false
}

// simplify applies the rules to a binary op on operand elements a and b before
// the emitter writes its instruction; it reports false when none applies.
func (e *emitter) simplify(k ir.OpKind, elem ir.Elem, a, b ptx.Operand) (ptx.Operand, bool) {
	return e.applyRule(simplifyRule(k, elem, immInt(a), immInt(b)), k, elem, a, b)
}

func foldInt(k ir.OpKind, a, b int64) (int64, bool) {
	switch k {
	case ir.OpAdd:
		return a + b, true
	case ir.OpSub:
		return a - b, true
	case ir.OpMul:
		return a * b, true
	case ir.OpMax:
		return max(a, b), true
	case ir.OpMin:
		return min(a, b), true
	case ir.OpDiv:
		if b != 0 {
			return a / b, true
		}
	}
	return 0, false
}

// divRemPow2 is signed i32 or i64 division (truncating) or remainder by d = 2^k
// with shifts: a negative dividend is biased by d-1 so the arithmetic shift rounds
// toward zero, as div.s32 does. ptxas 11.8 expands div.s32 and rem.s32 by a
// constant into its general sequence (about 15 instructions with a float
// reciprocal), and div.s64 into a call to a 64-bit division routine; a page
// index and slot, and a bf16 view's row of a byte offset, are computed per
// gathered candidate.
func (e *emitter) divRemPow2(k ir.OpKind, elem ir.Elem, a ptx.Operand, d int) ptx.Operand {
	a = e.inReg(a, elem)
	width := 8 * elem.Size()
	ts := typeSuffix(elem)
	sign := e.reg(elem)
	e.ins("shr.s"+ts[1:], sign, a, ptx.Imm(width-1))
	bias := e.reg(elem)
	e.ins("shr.u"+ts[1:], bias, sign, ptx.Imm(width-log2(d)))
	biased := e.reg(elem)
	e.ins("add.s"+ts[1:], biased, a, bias)
	r := e.reg(elem)
	if k == ir.OpDiv {
		e.ins("shr.s"+ts[1:], r, biased, ptx.Imm(log2(d)))
		return r
	}
	// a - trunc(a/d)*d: clear the biased value's low bits and subtract.
	whole := e.reg(elem)
	e.ins("and.b"+ts[1:], whole, biased, ptx.Imm(-d))
	e.ins("sub.s"+ts[1:], r, a, whole)
	return r
}

// divRemU32 writes r = a / d or a % d for an a known to be non-negative (a thread,
// warp or run number) and a constant d >= 1, without div.u32 or rem.u32, which
// ptxas 11.8 expands into a float-reciprocal sequence even for powers of two.
func (e *emitter) divRemU32(k ir.OpKind, r, a ptx.Operand, d int) {
	switch {
	case d == 1 && k == ir.OpDiv:
		e.add(ptx.MovU32(r, a))
	case d == 1:
		e.add(ptx.MovU32(r, ptx.Imm(0)))
	case d&(d-1) == 0 && k == ir.OpDiv:
		e.add(ptx.ShrU32(r, a, ptx.Imm(log2(d))))
	case d&(d-1) == 0:
		e.add(ptx.AndB32(r, a, ptx.Imm(d-1)))
	default:
		e.add(ptx.MovU32(r, e.divRemMagic(k, a, int64(d))))
	}
}

// divRemMagic is signed i32 division (truncating) or remainder by a constant d > 1
// that is not a power of two, as a multiplication by a "magic" reciprocal (Granlund
// and Montgomery; the form of Go's cmd/compile smagic): with s = floor(log2 d) and
// M = ceil(2^(32+s) / d) < 2^32, x / d = floor(x*M / 2^(32+s)) + (1 if x < 0). ptxas
// 11.8 expands div.s32 by a constant into a float-reciprocal sequence instead.
func (e *emitter) divRemMagic(k ir.OpKind, a ptx.Operand, d int64) ptx.Operand {
	a = e.inReg(a, ir.I32)
	s := bits.Len64(uint64(d)) - 1
	m := (uint64(1)<<(32+s) + uint64(d) - 1) / uint64(d)
	hi := e.reg(ir.I32)
	// 2^s < d < 2^(s+1) puts M in (2^31, 2^32): as an s32 it is M - 2^32, so the
	// signed high product is x*M/2^32 - x, and adding x back restores it.
	e.add(ptx.MulHiS32(hi, a, ptx.Imm(int64(int32(uint32(m))))))
	e.add(ptx.AddS32(hi, hi, a))
	e.add(ptx.ShrS32(hi, hi, ptx.Imm(s)))
	neg := e.reg(ir.I32)
	e.add(ptx.ShrU32(neg, a, ptx.Imm(31)))
	q := e.reg(ir.I32)
	e.add(ptx.AddS32(q, hi, neg))
	if k == ir.OpDiv {
		return q
	}
	whole := e.reg(ir.I32)
	e.add(ptx.MulLoS32(whole, q, ptx.Imm(d)))
	r := e.reg(ir.I32)
	e.add(ptx.SubS32(r, a, whole))
	return r
}
