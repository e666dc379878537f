package lower

import (
	"os"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/target"
)

func TestSimplifyRule(t *testing.T) {
	c := func(v int64) *int64 { return &v }
	cases := []struct {
		k    ir.OpKind
		elem ir.Elem
		a, b *int64
		want rule
	}{
		{ir.OpMul, ir.I32, c(6), c(7), rule{ruleFold, 42}},
		{ir.OpDiv, ir.I32, c(7), c(0), rule{}}, // division by zero is left to the hardware
		{ir.OpAdd, ir.I32, nil, c(0), rule{kind: ruleKeepA}},
		{ir.OpSub, ir.I64, nil, c(0), rule{kind: ruleKeepA}},
		{ir.OpSub, ir.I64, c(0), nil, rule{}}, // 0 - x is a negation, not x
		{ir.OpAdd, ir.I32, c(0), nil, rule{kind: ruleKeepB}},
		{ir.OpMul, ir.I32, c(1), nil, rule{kind: ruleKeepB}},
		{ir.OpDiv, ir.I32, nil, c(1), rule{kind: ruleKeepA}},
		{ir.OpDiv, ir.I32, nil, c(64), rule{ruleShift, 64}},
		{ir.OpRem, ir.I64, nil, c(2), rule{ruleShift, 2}},
		{ir.OpDiv, ir.I32, nil, c(7), rule{ruleMagic, 7}},
		{ir.OpDiv, ir.I64, nil, c(7), rule{}}, // no i64 magic: div.s64 stays
		{ir.OpDiv, ir.I32, nil, c(-4), rule{}},
		{ir.OpShl, ir.I32, nil, c(3), rule{}},
	}
	for _, tc := range cases {
		if got := simplifyRule(tc.k, tc.elem, tc.a, tc.b); got != tc.want {
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
	got := map[string]rule{}
	for o, r := range f.simplify.rules {
		got[o.Result().Name] = r
	}
	for name, want := range map[string]rule{"q": {ruleMagic, 7}, "r": {ruleShift, 8}, "h": {ruleShift, 2}} {
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
