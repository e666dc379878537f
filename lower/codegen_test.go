package lower

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/internal/ptxas"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

var update = flag.Bool("update", false, "rewrite the .ptx files of lower/testdata/codegen from the current generator")

// TestCodegen compiles each kernel in testdata/codegen/*.ir for the target its
// "// TARGET:" line names and matches the PTX against its directives:
//
//	// CHECK: s         s occurs, after the previous CHECK's match (in order)
//	// CHECK-NOT: s     s occurs nowhere in the PTX
//	// CHECK-COUNT: n s s occurs exactly n times
//
// s is a plain substring. Beside each case, NAME.ptx holds the PTX it is
// matched against (reviewable; rewritten with -update, compared otherwise).
func TestCodegen(t *testing.T) {
	cases, err := filepath.Glob("testdata/codegen/*.ir")
	if err != nil || len(cases) == 0 {
		t.Fatalf("no codegen cases: %v", err)
	}
	for _, path := range cases {
		t.Run(strings.TrimSuffix(filepath.Base(path), ".ir"), func(t *testing.T) {
			src, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			c, err := parseCodegenCase(string(src))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			k, err := ir.Parse(string(src))
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			res, err := Compile(k, target.MustLookup(c.target), Options{Check: true})
			if err != nil {
				t.Fatalf("%s: %v", path, err)
			}
			got := res.Kernel.Module.Print()
			for _, e := range c.match(got) {
				t.Errorf("%s (%s): %s", path, c.target, e)
			}
			golden := strings.TrimSuffix(path, ".ir") + ".ptx"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./lower -run TestCodegen -update)", err)
			}
			if string(want) != got {
				t.Errorf("%s: PTX differs from %s (an intended change: go test ./lower -run TestCodegen -update)", path, golden)
			}
		})
	}
}

type codegenCase struct {
	target string
	checks []codegenCheck
}

type codegenCheck struct {
	kind  string // "CHECK", "CHECK-NOT", "CHECK-COUNT"
	count int
	text  string
	line  int
}

func parseCodegenCase(src string) (*codegenCase, error) {
	c := &codegenCase{}
	for i, line := range strings.Split(src, "\n") {
		line = strings.TrimSpace(line)
		rest, ok := strings.CutPrefix(line, "//")
		if !ok {
			continue
		}
		rest = strings.TrimSpace(rest)
		kind, arg, ok := strings.Cut(rest, ":")
		if !ok {
			continue
		}
		arg = strings.TrimSpace(arg)
		switch kind {
		case "TARGET":
			c.target = arg
		case "CHECK", "CHECK-NOT":
			c.checks = append(c.checks, codegenCheck{kind: kind, text: arg, line: i + 1})
		case "CHECK-COUNT":
			n, text, _ := strings.Cut(arg, " ")
			count, err := strconv.Atoi(n)
			if err != nil {
				return nil, fmt.Errorf("line %d: CHECK-COUNT wants a count and a string, got %q", i+1, arg)
			}
			c.checks = append(c.checks, codegenCheck{kind: kind, count: count, text: strings.TrimSpace(text), line: i + 1})
		}
	}
	if c.target == "" {
		return nil, fmt.Errorf("no // TARGET: line")
	}
	if len(c.checks) == 0 {
		return nil, fmt.Errorf("no CHECK lines")
	}
	return c, nil
}

// match returns one message per failed directive.
func (c *codegenCase) match(ptx string) []string {
	var errs []string
	pos := 0
	for _, ch := range c.checks {
		switch ch.kind {
		case "CHECK":
			i := strings.Index(ptx[pos:], ch.text)
			if i < 0 {
				where := "after the previous CHECK"
				if strings.Contains(ptx, ch.text) {
					where += " (it occurs earlier: out of order)"
				}
				errs = append(errs, fmt.Sprintf("line %d: CHECK %q not found %s", ch.line, ch.text, where))
				continue
			}
			pos += i + len(ch.text)
		case "CHECK-NOT":
			if i := strings.Index(ptx, ch.text); i >= 0 {
				errs = append(errs, fmt.Sprintf("line %d: CHECK-NOT %q found: %q", ch.line, ch.text, lineAt(ptx, i)))
			}
		case "CHECK-COUNT":
			if n := strings.Count(ptx, ch.text); n != ch.count {
				errs = append(errs, fmt.Sprintf("line %d: CHECK-COUNT %q: %d occurrences, want %d", ch.line, ch.text, n, ch.count))
			}
		}
	}
	return errs
}

func lineAt(s string, i int) string {
	start := strings.LastIndex(s[:i], "\n") + 1
	end := strings.Index(s[i:], "\n")
	if end < 0 {
		return strings.TrimSpace(s[start:])
	}
	return strings.TrimSpace(s[start : i+end])
}

// TestCodegenMatcher: the directives fail when they should.
func TestCodegenMatcher(t *testing.T) {
	c, err := parseCodegenCase("// TARGET: sm_90\n// CHECK: b\n// CHECK: a\n// CHECK-NOT: z\n// CHECK-COUNT: 2 a\n")
	if err != nil {
		t.Fatal(err)
	}
	if errs := c.match("a b a"); len(errs) != 0 {
		t.Errorf("a b a: %v", errs)
	}
	for _, bad := range []string{"a b", "b a z a", "a b a a", "b a"} {
		if errs := c.match(bad); len(errs) == 0 {
			t.Errorf("%q passes every directive", bad)
		}
	}
	if _, err := parseCodegenCase("// CHECK: x\n"); err == nil {
		t.Error("a case without a target parses")
	}
}

// TestCodegenAssembles: ptxas 11.8 assembles every codegen case whose target and
// PTX version it knows (up to sm_90 and PTX 7.8) with no warning and no local
// memory.
func TestCodegenAssembles(t *testing.T) {
	ptxas.Require(t)
	cases, _ := filepath.Glob("testdata/codegen/*.ir")
	for _, path := range cases {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		c, err := parseCodegenCase(string(src))
		if err != nil {
			t.Fatal(err)
		}
		if c.target == "sm_120" {
			continue
		}
		text, err := os.ReadFile(strings.TrimSuffix(path, ".ir") + ".ptx")
		if err != nil {
			t.Fatal(err)
		}
		version := ""
		fmt.Sscanf(string(text[strings.Index(string(text), ".version"):]), ".version %s", &version)
		if v, err := ptx.ParseVersion(version); err != nil || v > 78 {
			continue
		}
		res, err := ptxas.Assemble(string(text), c.target)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if len(res.Warnings) > 0 || res.LocalBytes > 0 {
			t.Errorf("%s: warnings %q, %d bytes of local memory", path, res.Warnings, res.LocalBytes)
		}
	}
}
