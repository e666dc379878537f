package lower

import (
	"github.com/ptxgen/ptxgen/ir"
	"math/bits"
)

// divisor returns a power of two that the integer value v (every element of it) is
// known to be a multiple of. It drives the width of vector copies: a gather whose
// row offsets are multiples of 8 bf16 elements can move 16 bytes per cp.async.
func (f *fn) divisor(v *ir.Value) int64 {
	const limit = 1 << 16
	if v.Def == nil {
		for _, p := range f.k.Params {
			if p.Value == v && p.Div > 1 {
				return int64(p.Div)
			}
		}
		return 1
	}
	o := v.Def
	switch o.Kind {
	case ir.OpConst:
		if o.Int == 0 {
			return limit
		}
		return min(int64(1)<<bits.TrailingZeros64(uint64(o.Int)), limit)
	case ir.OpMul:
		return min(f.divisor(o.Args[0])*f.divisor(o.Args[1]), limit)
	case ir.OpAdd, ir.OpSub, ir.OpMin, ir.OpMax:
		return min(f.divisor(o.Args[0]), f.divisor(o.Args[1]))
	case ir.OpCast, ir.OpBroadcast:
		return f.divisor(o.Args[0])
	case ir.OpDiv:
		if c := o.Args[1].Def; c != nil && c.Kind == ir.OpConst && c.Int > 0 {
			if d := f.divisor(o.Args[0]); d%c.Int == 0 {
				return d / c.Int
			}
		}
	case ir.OpShl:
		if c := o.Args[1].Def; c != nil && c.Kind == ir.OpConst && c.Int >= 0 && c.Int < 16 {
			return min(f.divisor(o.Args[0])<<c.Int, limit)
		}
	case ir.OpSelect:
		return min(f.divisor(o.Args[1]), f.divisor(o.Args[2]))
	}
	return 1
}

// ptrAlign is the byte alignment known for a pointer value: the least of the
// parameters it may be.
func (f *fn) ptrAlign(p *ir.Value) int64 {
	ps := pointerParams(f.k, p)
	if ps == nil {
		return 1
	}
	a := int64(1 << 16)
	for _, i := range ps {
		a = min(a, int64(max(f.k.Params[i].Div, 1)))
	}
	return a
}

// chunkBytes picks the cp.async size for a rank-2 load: the widest of 16, 8 and 4
// bytes that every row start is known to be aligned to.
func (f *fn) chunkBytes(m memOps) int {
	es := int64(m.val.Type.Elem.Size())
	align := gcd64(f.ptrAlign(m.ptr), gcd64(f.divisor(m.offs)*es, f.divisor(m.col0)*es))
	for _, w := range []int64{16, 8, 4} {
		if align%w == 0 {
			return int(w)
		}
	}
	return int(align)
}

func gcd64(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
