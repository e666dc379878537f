package lower

import (
	"os"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/target"
)

func TestSimplifyRule(t *testing.T) {
	c := func(v int64) *int64 { return &v }
	cases := []struct {
		k    ir.OpKind
		elem ir.Elem
		a, b *int64
		want decision.Rule
	}{
		{ir.OpMul, ir.I32, c(6), c(7), decision.Rule{Kind: decision.RuleFold, Value: 42}},
		{ir.OpDiv, ir.I32, c(7), c(0), decision.Rule{}}, // division by zero is left to the hardware
		{ir.OpAdd, ir.I32, nil, c(0), decision.Rule{Kind: decision.RuleKeepA}},
		{ir.OpSub, ir.I64, nil, c(0), decision.Rule{Kind: decision.RuleKeepA}},
		{ir.OpSub, ir.I64, c(0), nil, decision.Rule{}}, // 0 - x is a negation, not x
		{ir.OpAdd, ir.I32, c(0), nil, decision.Rule{Kind: decision.RuleKeepB}},
		{ir.OpMul, ir.I32, c(1), nil, decision.Rule{Kind: decision.RuleKeepB}},
		{ir.OpDiv, ir.I32, nil, c(1), decision.Rule{Kind: decision.RuleKeepA}},
		{ir.OpDiv, ir.I32, nil, c(64), decision.Rule{Kind: decision.RuleShift, Value: 64}},
		{ir.OpRem, ir.I64, nil, c(2), decision.Rule{Kind: decision.RuleShift, Value: 2}},
		{ir.OpDiv, ir.I32, nil, c(7), decision.Rule{Kind: decision.RuleMagic, Value: 7}},
		{ir.OpDiv, ir.I64, nil, c(7), decision.Rule{}}, // no i64 magic: div.s64 stays
		{ir.OpDiv, ir.I32, nil, c(-4), decision.Rule{}},
		{ir.OpShl, ir.I32, nil, c(3), decision.Rule{}},
	}
	for _, tc := range cases {
		if got := decision.SimplifyRule(tc.k, tc.elem, tc.a, tc.b); got != tc.want {
			t.Errorf("%s.%s: %v, want %v", tc.k, tc.elem, got, tc.want)
		}
	}
}

// TestSimplifyPass: the pass decides the rules of div_const's IR-constant
// divisions, and the dump after it says so.
func TestSimplifyPass(t *testing.T) {
	src, err := os.ReadFile("testdata/codegen/div_const.ir")
	if err != nil {
		t.Fatal(err)
	}
	k, err := ir.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	f := compileTo(t, k, "sm_90", "simplify", Options{})
	got := map[string]decision.Rule{}
	for o, r := range f.Simplify.Rules {
		got[o.Result().Name] = r
	}
	for name, want := range map[string]decision.Rule{"q": {Kind: decision.RuleMagic, Value: 7}, "r": {Kind: decision.RuleShift, Value: 8}, "h": {Kind: decision.RuleShift, Value: 2}} {
		if got[name] != want {
			t.Errorf("%%%s: rule %v, want %v", name, got[name], want)
		}
	}
	res, err := Compile(k, target.MustLookup("sm_90"), Options{After: "simplify"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Dump, "simplify: div by 7: magic multiplication") {
		t.Errorf("dump after simplify does not annotate the division:\n%s", res.Dump)
	}
}
