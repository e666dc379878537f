package emit

// The emitter's side of the simplification rules (simplify.go): it writes the
// form the simplify pass decided, and applies the same rule to operands that
// become constant only during emission.

import (
	"math/bits"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

// applyRule writes the simplified form of a binary op on operands a and b.
func (e *emitter) applyRule(r decision.Rule, k ir.OpKind, elem ir.Elem, a, b ptx.Operand) (ptx.Operand, bool) {
	switch r.Kind {
	case decision.RuleFold:
		return ptx.Imm(r.Value), true
	case decision.RuleKeepA:
		return a, true
	case decision.RuleKeepB:
		return b, true
	case decision.RuleShift:
		return e.divRemPow2(k, elem, a, int(r.Value)), true
	case decision.RuleMagic:
		return e.divRemMagic(k, a, r.Value), true
	}
	return nil, false
}

// simplify applies the rules to a binary op on operand elements a and b before
// the emitter writes its instruction; it reports false when none applies.
func (e *emitter) simplify(k ir.OpKind, elem ir.Elem, a, b ptx.Operand) (ptx.Operand, bool) {
	return e.applyRule(decision.SimplifyRule(k, elem, immInt(a), immInt(b)), k, elem, a, b)
}

// immInt is x's value when it is an integer immediate, else nil.
func immInt(x ptx.Operand) *int64 {
	if c, ok := x.(ptx.Imm); ok {
		v := int64(c)
		return &v
	}
	return nil
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
	e.add(ptx.Shr("s"+ts[1:], sign, a, ptx.Imm(width-1)))
	bias := e.reg(elem)
	e.add(ptx.Shr("u"+ts[1:], bias, sign, ptx.Imm(width-log2(d))))
	biased := e.reg(elem)
	e.add(ptx.Add("s"+ts[1:], biased, a, bias))
	r := e.reg(elem)
	if k == ir.OpDiv {
		e.add(ptx.Shr("s"+ts[1:], r, biased, ptx.Imm(log2(d))))
		return r
	}
	// a - trunc(a/d)*d: clear the biased value's low bits and subtract.
	whole := e.reg(elem)
	e.add(ptx.And("b"+ts[1:], whole, biased, ptx.Imm(-d)))
	e.add(ptx.Sub("s"+ts[1:], r, a, whole))
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
