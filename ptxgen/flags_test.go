package main

import (
	"strings"
	"testing"
)

// TestUnknownFlagListsAccepted: an unknown flag is refused in one line that names it and
// lists the flags the command (with its kernel) accepts; it used to say only "flag
// provided but not defined".
func TestUnknownFlagListsAccepted(t *testing.T) {
	for _, c := range []struct {
		args      []string
		bad       string   // the unknown flag
		name      string   // the command as the message names it
		accepted  []string // some of the flags it must list
		notListed []string // flags of other commands or kernels
	}{
		{[]string{"dump", "-frobnicate"}, "-frobnicate", "ptxgen dump -kernel mla_decode", []string{"-after", "-heads", "-kernel", "-plan", "-target", "-tokens"}, []string{"-pkg", "-m"}},
		{[]string{"dump", "-kernel", "gemm", "-heads", "3"}, "-heads", "ptxgen dump -kernel gemm", []string{"-k", "-m", "-n", "-out", "-target"}, []string{"-heads"}},
		{[]string{"gen", "-kernel", "copy", "-package", "p"}, "-package", "ptxgen gen -kernel copy", []string{"-manifest", "-o", "-pkg", "-rows", "-targets", "-type"}, []string{"-tokens"}},
		{[]string{"check", "-emu", "-kernel", "mma_loop", "--gpus=2"}, "-gpus", "ptxgen check -kernel mma_loop", []string{"-ctas", "-emu", "-iters", "-seed"}, []string{"-rows"}},
	} {
		code, out, errOut := runCLI(c.args...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%q: exit %d, stdout %q, stderr %q; want 2 and one line", c.args, code, out, errOut)
			continue
		}
		bad := c.bad
		if !strings.Contains(errOut, bad+" is not a flag of "+c.name) {
			t.Errorf("%q: error %q does not name %s and %q", c.args, errOut, bad, c.name)
		}
		_, list, _ := strings.Cut(errOut, "want one of ")
		flags := strings.Fields(strings.NewReplacer(",", " ", "(", " ").Replace(list))
		has := map[string]bool{}
		for _, f := range flags {
			has[f] = true
		}
		for _, f := range c.accepted {
			if !has[f] {
				t.Errorf("%q: the list %q lacks %s", c.args, list, f)
			}
		}
		for _, f := range append(c.notListed, bad) {
			if has[f] {
				t.Errorf("%q: the list %q holds %s, which the command does not take", c.args, list, f)
			}
		}
	}
}
