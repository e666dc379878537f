// Package layers holds the test of the module's import floors: each package imports
// only packages of lower floors, so the IR does not stand on the launch plan, the
// runtime does not need the IR, and kernels and the lowering do not go round.
package layers

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/ptxgen/ptxgen/"

// floors ranks the packages: a package may import only packages of lower floors.
var floors = map[string]int{
	"dtype": 0, "target": 0, "mla": 0, "internal/doccheck": 0, "internal/strictjson": 0, "internal/memtest": 0,
	"ptx": 1, "ir": 1,
	// The lowering's three packages beside plan, not above it: the lowering is
	// plan-agnostic (issue 32). The passes (lower) stand on the emitter
	// (lower/emit), which stands on their records (lower/decision).
	"plan": 2, "emu": 2, "golden": 2, "lower/decision": 2, "ptx/internal/genforms": 2,
	"lower/emit": 3,
	"lower":      4, "runtime": 4,
	"kernels": 5, "internal/ptxas": 5, "internal/testkernels": 5,
	"gogen": 6, "check": 6, "bench": 6,
	"ptxgen": 7, "cmd/ptxgen-gpu": 7,
}

// listImports runs go list over the module and returns each package's imports. It
// reads stdout only: go reports on stderr what it downloads into an empty module cache
// ("go: downloading ..."), which is no package.
func listImports(t *testing.T, goCmd, tags string) map[string][]string {
	t.Helper()
	var stderr strings.Builder
	cmd := exec.Command(goCmd, "list", "-tags", tags, "-f", "{{.ImportPath}} {{join .Imports \" \"}}", module+"...")
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -tags %q: %v\n%s%s", tags, err, out, stderr.String())
	}
	imports := map[string][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 0 || !strings.HasPrefix(fields[0], module) {
			t.Fatalf("go list -tags %q printed %q, which names no package of %s", tags, line, module)
		}
		imports[fields[0]] = fields[1:]
	}
	return imports
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
		for path, imps := range listImports(t, goCmd, tags) {
			pkg := strings.TrimPrefix(path, module)
			if strings.HasPrefix(pkg, "examples/") || pkg == "internal/layers" {
				continue
			}
			floor, ok := floors[pkg]
			if !ok {
				t.Errorf("package %s has no floor in layers_test.go", pkg)
				continue
			}
			for _, imp := range imps {
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

// TestLoweringKnowsNoPlan: nothing the lowering depends on, directly or through
// other packages, is the launch plan: which kernels follow which reaches
// lower.CompileProgram as data, the latency rule is the target's.
func TestLoweringKnowsNoPlan(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	for _, tags := range []string{"", "cuda"} {
		var stderr strings.Builder
		cmd := exec.Command(goCmd, "list", "-tags", tags, "-deps", module+"lower")
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -tags %q -deps: %v\n%s%s", tags, err, out, stderr.String())
		}
		deps := strings.Fields(string(out))
		if !slices.Contains(deps, module+"lower") {
			t.Fatalf("go list -tags %q -deps %slower listed %d packages, not lower itself", tags, module, len(deps))
		}
		if slices.Contains(deps, module+"plan") {
			t.Errorf("with tags %q, lower depends on %splan", tags, module)
		}
	}
}

// TestListImportsIgnoresDownloadLines runs listImports through a go that first
// reports "go: downloading ...", as go does on an empty module cache (issue 29: the
// test read those lines as a package named "go:"): only the module's packages come back.
func TestListImportsIgnoresDownloadLines(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command")
	}
	wrapper := filepath.Join(t.TempDir(), "go")
	script := "#!/bin/sh\necho 'go: downloading github.com/google/go-cmp v0.7.0' >&2\nexec " + goCmd + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	imports := listImports(t, wrapper, "")
	if len(imports) == 0 {
		t.Fatal("go list through the wrapper listed no package")
	}
	for path := range imports {
		if !strings.HasPrefix(path, module) {
			t.Errorf("listImports returned %q, which is not a package of %s", path, module)
		}
	}
}
