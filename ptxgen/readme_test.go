package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/gogen"
)

// TestREADMEManifestExample runs the README's manifest example as a reader of a fresh
// clone would, in an empty folder: every line of the block after
// <!-- check-readme: manifest --> (mkdir -p, then go run ./ptxgen ...), and checks that
// the files its comment names exist. It once failed there: build/ did not exist.
func TestREADMEManifestExample(t *testing.T) {
	if testing.Short() {
		t.Skip("generates a two-target decode")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(readme), "<!-- check-readme: manifest -->\n```sh\n")
	if !ok {
		t.Fatal("README.md has no ```sh block after <!-- check-readme: manifest -->")
	}
	block, _, _ = strings.Cut(block, "```")
	t.Chdir(t.TempDir())
	var wrote []string
	for _, line := range strings.Split(strings.TrimSpace(block), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) > 1 && f[0] == "#" && f[1] == "writes":
			for _, n := range f[2:] {
				wrote = append(wrote, strings.TrimSuffix(n, ","))
			}
		case len(f) == 3 && f[0] == "mkdir" && f[1] == "-p":
			if err := os.MkdirAll(f[2], 0o755); err != nil {
				t.Fatal(err)
			}
		case len(f) > 2 && f[0] == "go" && f[1] == "run" && f[2] == "./ptxgen":
			if code, _, errOut := runCLI(f[3:]...); code != 0 {
				t.Fatalf("%s: exit %d: %s", line, code, errOut)
			}
		default:
			t.Fatalf("README manifest example: a line this test cannot run: %q", line)
		}
	}
	if len(wrote) == 0 {
		t.Fatal("the example's comment names no file it writes")
	}
	for _, n := range wrote {
		if _, err := os.Stat(filepath.FromSlash(n)); err != nil {
			t.Errorf("the example says it writes %s: %v", n, err)
		}
	}
}

// TestREADMEVersion: every generator version the README shows is the one gen writes.
func TestREADMEVersion(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ms := regexp.MustCompile(`ptxgen (\d+\.\d+\.\d+)`).FindAllStringSubmatch(string(readme), -1)
	if len(ms) == 0 {
		t.Fatal("README.md shows no generator version (ptxgen X.Y.Z)")
	}
	for _, m := range ms {
		if m[1] != gogen.Version {
			t.Errorf("README.md shows %q; gen writes ptxgen %s", m[0], gogen.Version)
		}
	}
}
