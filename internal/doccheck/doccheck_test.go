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
	limitOf := Entry{Text: "ptxgen: check -from: needs 8 EiB, more than the limit of 11.8 GiB (50% of this machine's memory); the largest: y"}
	if !limitOf.Printed("ptxgen: check -from: needs 8 EiB, more than the limit of 3.9 GiB (50% of this machine's memory); the largest: y") || limitOf.Printed("ptxgen: check -from: needs 8 EiB, more than the limit of 3.9 GiB (50% of this machine's memory); the largest: x") {
		t.Errorf("check -from's host-memory limit is not set aside, or more than it is")
	}
}

// TestShellWords: quotes as sh takes them, bash's $'...' with its escapes included (a
// page writes an -args value holding a newline so).
func TestShellWords(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{`ptxgen dump -from ''`, []string{"ptxgen", "dump", "-from", ""}},
		{`ptxgen gen -precision "" -o 'a b'`, []string{"ptxgen", "gen", "-precision", "", "-o", "a b"}},
		{`ptxgen check -args $'alpha=1,n=1,a\nb=2'`, []string{"ptxgen", "check", "-args", "alpha=1,n=1,a\nb=2"}},
		{`x $'a\tb\\c\'d'e $5`, []string{"x", "a\tb\\c'de", "$5"}},
	} {
		got, err := ShellWords(c.in)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("ShellWords(%q) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
	for _, in := range []string{`a 'b`, `a $'b`, `a $'b\`, `a $'\x'`} {
		if got, err := ShellWords(in); err == nil {
			t.Errorf("ShellWords(%q) = %q, want an error", in, got)
		}
	}
}
