package lower

import (
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
)

// The simplification rules: constant folding, the identities that index
// arithmetic hits constantly, and integer division and remainder by a constant
// (shifts for powers of two, a magic multiplication for other i32 divisors:
// ptxas 11.8 expands div.s32 by a constant into a float-reciprocal sequence and
// div.s64 into a call). decision.SimplifyRule is the one statement of them; it
// applies in two places. The simplify pass decides it for every op whose operands
// are IR constants, and the emitter applies that decision (lower/emit/simplify.go);
// during emission the same rule also
// runs on operands that become constant only there (coordinates: a fragment's
// row, a run's column), which no pass before emit can see.

// simplifyOps is the simplify pass.
//
// Requires: a legalized kernel.
// Guarantees: the record's rules hold, for every binary op whose simplification its IR
// constant operands already decide, that rule (decision.SimplifyRule); emit applies it
// instead of an instruction, and the check after emit confirms that the emitted
// operands agree. The IR is unchanged; -after simplify annotates the ops.
func simplifyOps(f *fn) decision.SimplifyRecord {
	rec := decision.SimplifyRecord{Rules: map[*ir.Op]decision.Rule{}}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if !o.Kind.Class().Binary {
			return
		}
		r := decision.SimplifyRule(o.Kind, o.Args[0].Type.Elem, irConstInt(o.Args[0]), irConstInt(o.Args[1]))
		if r.Kind != decision.NoRule {
			rec.Rules[o] = r
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
