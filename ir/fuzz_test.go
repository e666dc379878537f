package ir

import (
	"testing"
)

// FuzzParse: a kernel Parse accepts (it is verified) prints to text that parses
// back and prints the same, and so does a program ParseProgram accepts; nothing
// panics. Seeds: testdata/fuzz/FuzzParse (every op, the kernels' IR, programs).
func FuzzParse(f *testing.F) {
	f.Add(Print(everyOp(f)))
	f.Add("kernel k() grid(1, 1, 1) warps 1 {\n}\n")
	f.Add(PrintProgram(twoKernels(f)))
	f.Fuzz(func(t *testing.T, src string) {
		if p, err := ParseProgram(src); err == nil {
			text := PrintProgram(p)
			p2, err := ParseProgram(text)
			if err != nil {
				t.Fatalf("ParseProgram accepted %q, but not what it prints:\n%s\nerror: %v", src, text, err)
			}
			if again := PrintProgram(p2); again != text {
				t.Fatalf("program print/parse is not a fixed point for %q:\nfirst:\n%s\nsecond:\n%s", src, text, again)
			}
		}
		k, err := Parse(src)
		if err != nil {
			return
		}
		text := Print(k)
		k2, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse accepted %q, but not what it prints:\n%s\nerror: %v", src, text, err)
		}
		if again := Print(k2); again != text {
			t.Fatalf("print/parse is not a fixed point for %q:\nfirst:\n%s\nsecond:\n%s", src, text, again)
		}
	})
}
