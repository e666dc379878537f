package ir

import "testing"

// TestOpClasses: the classes are consistent (binary ops are elementwise with two
// operands, commutative ops are binary) and the verifier enforces the arity.
func TestOpClasses(t *testing.T) {
	for k, c := range opClasses {
		if c.Binary && (!c.Elementwise || c.Arity != 2) {
			t.Errorf("%s: binary but %+v", k, c)
		}
		if c.Commutative && !c.Binary {
			t.Errorf("%s: commutative but not binary", k)
		}
	}
	if OpSub.Class().Commutative || !OpMax.Class().Commutative || OpDot.IsElementwise() || !OpCast.IsElementwise() {
		t.Error("sub, max, dot or cast classified wrongly")
	}
	if c := OpKind("frobnicate").Class(); c.Arity != -1 || c.Elementwise {
		t.Errorf("unknown kind: %+v", c)
	}
	// An op with the wrong operand count is rejected with the arity from the table.
	b := NewBuilder("k")
	x := b.ConstInt(1, ScalarOf(I32))
	b.Add(x, x)
	k, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	k.Body.Ops[len(k.Body.Ops)-1].Args = k.Body.Ops[len(k.Body.Ops)-1].Args[:1]
	if err := Verify(k); err == nil {
		t.Error("add with one operand verifies")
	}
}
