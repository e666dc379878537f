package emit_test

import (
	"os"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/lower/emit"
	"github.com/ptxgen/ptxgen/target"
)

// TestKernelCarriesOutTheRecords: the emitter writes what the passes' records say
// and decides nothing itself. emit.Kernel on lower.Decide's set gives the PTX that
// Compile dumps after emit; changing one record (a load's copy width and a store's
// width in the budget's, the register budget) changes what that record decides and
// nothing else.
func TestKernelCarriesOutTheRecords(t *testing.T) {
	src, err := os.ReadFile("../testdata/codegen/cp_async_widths.ir")
	if err != nil {
		t.Fatal(err)
	}
	k, err := ir.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	tg := target.MustLookup("sm_90")
	d, err := lower.Decide(k, tg, lower.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, points, err := emit.Kernel(d)
	if err != nil {
		t.Fatal(err)
	}
	want, err := lower.Compile(k, tg, lower.Options{After: "emit"})
	if err != nil {
		t.Fatal(err)
	}
	text := out.Module.Print()
	if text != want.Dump {
		t.Fatalf("emit.Kernel on Decide's set differs from Compile's dump after emit:\n%s\nwant\n%s", text, want.Dump)
	}
	if len(points) == 0 || strings.Count(text, "// sync: ") != len(points) {
		t.Errorf("%d sync points returned, %d in the body", len(points), strings.Count(text, "// sync: "))
	}

	// %at (16x32 bf16, a div-16 pointer) moves 16-byte chunks, 2 per thread;
	// recorded as 4-byte chunks it takes 8 per thread, beside %ct's 8.
	var at, storeAt *ir.Op
	ir.WalkOps(d.Kernel.Body, func(o *ir.Op) {
		if len(o.Results) == 1 && o.Result().Name == "at" {
			at = o
		}
		if o.Kind == ir.OpStore && o.Args[len(o.Args)-1].Name == "at" {
			storeAt = o
		}
	})
	// %at goes back out in whole 16-byte runs (2 per thread); recorded as element
	// stores, its 512 elements take one st.global.b16 each (16 per thread).
	if storeAt == nil || d.Budget.StoreBytes[storeAt] != 16 {
		t.Fatalf("the budget records %v bytes a store for %%at's store; want 16", d.Budget.StoreBytes[storeAt])
	}
	d.Budget.StoreBytes[storeAt] = 2
	if at == nil || d.Budget.CopyBytes[at] != 16 {
		t.Fatalf("the budget records %v bytes a copy for %%at; want 16", d.Budget.CopyBytes[at])
	}
	d.Budget.CopyBytes[at] = 4
	d.Budget.MaxNReg = 96
	out, _, err = emit.Kernel(d)
	if err != nil {
		t.Fatal(err)
	}
	changed := out.Module.Print()
	for _, c := range []struct {
		text          string
		before, after int
	}{{"], 16, 16;", 2, 0}, {"], 8, 8;", 4, 4}, {"], 4, 4;", 8, 16}, {".maxnreg 96", 0, 1}, {"st.global.v4.b32", 6, 4}, {"st.global.b16", 0, 16}} {
		if b, a := strings.Count(text, c.text), strings.Count(changed, c.text); b != c.before || a != c.after {
			t.Errorf("%q: %d times, then %d after the records changed; want %d, then %d", c.text, b, a, c.before, c.after)
		}
	}
}
