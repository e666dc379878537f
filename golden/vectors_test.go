package golden

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
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

// TestLoadVectorsRefuses: meta.json values past memory, names outside the folder, a
// FIFO and a file of the wrong size are refused before anything large is read.
func TestLoadVectorsRefuses(t *testing.T) {
	meta := func(t, k int, cache string) string {
		return fmt.Sprintf(`{"kernel":"mla_decode","T":%d,"H":1,"nope":1,"rope":0,"cache":"bf16","segments":[{"K":%d,"page_size":1,"page_stride":2,"pages":1,"cache":%q,"idx":"i"}],"valid_candidates_per_row":[1]}`, t, k, cache)
	}
	for _, c := range []struct {
		name, meta, want string
		fifo             bool
	}{
		{"huge T x K", meta(1<<40, 1<<40, "c"), "do not fit in memory", false},
		{"path escape", meta(1, 1, "../c"), `file name "../c"`, false},
		{"absolute path", meta(1, 1, "/etc/passwd"), `file name "/etc/passwd"`, false},
		{"same file twice", meta(1, 1, "i"), "names i for two arrays", false},
		{"fifo", meta(1, 1, "c"), "c is not a regular file", true},
		{"wrong size", meta(1, 2, "c"), "i has 4 bytes, want 8", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			write := func(name string, n int) {
				if err := os.WriteFile(filepath.Join(dir, name), make([]byte, n), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			write("meta.json", 0)
			if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(c.meta), 0o644); err != nil {
				t.Fatal(err)
			}
			write("q.bf16", 2)
			write("i", 4)
			write("out_ref.f64", 8)
			write("lse_ref.f64", 8)
			if c.fifo {
				if err := syscall.Mkfifo(filepath.Join(dir, "c"), 0o644); err != nil {
					t.Fatal(err)
				}
			} else {
				write("c", 2)
			}
			done := make(chan error, 1)
			go func() { _, err := LoadVectors(dir); done <- err }()
			select {
			case err := <-done:
				if err == nil || !strings.Contains(err.Error(), c.want) {
					t.Errorf("LoadVectors = %v, want an error containing %q", err, c.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("LoadVectors did not return in 30 s")
			}
		})
	}
	// The same folder, well-formed, loads; with a 1-byte limit it is refused.
	dir := t.TempDir()
	for name, n := range map[string]int{"q.bf16": 2, "c": 2, "i": 4, "out_ref.f64": 8, "lse_ref.f64": 8} {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(meta(1, 1, "c")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadVectors(dir); err != nil {
		t.Fatalf("well-formed folder: %v", err)
	}
	if _, err := LoadVectorsLimit(dir, 1); err == nil || !strings.Contains(err.Error(), "more than 1 bytes") {
		t.Errorf("LoadVectorsLimit(1) = %v, want the limit named", err)
	}
}

// TestLoadVectorsRefusesLinks: a file of the folder that is a symbolic link (here to a
// file of the right size outside it) is refused, never followed.
func TestLoadVectorsRefusesLinks(t *testing.T) {
	src := filepath.Join(vectorsDir, "h4_sink_edges")
	for _, name := range []string{"meta.json", "idx0.i32"} {
		dir := t.TempDir()
		ents, err := os.ReadDir(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range ents {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			target := filepath.Join(dir, e.Name())
			if e.Name() == name {
				target = filepath.Join(t.TempDir(), name)
				if err := os.Symlink(target, filepath.Join(dir, name)); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(target, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := LoadVectors(dir); err == nil || !strings.Contains(err.Error(), name+" is a symbolic link") {
			t.Errorf("%s a link out of the folder: LoadVectors = %v, want it refused", name, err)
		}
	}
}

// copyVectorFolder copies a shared vector folder to a temporary one, with edit applied
// to each file's bytes by name.
func copyVectorFolder(t *testing.T, name string, edit func(file string, b []byte) []byte) string {
	t.Helper()
	src := filepath.Join(vectorsDir, name)
	dir := t.TempDir()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), edit(e.Name(), b), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestLoadVectorsRefusesNonFinite: a NaN or an infinity in the reference outputs is
// refused at load naming the file and the element (it used to fail the kernel's
// comparison, blaming the kernel), except lse's +Inf for a row without a valid
// candidate, which is what the reference gives there.
func TestLoadVectorsRefusesNonFinite(t *testing.T) {
	const folder = "h8_swa_only_empty_row" // row 1 has no valid candidate
	v, err := LoadVectors(filepath.Join(vectorsDir, folder))
	if err != nil {
		t.Fatal(err)
	}
	empty, full := -1, -1
	for row, n := range v.ValidPerRow {
		if n == 0 && empty < 0 {
			empty = row
		}
		if n > 0 && full < 0 {
			full = row
		}
	}
	if empty < 0 || full < 0 || !math.IsInf(v.LSE[empty*v.Config.H], 1) {
		t.Fatalf("%s: want a row without valid candidates (lse +Inf) and one with: counts %v", folder, v.ValidPerRow)
	}
	H, D := v.Config.H, v.Config.D()
	outAt := (full*H+1)*D + 3 // row full, head 1, element 3
	for _, c := range []struct {
		file  string
		index int
		value float64
		want  string
	}{
		{"out_ref.f64", outAt, math.NaN(), fmt.Sprintf("out_ref.f64 element %d ([%d 1 3] of [T H D]) is NaN: want a finite number", outAt, full)},
		{"out_ref.f64", outAt, math.Inf(1), fmt.Sprintf("out_ref.f64 element %d ([%d 1 3] of [T H D]) is +Inf: want a finite number", outAt, full)},
		{"lse_ref.f64", full*H + 2, math.NaN(), fmt.Sprintf("lse_ref.f64 element %d ([%d 2] of [T H]) is NaN", full*H+2, full)},
		{"lse_ref.f64", full*H + 2, math.Inf(-1), fmt.Sprintf("lse_ref.f64 element %d ([%d 2] of [T H]) is -Inf", full*H+2, full)},
		{"lse_ref.f64", full*H + 2, math.Inf(1), fmt.Sprintf("lse_ref.f64 element %d ([%d 2] of [T H]) is +Inf: want a finite number (+Inf only in a row without valid candidates; row %d has", full*H+2, full, full)},
		{"lse_ref.f64", empty * H, 0.5, fmt.Sprintf("lse_ref.f64 element %d ([%d 0] of [T H]) is 0.5: want +Inf (row %d has no valid candidate", empty*H, empty, empty)},
	} {
		dir := copyVectorFolder(t, folder, func(file string, b []byte) []byte {
			if file == c.file {
				binary.LittleEndian.PutUint64(b[8*c.index:], math.Float64bits(c.value))
			}
			return b
		})
		if _, err := LoadVectors(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s[%d] = %v: LoadVectors = %v, want an error containing %q", c.file, c.index, c.value, err, c.want)
		}
	}
}

// TestLoadVectorsStrictJSON: meta.json is read strictly (internal/strictjson): a key
// of another case is not taken for its field ("t" was read as T), null is not a
// value ("sm_scale": null was 0, the default scale; "sink": null was false), and
// numbers are not quoted.
func TestLoadVectorsStrictJSON(t *testing.T) {
	for _, c := range []struct{ from, to, want string }{
		{`"T": 2`, `"t": 2`, `unknown key t: keys are case-sensitive, did you mean "T"?`},
		{`"sink": true`, `"sink": null`, "sink is null: want true or false"},
		{`"sm_scale": 0.04419417382415922`, `"sm_scale": null`, "sm_scale is null: want a number"},
		{`"K": 32`, `"K": "32"`, `].K is the string "32": want an integer`},
		{`"T": 2`, `"T": 2, "T": 2`, "T is given twice"},
	} {
		dir := copyVectorFolder(t, "h4_sink_edges", func(file string, b []byte) []byte {
			if file == "meta.json" {
				s := strings.Join(strings.Fields(string(b)), " ")
				if !strings.Contains(s, c.from) {
					t.Fatalf("meta.json lacks %q: %s", c.from, s)
				}
				return []byte(strings.Replace(s, c.from, c.to, 1))
			}
			return b
		})
		if _, err := LoadVectors(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("meta.json with %s: LoadVectors = %v, want an error containing %q", c.to, err, c.want)
		}
	}
}

// TestLoadKernelVectorsStrictJSON: a kernel vector folder's meta.json likewise:
// "FORMAT" passed DisallowUnknownFields, and a quoted argument was read as a number.
func TestLoadKernelVectorsStrictJSON(t *testing.T) {
	for _, c := range []struct{ meta, want string }{
		{`{"FORMAT": "ptxgen-kernel-vectors", "version": 1}`, `unknown key FORMAT: keys are case-sensitive, did you mean "format"?`},
		{`{"format": "ptxgen-kernel-vectors", "version": 1, "Args": {"n": 3}}`, `did you mean "args"?`},
		{`{"format": "ptxgen-kernel-vectors", "version": 1, "args": {"n": "1000"}}`, `args.n is the string "1000": want a number`},
		{`{"format": "ptxgen-kernel-vectors", "version": null}`, "version is null: want an integer"},
		{`{"format": "ptxgen-kernel-vectors", "version": 1, "args": {"n": null}}`, "meta.json: json: args.n is null: want a number"},
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "meta.json"), []byte(c.meta), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadKernelVectorsMeta(dir); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("meta.json %s: %v, want an error containing %q", c.meta, err, c.want)
		}
	}
}
