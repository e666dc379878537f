package lower

import (
	"fmt"
	"math"

	"github.com/ptxgen/ptxgen/ir"
)

// The simplification rules: constant folding, the identities that index
// arithmetic hits constantly, and integer division and remainder by a constant
// (shifts for powers of two, a magic multiplication for other i32 divisors:
// ptxas 11.8 expands div.s32 by a constant into a float-reciprocal sequence and
// div.s64 into a call). simplifyRule is the one statement of them; it applies in
// two places. The simplify pass decides it for every op whose operands are IR
// constants, and emit applies that decision (emit_simplify.go); during emission the same rule also
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

// simplifyRecord is what the simplify pass decided: rules maps each binary op
// whose IR constant operands decide its simplification to that rule.
type simplifyRecord struct {
	rules map[*ir.Op]rule
}

// simplifyOps is the simplify pass.
//
// Requires: a legalized kernel.
// Guarantees: the record's rules hold, for every binary op whose simplification its IR
// constant operands already decide, that rule (simplifyRule); emit applies it
// instead of an instruction, and the check after emit confirms that the emitted
// operands agree. The IR is unchanged; -after simplify annotates the ops.
func simplifyOps(f *fn) simplifyRecord {
	rec := simplifyRecord{rules: map[*ir.Op]rule{}}
	walkOps(f.k.Body, func(o *ir.Op) {
		if !o.Kind.Class().Binary {
			return
		}
		r := simplifyRule(o.Kind, o.Args[0].Type.Elem, irConstInt(o.Args[0]), irConstInt(o.Args[1]))
		if r.kind != noRule {
			rec.rules[o] = r
		}
	})
	return rec
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
