package ptx

import (
	"testing"
)

// FuzzParse: whatever Parse accepts prints to text that parses back to a module that
// prints the same (Print(Parse(Print(m))) == Print(m)), and nothing panics. Seeds:
// testdata/fuzz/FuzzParse (a generated kernel and header edge cases).
func FuzzParse(f *testing.F) {
	for _, m := range sampleModules() {
		f.Add(m.Print())
	}
	f.Add("//0000000\n.version 0")
	f.Add(".version 7.8\n.target sm_80\n.address_size 64\n")
	f.Fuzz(func(t *testing.T, src string) {
		m, err := Parse(src)
		if err != nil {
			return
		}
		text := m.Print()
		m2, err := Parse(text)
		if err != nil {
			t.Fatalf("Parse accepted %q, but not what it prints:\n%s\nerror: %v", src, text, err)
		}
		if again := m2.Print(); again != text {
			t.Fatalf("print/parse is not a fixed point for %q:\nfirst:\n%s\nsecond:\n%s", src, text, again)
		}
	})
}
