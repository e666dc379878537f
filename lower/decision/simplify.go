package decision

import (
	"fmt"
	"math"

	"github.com/ptxgen/ptxgen/ir"
)

// RuleKind is how a binary op simplifies (lower/simplify.go says which rules
// there are and where they apply).
type RuleKind uint8

const (
	NoRule    RuleKind = iota
	RuleFold           // the result is the constant value
	RuleKeepA          // the result is operand a (x+0, x-0, x*1, x/1)
	RuleKeepB          // the result is operand b (0+x, 1*x)
	RuleShift          // division or remainder by the power of two value: shifts
	RuleMagic          // i32 division or remainder by value: a magic multiplication
)

// Rule is one simplification of a binary op.
type Rule struct {
	Kind  RuleKind
	Value int64
}

func (r Rule) String() string {
	switch r.Kind {
	case RuleFold:
		return fmt.Sprintf("folds to %d", r.Value)
	case RuleKeepA:
		return "is its first operand"
	case RuleKeepB:
		return "is its second operand"
	case RuleShift:
		return fmt.Sprintf("by %d: shifts", r.Value)
	case RuleMagic:
		return fmt.Sprintf("by %d: magic multiplication", r.Value)
	}
	return "no rule"
}

// SimplifyRule is the rule for binary op k on elem with operands a and b, each
// its integer value when constant, else nil.
func SimplifyRule(k ir.OpKind, elem ir.Elem, a, b *int64) Rule {
	if a != nil && b != nil {
		if c, ok := foldInt(k, *a, *b); ok {
			return Rule{RuleFold, c}
		}
	}
	switch {
	case b != nil && *b == 0 && (k == ir.OpAdd || k == ir.OpSub):
		return Rule{Kind: RuleKeepA}
	case a != nil && *a == 0 && k == ir.OpAdd:
		return Rule{Kind: RuleKeepB}
	case b != nil && *b == 1 && (k == ir.OpMul || k == ir.OpDiv):
		return Rule{Kind: RuleKeepA}
	case a != nil && *a == 1 && k == ir.OpMul:
		return Rule{Kind: RuleKeepB}
	}
	if b != nil && (elem == ir.I32 || elem == ir.I64) && (k == ir.OpDiv || k == ir.OpRem) && *b > 1 && *b <= math.MaxInt32 {
		if *b&(*b-1) == 0 {
			return Rule{RuleShift, *b}
		}
		if elem == ir.I32 {
			return Rule{RuleMagic, *b}
		}
	}
	return Rule{}
}

// SimplifyRecord is what the simplify pass decided: rules maps each binary op
// whose IR constant operands decide its simplification to that rule.
type SimplifyRecord struct {
	Rules map[*ir.Op]Rule
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
