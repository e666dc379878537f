// Package layers holds the test of the module's import floors: each package imports
// only packages of lower floors, so the IR does not stand on the launch plan, the
// runtime does not need the IR, and kernels and the lowering do not go round.
package layers

import (
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/ptxgen/ptxgen/"

// floors ranks the packages: a package may import only packages of lower floors.
var floors = map[string]int{
	"dtype": 0, "target": 0, "mla": 0, "internal/strictjson": 0,
	"ptx": 1, "ir": 1,
	"plan": 2, "emu": 2, "golden": 2,
	"lower": 3, "runtime": 3,
	"kernels": 4, "internal/ptxas": 4, "internal/testkernels": 4,
	"gogen": 5, "check": 5, "bench": 5,
	"ptxgen": 6, "cmd/ptxgen-gpu": 6,
}

// TestImportFloors lists the module's packages with go list (the cuda build
// included) and fails on an import at or above the importer's floor, and on a
// package the table does not place.
func TestImportFloors(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	for _, tags := range []string{"", "cuda"} {
		out, err := exec.Command(goCmd, "list", "-tags", tags, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags %q: %v\n%s", tags, err, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			fields := strings.Fields(line)
			pkg := strings.TrimPrefix(fields[0], module)
			if strings.HasPrefix(pkg, "examples/") || pkg == "internal/layers" {
				continue
			}
			floor, ok := floors[pkg]
			if !ok {
				t.Errorf("package %s has no floor in layers_test.go", pkg)
				continue
			}
			for _, imp := range fields[1:] {
				dep, ours := strings.CutPrefix(imp, module)
				if !ours {
					continue
				}
				if f, ok := floors[dep]; ok && f >= floor {
					t.Errorf("%s (floor %d) imports %s (floor %d)", pkg, floor, dep, f)
				}
			}
		}
	}
}
