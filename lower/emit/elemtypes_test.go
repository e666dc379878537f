package emit

import (
	"testing"

	"github.com/ptxgen/ptxgen/ir"
)

// TestElemTypes: every element type has a register file that is declared, and
// every suffix set.
func TestElemTypes(t *testing.T) {
	files := map[string]bool{}
	for _, rf := range regFiles {
		files[rf.prefix] = true
	}
	for e := ir.I1; e <= ir.F32; e++ {
		et := elemType(e)
		if !files[et.reg] || et.compute == "" || et.bits == "" || et.mem == "" {
			t.Errorf("%s: %+v", e, et)
		}
	}
	if elemType(ir.Elem(200)) != elemTypes[ir.Invalid] {
		t.Error("an unknown element type does not fall back to the 32-bit defaults")
	}
}
