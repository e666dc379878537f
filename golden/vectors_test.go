package golden

import (
	"os"
	"path/filepath"
	"testing"
)

const vectorsDir = "testdata/vectors/mla_decode"

// vectorDirs lists the test-vector folders and fails if there are none, so
// a lost copy cannot pass silently.
func vectorDirs(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(vectorsDir)
	if err != nil {
		t.Fatal(err)
	}
	var dirs []string
	for _, e := range ents {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(vectorsDir, e.Name()))
		}
	}
	if len(dirs) < 5 {
		t.Fatalf("%d vector folders in %s, want the 5 shared cases", len(dirs), vectorsDir)
	}
	return dirs
}

// TestReferenceMatchesVectors checks MLADecode against the independent
// PyTorch float64 outputs: 1e-9 relative (plus 1e-12 absolute for entries
// that cancel to near zero), +Inf LSE rows exactly.
func TestReferenceMatchesVectors(t *testing.T) {
	tol := Tolerance{Abs: 1e-12, Rel: 1e-9, MaxCosDist: 1e-15}
	for _, dir := range vectorDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			v, err := LoadVectors(dir)
			if err != nil {
				t.Fatal(err)
			}
			c := v.Config
			// The loader's reading of len/idx must give meta's valid counts.
			for row, want := range v.ValidPerRow {
				got := 0
				for s := range c.Segments {
					got += len(c.Candidates(v.Inputs, s, row))
				}
				if got != want {
					t.Errorf("row %d: %d valid candidates, meta.json says %d", row, got, want)
				}
			}
			if len(v.ValidPerRow) != c.T {
				t.Errorf("meta.json has %d valid counts, want T = %d", len(v.ValidPerRow), c.T)
			}
			out, lse, err := MLADecode(c, v.Inputs)
			if err != nil {
				t.Fatal(err)
			}
			ro := Compare("out", out, v.Out, []int{c.T, c.H, c.D()}, tol)
			rl := Compare("lse", lse, v.LSE, []int{c.T, c.H}, tol)
			if !ro.OK() || !rl.OK() {
				t.Errorf("reference disagrees with %s:\n%s%s", dir, ro, rl)
			}
			t.Logf("\n%s%s", ro, rl)
		})
	}
}
