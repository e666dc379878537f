package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/gogen"
)

// TestPrecisionThreaded: -precision bf16p reaches every output of the
// generator: dump -plan's variants, the PTX (one P·V mma pass instead of two:
// fewer mma.sync), the manifest's families, the Go constant and gen's
// reproducing command; exact, the default, writes no -precision into the command.
func TestPrecisionThreaded(t *testing.T) {
	t.Setenv("GOPACKAGE", "")
	base := []string{"-heads", "16", "-k0", "64", "-k1", "0", "-target", "sm_90"}
	code, plan, errOut := runCLI(append([]string{"dump", "-plan", "-precision", "bf16p"}, base...)...)
	if code != 0 || !strings.Contains(plan, "P in one bf16 term (bf16p)") || strings.Contains(plan, "hi + lo") {
		t.Errorf("dump -plan -precision bf16p: exit %d %s\n%s", code, errOut, plan)
	}
	mmas := map[string]int{}
	for _, p := range []string{"exact", "bf16p"} {
		code, ptx, errOut := runCLI(append([]string{"dump", "-precision", p}, base...)...)
		if code != 0 {
			t.Fatalf("dump -precision %s: exit %d: %s", p, code, errOut)
		}
		mmas[p] = strings.Count(ptx, "mma.sync")
	}
	if mmas["bf16p"] == 0 || mmas["bf16p"] >= mmas["exact"] {
		t.Errorf("mma.sync in the PTX: exact %d, bf16p %d (bf16p drops P's lo term)", mmas["exact"], mmas["bf16p"])
	}

	dir := t.TempDir()
	for _, p := range []string{"exact", "bf16p"} {
		out, mf := filepath.Join(dir, p+"_gen.go"), filepath.Join(dir, p+".json")
		args := []string{"gen", "-heads", "16", "-k1", "0", "-targets", "sm_90", "-pkg", "p", "-o", out, "-manifest", mf}
		if p != "exact" {
			args = append(args, "-precision", p)
		}
		if code, _, errOut := runCLI(args...); code != 0 {
			t.Fatalf("gen -precision %s: exit %d: %s", p, code, errOut)
		}
		data, _ := os.ReadFile(mf)
		man, err := gogen.ParseManifest(data)
		if err != nil {
			t.Fatal(err)
		}
		wantDesc := map[string]string{"exact": "P = hi + lo in bf16", "bf16p": "P in one bf16 term"}[p]
		if len(man.Targets) != 1 || man.Targets[0].Plan == nil || len(man.Targets[0].Plan.Families) == 0 {
			t.Fatalf("%s: manifest without a plan's families: %+v", p, man.Targets)
		}
		for _, f := range man.Targets[0].Plan.Families {
			if !strings.Contains(f.Precision, wantDesc) {
				t.Errorf("%s: manifest family precision %q, want %q", p, f.Precision, wantDesc)
			}
		}
		if got := strings.Contains(man.Command, "-precision bf16p"); got != (p == "bf16p") {
			t.Errorf("%s: manifest command %q", p, man.Command)
		}
		goSrc, _ := os.ReadFile(out)
		if !strings.Contains(string(goSrc), `MLADecodePrecision = "`+p+`"`) {
			t.Errorf("%s: the Go file has no MLADecodePrecision = %q", p, p)
		}
	}
}
