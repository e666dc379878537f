package doccheck

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	page := filepath.Join(t.TempDir(), "page.md")
	text := "# title\n\n" +
		"- `ptxgen dump -x 1` → 2: ptxgen: -x 1: want 0 (was 0: ignored)\n" +
		"- `ptxgen dump -from ''` (a note) → 2: ptxgen: -from \"\": want a file\n" +
		"- `ptxgen gen -pkg p -o x.go -precision \"\"` → 0 (exited 1 before)\n" +
		"- `ptxgen-gpu bench -bw NaN` → 2: ptxgen-gpu: want \\|x\\| <= 1\n" +
		"- `ptx.Parse(\"x\")` → error: no\n"
	if err := os.WriteFile(page, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	es, err := Parse(page, "ptxgen")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 3 {
		t.Fatalf("%d entries, want 3: %+v", len(es), es)
	}
	if e := es[0]; e.Line != 3 || !slices.Equal(e.Args, []string{"dump", "-x", "1"}) || e.Code != 2 || !e.Printed("ptxgen: -x 1: want 0") || e.Printed("ptxgen: -x 1") || e.Printed("ptxgen: -x 1: want 0 or 1") {
		t.Errorf("entry 0: %+v", e)
	}
	if e := es[1]; !slices.Equal(e.Args, []string{"dump", "-from", ""}) || !e.Printed(`ptxgen: -from "": want a file`) {
		t.Errorf("entry 1: %+v", e)
	}
	if e := es[2]; !slices.Equal(e.Args, []string{"gen", "-pkg", "p", "-o", "x.go", "-precision", ""}) || e.Code != 0 || !e.Describes("ptxgen") {
		t.Errorf("entry 2: %+v", e)
	}
	gpu, err := Parse(page, "ptxgen-gpu")
	if err != nil || len(gpu) != 1 || gpu[0].Text != "ptxgen-gpu: want |x| <= 1" {
		t.Errorf("ptxgen-gpu entries: %+v, %v", gpu, err)
	}
	limit := Entry{Text: "ptxgen: too big, the limit is 11.8 GiB (50% of this machine's memory)"}
	if !limit.Printed("ptxgen: too big, the limit is 61.2 GiB (50% of this machine's memory)") {
		t.Errorf("the host-memory limit is not set aside")
	}
}
