package emit

import (
	"fmt"
	"math"
	"strconv"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

func isImm(x ptx.Operand) bool {
	switch x.(type) {
	case ptx.Imm, ptx.FImm:
		return true
	}
	return false
}

// inReg moves an immediate into a register when an instruction needs a register.
func (e *emitter) inReg(x ptx.Operand, elem ir.Elem) ptx.Operand {
	if !isImm(x) {
		return x
	}
	if elem == ir.I1 {
		r := e.reg(ir.I1)
		e.add(ptx.SetpNeS32(r, x, ptx.Imm(0)))
		return r
	}
	r := e.reg(elem)
	e.add(ptx.Mov(bitsSuffix(elem), r, x))
	return r
}

func constOperand(o *ir.Op, elem ir.Elem) ptx.Operand {
	switch elem {
	case ir.F32:
		return ptx.F32(float32(o.Float))
	case ir.BF16, ir.F16, ir.E4M3:
		// 16-bit and 8-bit float constants are materialized from f32 by a cvt.
		return ptx.F32(float32(o.Float))
	}
	return ptx.Imm(o.Int)
}

// elem emits one element of an op from its operand elements and returns the result
// (a register or an immediate). It serves scalars, recomputed tiles and every
// element of a distributed tile alike.
func (e *emitter) elem(o *ir.Op, args []ptx.Operand) (ptx.Operand, error) {
	re := o.Result().Type.Elem
	var ae ir.Elem
	if len(o.Args) > 0 {
		ae = o.Args[0].Type.Elem
	}
	if o.Kind.Class().Binary {
		if r, ok := e.d.Simplify.Rules[o]; ok {
			// Decided by the simplify pass; the operands must agree.
			if got := decision.SimplifyRule(o.Kind, ae, immInt(args[0]), immInt(args[1])); got != r {
				return nil, fmt.Errorf("simplify decided %v, but the emitted operands say %v", r, got)
			}
			x, _ := e.applyRule(r, o.Kind, ae, args[0], args[1])
			return x, nil
		}
		return e.binary(o.Kind, ae, args[0], args[1])
	}
	switch o.Kind {
	case ir.OpConst:
		c := constOperand(o, re)
		if re == ir.BF16 || re == ir.F16 {
			r := e.reg(re)
			e.add(cvtFromF32(re, r, c))
			return r, nil
		}
		if re == ir.I1 {
			return e.inReg(c, ir.I1), nil
		}
		return c, nil
	case ir.OpProgramID:
		r := e.reg(ir.I32)
		e.add(ptx.MovU32(r, ptx.Reg("%ctaid."+"xyz"[o.Int:o.Int+1])))
		return r, nil
	case ir.OpIota:
		return nil, fmt.Errorf("iota has no scalar value")
	case ir.OpBroadcast:
		return args[0], nil
	case ir.OpNeg:
		if c, ok := args[0].(ptx.Imm); ok {
			return -c, nil
		}
		r := e.reg(re)
		e.add(ptx.Neg(typeSuffix(re), r, args[0]))
		return r, nil
	case ir.OpExp2, ir.OpLog2, ir.OpRcp:
		r := e.reg(re)
		approx := map[ir.OpKind]func(d, a ptx.Operand) *ptx.Instr{ir.OpExp2: ptx.Ex2ApproxF32, ir.OpLog2: ptx.Lg2ApproxF32, ir.OpRcp: ptx.RcpApproxF32}[o.Kind]
		e.add(approx(r, e.inReg(args[0], ir.F32)))
		return r, nil
	case ir.OpSqrt:
		r := e.reg(re)
		e.add(ptx.SqrtRnF32(r, e.inReg(args[0], ir.F32)))
		return r, nil
	case ir.OpRsqrt:
		r := e.reg(re)
		e.add(ptx.RsqrtApproxF32(r, e.inReg(args[0], ir.F32)))
		return r, nil
	case ir.OpExp:
		// e^x = 2^(x log2 e): the product rounded once, then ex2.approx.
		t, r := e.reg(re), e.reg(re)
		e.add(ptx.MulRnF32(t, e.inReg(args[0], ir.F32), ptx.F32(math.Log2E)))
		e.add(ptx.Ex2ApproxF32(r, t))
		return r, nil
	case ir.OpLog:
		// ln x = log2(x) ln 2.
		t, r := e.reg(re), e.reg(re)
		e.add(ptx.Lg2ApproxF32(t, e.inReg(args[0], ir.F32)))
		e.add(ptx.MulRnF32(r, t, ptx.F32(math.Ln2)))
		return r, nil
	case ir.OpCmp:
		r := e.reg(ir.I1)
		a, b := args[0], args[1]
		pred := o.Pred
		if isImm(a) {
			a, b = b, a
			pred = map[string]string{"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}[pred]
		}
		e.add(ptx.Setp(ptx.Cmp(pred), typeSuffix(ae), r, e.inReg(a, ae), b))
		return r, nil
	case ir.OpSelect:
		if o.Result().Type.Kind == ir.Ptr {
			// A generic address: 64 bits, chosen whole.
			r := e.reg(ir.I64)
			e.add(ptx.Selp(bitsSuffix(ir.I64), r, args[1], args[2], e.inReg(args[0], ir.I1)))
			return r, nil
		}
		if re == ir.I1 {
			// c ? a : b on predicates: (c & a) | (!c & b).
			c, a, b := e.inReg(args[0], ir.I1), e.inReg(args[1], ir.I1), e.inReg(args[2], ir.I1)
			t1, t2, r := e.reg(ir.I1), e.reg(ir.I1), e.reg(ir.I1)
			e.add(ptx.AndPred(t1, c, a))
			e.add(ptx.NotPred(t2, c))
			e.add(ptx.AndPred(t2, t2, b))
			e.add(ptx.OrPred(r, t1, t2))
			return r, nil
		}
		r := e.reg(re)
		e.add(ptx.Selp(bitsSuffix(re), r, args[1], args[2], e.inReg(args[0], ir.I1)))
		return r, nil
	case ir.OpCast:
		return e.cast(ae, re, args[0])
	case ir.OpBitcast:
		if o.Args[0].Type.Kind == ir.Ptr {
			return args[0], nil
		}
		if ae.Size() == re.Size() && regPrefix(ae) == regPrefix(re) {
			return args[0], nil
		}
		r := e.reg(re)
		e.add(ptx.Mov(ptx.Type("b"+strconv.Itoa(8*max(re.Size(), 2))), r, args[0]))
		return r, nil
	case ir.OpLoad:
		return e.loadElem(o, args)
	}
	return nil, fmt.Errorf("op %s cannot be computed per element", o.Kind)
}

// binary emits a binary op on one element, after the simplification rules
// (simplify.go) had their chance.
func (e *emitter) binary(k ir.OpKind, elem ir.Elem, a, b ptx.Operand) (ptx.Operand, error) {
	if x, ok := e.simplify(k, elem, a, b); ok {
		return x, nil
	}
	if isImm(a) && k.Class().Commutative {
		a, b = b, a
	}
	a = e.inReg(a, elem)
	if elem == ir.I1 {
		b = e.inReg(b, elem)
	}
	r := e.reg(elem)
	if (k == ir.OpShl || k == ir.OpShr) && elem == ir.I64 {
		// Shift amounts are 32-bit registers in PTX.
		if ib, ok := b.(ptx.Imm); ok {
			b = ib
		} else {
			t := e.reg(ir.I32)
			e.add(ptx.CvtU32U64(t, b))
			b = t
		}
	}
	ts, f32 := typeSuffix(elem), elem == ir.F32
	var in *ptx.Instr
	switch {
	case k == ir.OpAdd && f32:
		in = ptx.AddRnF32(r, a, b)
	case k == ir.OpAdd:
		in = ptx.Add(ts, r, a, b)
	case k == ir.OpSub && f32:
		in = ptx.SubRnF32(r, a, b)
	case k == ir.OpSub:
		in = ptx.Sub(ts, r, a, b)
	case k == ir.OpMul && f32:
		in = ptx.MulRnF32(r, a, b)
	case k == ir.OpMul:
		in = ptx.MulLo(ts, r, a, b)
	case k == ir.OpDiv && f32:
		in = ptx.DivRnF32(r, a, b)
	case k == ir.OpDiv:
		in = ptx.Div(ts, r, a, b)
	case k == ir.OpRem:
		in = ptx.Rem(ts, r, a, b)
	case k == ir.OpMax:
		in = ptx.Max(ts, r, a, b)
	case k == ir.OpMin:
		in = ptx.Min(ts, r, a, b)
	case k == ir.OpAnd: // and.pred for I1 (its bits suffix)
		in = ptx.And(bitsSuffix(elem), r, a, b)
	case k == ir.OpOr:
		in = ptx.Or(bitsSuffix(elem), r, a, b)
	case k == ir.OpXor:
		in = ptx.Xor(bitsSuffix(elem), r, a, b)
	case k == ir.OpShl:
		in = ptx.Shl(ptx.Type("b"+strconv.Itoa(8*max(elem.Size(), 4))), r, a, b)
	case k == ir.OpShr && elem == ir.U8:
		in = ptx.ShrU32(r, a, b)
	case k == ir.OpShr:
		in = ptx.Shr(ts, r, a, b)
	default:
		return nil, fmt.Errorf("no PTX instruction for %s on %s", k, elem)
	}
	e.add(in)
	return r, nil
}

// cast converts one element.
func (e *emitter) cast(from, to ir.Elem, x ptx.Operand) (ptx.Operand, error) {
	if from == to {
		return x, nil
	}
	if c, ok := x.(ptx.Imm); ok && to.IsInt() && from.IsInt() {
		switch to {
		case ir.I32:
			return ptx.Imm(int32(c)), nil
		case ir.U8:
			return ptx.Imm(uint8(c)), nil
		}
		return c, nil
	}
	r := e.reg(to)
	x = e.inReg(x, from)
	switch {
	case from == ir.I32 && to == ir.I64:
		e.add(ptx.CvtS64S32(r, x))
	case from == ir.I64 && to == ir.I32:
		e.add(ptx.CvtU32U64(r, x))
	case from == ir.U8 && to == ir.I32:
		e.add(ptx.AndB32(r, x, ptx.Imm(255)))
	case from == ir.U8 && to == ir.I64:
		e.add(ptx.CvtU64U32(r, x))
	case from == ir.I32 && to == ir.U8:
		e.add(ptx.AndB32(r, x, ptx.Imm(255)))
	case (from == ir.I32 || from == ir.U8) && to == ir.F32:
		e.add(ptx.CvtRnF32S32(r, x))
	case from == ir.I64 && to == ir.F32:
		e.add(ptx.CvtRnF32S64(r, x))
	case from == ir.F32 && to == ir.I32:
		e.add(ptx.CvtRziS32F32(r, x))
	case from == ir.F32 && to == ir.I64:
		e.add(ptx.CvtRziS64F32(r, x))
	case from == ir.F32 && (to == ir.BF16 || to == ir.F16):
		e.add(cvtFromF32(to, r, x))
	case from == ir.BF16 && to == ir.F32:
		e.add(ptx.CvtF32Bf16(r, x))
	case from == ir.F16 && to == ir.F32:
		e.add(ptx.CvtF32F16(r, x))
	case from == ir.E4M3 && to == ir.F32:
		return e.e4m3ToF32(x, r)
	case from == ir.I1 && to.IsInt():
		e.add(ptx.Selp(bitsSuffix(to), r, ptx.Imm(1), ptx.Imm(0), x))
	default:
		return nil, fmt.Errorf("no conversion from %s to %s", from, to)
	}
	return r, nil
}

// cvtFromF32 rounds an f32 to the element type to, bf16 or f16.
func cvtFromF32(to ir.Elem, d, a ptx.Operand) *ptx.Instr {
	if to == ir.BF16 {
		return ptx.CvtRnBf16F32(d, a)
	}
	return ptx.CvtRnF16F32(d, a)
}

// e4m3ToF32 decodes an e4m3 byte (in the low bits of a 32-bit register) exactly.
// sm_89 and later convert in hardware; sm_80 rebuilds the float from its fields:
// normal values shift into f32 position and rebias by 2^120 in one exact multiply,
// subnormals come out of the same formula because f32 keeps them normal.
func (e *emitter) e4m3ToF32(x ptx.Operand, r ptx.Reg) (ptx.Operand, error) {
	if e.d.Target.FP8Convert {
		b16 := e.reg(ir.BF16)
		e.add(ptx.CvtU16U32(b16, x))
		pair := e.reg(ir.I32)
		e.add(ptx.CvtRnF16x2E4m3x2(pair, b16))
		lo := e.reg(ir.F16)
		e.add(ptx.CvtU16U32(lo, pair))
		e.add(ptx.CvtF32F16(r, lo))
		return r, nil
	}
	// |x| bits 0..6 placed at f32 bits 20..26; value = bits * 2^(127-7) * 2^-127...
	mag := e.reg(ir.I32)
	e.add(ptx.AndB32(mag, x, ptx.Imm(0x7f)))
	shifted := e.reg(ir.I32)
	e.add(ptx.ShlB32(shifted, mag, ptx.Imm(20)))
	sign := e.reg(ir.I32)
	e.add(ptx.AndB32(sign, x, ptx.Imm(0x80)))
	e.add(ptx.ShlB32(sign, sign, ptx.Imm(24)))
	bits := e.reg(ir.I32)
	e.add(ptx.OrB32(bits, shifted, sign))
	f := e.reg(ir.F32)
	e.add(ptx.MovB32(f, bits))
	// Scale by 2^(127-7) to rebias the exponent; exact for every finite e4m3.
	e.add(ptx.MulRnF32(r, f, ptx.F32(float32(math.Ldexp(1, 120)))))
	// 0x7f and 0xff are NaN.
	isNaN := e.reg(ir.I1)
	e.add(ptx.SetpEqS32(isNaN, mag, ptx.Imm(0x7f)))
	e.add(ptx.SelpF32(r, ptx.F32(float32(math.NaN())), r, isNaN))
	return r, nil
}
