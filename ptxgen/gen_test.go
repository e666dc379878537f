package main

import (
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptxgen/ptxgen/gogen"
	"github.com/ptxgen/ptxgen/kernels"
)

func TestGen(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "gemm_gen.go")
	code, stdout, errOut := runCLI("gen", "-kernel", "gemm", "-m", "17", "-n", "9", "-k", "33", "-targets", "sm_90,sm_120", "-pkg", "gemm", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if stdout != "" || errOut != "" {
		t.Errorf("gen printed %q / %q, want nothing", stdout, errOut)
	}
	src, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(src), "\n")
	if !regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`).MatchString(first) {
		t.Errorf("header %q is not a generated-code header", first)
	}
	// The canonical command: every configuration flag, targets newest first, -o relative.
	want := `"ptxgen gen -kernel gemm -m 17 -n 9 -k 33 -out bf16 -targets sm_120,sm_90 -pkg gemm -o gemm_gen.go"`
	if !strings.Contains(first, want) {
		t.Errorf("header %q does not record %s", first, want)
	}
	if strings.Contains(first, dir) {
		t.Errorf("header %q holds the absolute output path", first)
	}
	for _, tg := range []string{"sm_120", "sm_90"} {
		if _, err := os.Stat(filepath.Join(dir, "gemm_gen_"+tg+".ptx")); err != nil {
			t.Errorf("no PTX for %s: %v", tg, err)
		}
	}

	// The same configuration spelled differently gives the same bytes and leaves the
	// files untouched.
	st, _ := os.Stat(out)
	code, _, errOut = runCLI("gen", "-kernel=gemm", "-k=33", "-n", "9", "-m", "17", "-targets", "sm_120, sm_90", "-pkg", "gemm", "-o", out)
	if code != 0 {
		t.Fatalf("second run: exit %d: %s", code, errOut)
	}
	src2, _ := os.ReadFile(out)
	if string(src2) != string(src) {
		t.Errorf("regenerating gave different bytes")
	}
	if st2, _ := os.Stat(out); !st2.ModTime().Equal(st.ModTime()) {
		t.Errorf("regenerating rewrote an up-to-date file")
	}
}

func TestGenDefaults(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GOPACKAGE", "kern")
	out := filepath.Join(dir, "k.go")
	code, _, errOut := runCLI("gen", "-kernel", "gemm", "-m", "16", "-target", "sm_80", "-type", "Small", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	src, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"package kern\n", "-targets sm_80 -pkg kern -type Small -o k.go", "type Small struct", "//go:embed k_sm_80.ptx"} {
		if !strings.Contains(string(src), s) {
			t.Errorf("generated file lacks %q", s)
		}
	}
}

func TestGenBadUsage(t *testing.T) {
	t.Setenv("GOPACKAGE", "")
	dir := t.TempDir()
	out := filepath.Join(dir, "x.go")
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"gen", "-pkg", "p"}, []string{"-o is required"}},
		{[]string{"gen", "-o", out}, []string{"-pkg is required"}},
		{[]string{"gen", "-pkg", "p", "-o", filepath.Join(dir, "x.txt")}, []string{"-o", "x.txt", ".go"}},
		{[]string{"gen", "-pkg", "p", "-o", out, "-targets", "sm_90,sm_70"}, []string{"-targets sm_70", "sm_80"}},
		{[]string{"gen", "-pkg", "p", "-o", out, "-targets", "sm_90,sm_90"}, []string{"-targets sm_90,sm_90", "each target once"}},
		{[]string{"gen", "-pkg", "p", "-o", out, "-targets", "sm_90", "-target", "sm_80"}, []string{"-targets or -target"}},
		{[]string{"gen", "-pkg", "p", "-o", out, "-kernel", "gemm", "-m", "0"}, []string{"-m 0"}},
		{[]string{"gen", "-pkg", "p-q", "-o", out, "-kernel", "gemm"}, []string{"package name"}},
		{[]string{"gen", "-pkg", "p", "-type", "lower", "-o", out, "-kernel", "gemm"}, []string{"-type lower", "exported Go identifier"}},
	}
	for _, c := range cases {
		code, stdout, errOut := runCLI(c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", c.args, code, errOut)
		}
		if stdout != "" {
			t.Errorf("%v: wrote to stdout", c.args)
		}
		if n := strings.Count(strings.TrimSpace(errOut), "\n"); n != 0 {
			t.Errorf("%v: error is %d lines, want 1:\n%s", c.args, n+1, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%v: error %q lacks %q", c.args, errOut, w)
			}
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("failed runs left files: %v", entries)
	}
}

// TestGenFlagValueNamedKernel: "-pkg kernel" is -pkg's value; the pre-scan for
// -kernel used to take the next argument ("-o") as the kernel's name.
func TestGenFlagValueNamedKernel(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "k.go")
	code, _, errOut := runCLI("gen", "-pkg", "kernel", "-kernel", "gemm", "-m", "17", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	src, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "package kernel\n") || !strings.Contains(string(src), "-kernel gemm -m 17") {
		t.Errorf("generated file is not package kernel for gemm m=17:\n%.300s", src)
	}
	for _, args := range [][]string{
		{"dump", "-after", "kernel", "-kernel", "gemm"},                       // -after's value
		{"check", "-emu", "-kernel", "gemm", "-m", "3", "-n", "2", "-k", "5"}, // -emu takes no value
		{"dump", "-ir=true", "-kernel=gemm", "-m", "5"},
		{"dump", "--kernel", "gemm", "-m", "5", "-ir"},
	} {
		code, out, errOut := runCLI(args...)
		if args[1] == "-after" {
			if code != 2 || !strings.Contains(errOut, "-after kernel") {
				t.Errorf("%v: exit %d, stderr %q, want -after's value refused", args, code, errOut)
			}
			continue
		}
		if code != 0 || !strings.Contains(out, "gemm") {
			t.Errorf("%v: exit %d, stderr %q, out %.80q", args, code, errOut, out)
		}
	}
}

// TestGenOutputs: -o must name a Go file the go command builds, in an existing
// directory, and never a FIFO or a device (writing one blocks or never ends).
func TestGenOutputs(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.go")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	full := filepath.Join(dir, "full.go")
	if err := os.Symlink("/dev/full", full); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ out, want string }{
		{"/nonexistent/x.go", "existing directory"},
		{filepath.Join(dir, ".go"), "not starting with . or _"},
		{filepath.Join(dir, "_x.go"), "not starting with . or _"},
		{filepath.Join(dir, "x_test.go"), "_test.go"},
		{filepath.Join(dir, "\xa0.go"), "//go:embed"}, // found by FuzzCLI: invalid UTF-8 broke gofmt
		{filepath.Join(dir, "a b.go"), "//go:embed"},
		{filepath.Join(dir, "k*.go"), "//go:embed"},
		{fifo, "named pipe"},
		{full, "symbolic link"},
	} {
		done := make(chan struct{})
		var code int
		var errOut string
		go func() {
			code, _, errOut = runCLI("gen", "-kernel", "gemm", "-pkg", "p", "-o", c.out)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			t.Fatalf("gen -o %s did not return in 30 s", c.out)
		}
		if code != 2 || !strings.Contains(errOut, "-o "+c.out) || !strings.Contains(errOut, c.want) {
			t.Errorf("gen -o %s: exit %d, stderr %q, want 2 and %q", c.out, code, errOut, c.want)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("gen wrote files for refused -o values: %v", ents)
	}
}

// TestWriteFilesRewritesChangesOnly: writeFiles leaves a file that holds its data as it
// is (the same file, so its modification time too) and replaces one that does not; an
// existing file is read up to one byte past the new contents, so a huge or endless one
// (a device) costs nothing.
func TestWriteFilesRewritesChangesOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.go")
	if err := os.WriteFile(path, []byte("abc"), 0o644); err != nil {
		t.Fatal(err)
	}
	previous := "abc"
	for _, data := range []string{"abc", "ab", "abcd", "xyz", "xyz"} {
		before, _ := os.Stat(path)
		if err := writeFiles(dir, []gogen.File{{Name: "x.go", Data: []byte(data)}}); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(path)
		if string(got) != data {
			t.Fatalf("after writing %q the file holds %q", data, got)
		}
		after, _ := os.Stat(path)
		if kept := os.SameFile(before, after); kept != (data == previous) {
			t.Errorf("writing %q over %q: kept the old file %v, want %v", data, previous, kept, data == previous)
		}
		previous = data
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("writeFiles left temporary files: %v", ents)
	}
	if holds("/dev/zero", []byte("a")) {
		t.Errorf("/dev/zero holds %q", "a")
	}
}

// TestWriteFilesReplacesPlantedLink: a symbolic link found at an output name when the
// files are written (planted after gen's checks) is replaced by the file, never
// written through: the file it points to keeps its contents.
func TestWriteFilesReplacesPlantedLink(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "victim.ptx")
	if err := os.WriteFile(outside, []byte("someone else's file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	name := filepath.Join(dir, "k_sm_120.ptx")
	if err := os.Symlink(outside, name); err != nil {
		t.Fatal(err)
	}
	if err := writeFiles(dir, []gogen.File{{Name: "k_sm_120.ptx", Data: []byte("new PTX\n")}}); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(outside); string(got) != "someone else's file\n" {
		t.Errorf("the file the link points to now holds %q", got)
	}
	fi, err := os.Lstat(name)
	if err != nil || !fi.Mode().IsRegular() {
		t.Fatalf("%s is not a regular file: %v, %v", name, fi, err)
	}
	if got, _ := os.ReadFile(name); string(got) != "new PTX\n" {
		t.Errorf("%s holds %q", name, got)
	}
}

// TestGenRemovesDroppedTarget: regenerating with fewer targets removes the PTX files
// of the dropped ones (and says so), but never a file ptxgen did not write.
func TestGenRemovesDroppedTarget(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "g.go")
	if code, _, e := runCLI("gen", "-kernel", "gemm", "-targets", "sm_90,sm_120,sm_80", "-pkg", "g", "-o", out); code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	mine := filepath.Join(dir, "g_sm_86.ptx")
	if err := os.WriteFile(mine, []byte("// my notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI("gen", "-kernel", "gemm", "-targets", "sm_90", "-pkg", "g", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, tg := range []string{"sm_120", "sm_80"} {
		name := filepath.Join(dir, "g_"+tg+".ptx")
		if _, err := os.Stat(name); err == nil {
			t.Errorf("%s is still there after dropping %s", name, tg)
		}
		if !strings.Contains(errOut, "removed "+name) {
			t.Errorf("gen did not say it removed %s: %q", name, errOut)
		}
	}
	for _, keep := range []string{filepath.Join(dir, "g_sm_90.ptx"), mine} {
		if _, err := os.Stat(keep); err != nil {
			t.Errorf("%s was removed: %v", keep, err)
		}
	}
}

// TestGenManifest: -manifest alone writes the manifest and the PTX files named after
// it (no Go file, no -pkg needed); with -o it goes beside the Go file and names its PTX
// files; bad names are refused with exit 2 before anything is written.
func TestGenManifest(t *testing.T) {
	t.Setenv("GOPACKAGE", "")
	dir := t.TempDir()
	mf := filepath.Join(dir, "dec.json")
	args := []string{"gen", "-max-tokens", "4", "-heads", "16", "-k1", "0", "-targets", "sm_90"}
	if code, _, errOut := runCLI(append(args, "-manifest", mf)...); code != 0 {
		t.Fatalf("gen -manifest: exit %d: %s", code, errOut)
	}
	names := func() []string {
		var out []string
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			out = append(out, e.Name())
		}
		return out
	}
	if got := strings.Join(names(), " "); got != "dec.json dec_sm_90.ptx" {
		t.Fatalf("gen -manifest wrote %s, want dec.json dec_sm_90.ptx", got)
	}
	data, _ := os.ReadFile(mf)
	man, err := gogen.ParseManifest(data)
	if err != nil {
		t.Fatal(err)
	}
	if man.Capacity != 4 || man.Targets[0].PTX != "dec_sm_90.ptx" || !strings.HasSuffix(man.Command, "-targets sm_90 -manifest dec.json") || strings.Contains(man.Command, "-pkg") {
		t.Errorf("manifest: capacity %d, ptx %s, command %q", man.Capacity, man.Targets[0].PTX, man.Command)
	}

	out := filepath.Join(dir, "x_gen.go")
	mf2 := filepath.Join(dir, "x.json")
	if code, _, errOut := runCLI(append(args, "-pkg", "p", "-o", out, "-manifest", mf2)...); code != 0 {
		t.Fatalf("gen -o -manifest: exit %d: %s", code, errOut)
	}
	data, _ = os.ReadFile(mf2)
	if man, err = gogen.ParseManifest(data); err != nil || man.Targets[0].PTX != "x_gen_sm_90.ptx" {
		t.Fatalf("manifest beside -o: %v, %+v", err, man)
	}
	if _, err := os.Stat(out); err != nil {
		t.Fatal(err)
	}

	before := names()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-manifest", filepath.Join(dir, "m.txt")}, "ending in .json"},
		{[]string{"-manifest", "/nonexistent/m.json"}, "existing directory"},
		{[]string{"-pkg", "p", "-o", out, "-manifest", filepath.Join(t.TempDir(), "m.json")}, "in the directory of -o"},
	} {
		code, _, errOut := runCLI(append(args, c.args...)...)
		if code != 2 || !strings.Contains(errOut, "-manifest") || !strings.Contains(errOut, c.want) {
			t.Errorf("gen %v: exit %d, stderr %q, want 2 and %q", c.args, code, errOut, c.want)
		}
	}
	if got := names(); strings.Join(got, " ") != strings.Join(before, " ") {
		t.Errorf("refused runs wrote files: %v, had %v", got, before)
	}
}

// TestGenNonASCIIType: a type name starting with a letter outside ASCII gets a receiver
// named after that letter (it once took the first byte, and the Go did not format).
func TestGenNonASCIIType(t *testing.T) {
	out := filepath.Join(t.TempDir(), "k.go")
	code, _, errOut := runCLI("gen", "-kernel", "gemm", "-m", "16", "-n", "16", "-k", "16", "-type", "Ünï", "-pkg", "k", "-o", out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	src, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), "func (ü *Ünï) Launch(") {
		t.Errorf("generated file lacks the receiver ü:\n%s", src)
	}
}

// TestGenRefusesForeignFiles: gen overwrites only files it wrote (they begin with
// ptxgen's header), never a hand-written -o, -manifest or PTX file, and never writes
// through a symbolic link; each refusal exits 2 before anything is written.
func TestGenRefusesForeignFiles(t *testing.T) {
	outside := filepath.Join(t.TempDir(), "target.txt")
	if err := os.WriteFile(outside, []byte("someone else's file\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name    string // the existing file, relative to the folder
		link    bool   // a symbolic link to outside instead of a file
		args    []string
		flag    string // the flag whose value is refused
		wantErr string
	}{
		{"k.go", false, []string{"-pkg", "k", "-o", "k.go"}, "-o", "does not begin with ptxgen's header"},
		{"k_sm_120.ptx", false, []string{"-pkg", "k", "-o", "k.go"}, "-o", "k_sm_120.ptx exists"},
		{"k.go", true, []string{"-pkg", "k", "-o", "k.go"}, "-o", "symbolic link"},
		{"k_sm_120.ptx", true, []string{"-pkg", "k", "-o", "k.go"}, "-o", "symbolic link"},
		{"m.json", false, []string{"-manifest", "m.json"}, "-manifest", "does not begin with ptxgen's header"},
		{"m_sm_120.ptx", false, []string{"-manifest", "m.json"}, "-manifest", "m_sm_120.ptx exists"},
		{"m.json", true, []string{"-manifest", "m.json"}, "-manifest", "symbolic link"},
		{"m.json", false, []string{"-pkg", "k", "-o", "k.go", "-manifest", "m.json"}, "-manifest", "does not begin"},
	} {
		dir := t.TempDir()
		existing := filepath.Join(dir, c.name)
		mine := []byte("// written by hand\n")
		if c.link {
			if err := os.Symlink(outside, existing); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(existing, mine, 0o644); err != nil {
			t.Fatal(err)
		}
		args := []string{"gen", "-kernel", "gemm", "-m", "16", "-n", "16", "-k", "16"}
		for _, a := range c.args {
			if strings.HasSuffix(a, ".go") || strings.HasSuffix(a, ".json") {
				a = filepath.Join(dir, a)
			}
			args = append(args, a)
		}
		code, _, errOut := runCLI(args...)
		if code != 2 || !strings.Contains(errOut, c.flag+" ") || !strings.Contains(errOut, c.wantErr) {
			t.Errorf("%s (link %v), %v: exit %d, stderr %q; want 2, %s and %q", c.name, c.link, c.args, code, errOut, c.flag, c.wantErr)
		}
		if got, _ := os.ReadFile(outside); string(got) != "someone else's file\n" {
			t.Fatalf("%s: gen wrote through the link: %q", c.name, got)
		}
		if !c.link {
			if got, _ := os.ReadFile(existing); string(got) != string(mine) {
				t.Errorf("%s: gen overwrote the hand-written file", c.name)
			}
		}
		if ents, _ := os.ReadDir(dir); len(ents) != 1 {
			t.Errorf("%s: gen wrote files although it refused: %v", c.name, ents)
		}
	}

	// Its own files it rewrites: another configuration into the same names.
	dir := t.TempDir()
	for _, m := range []string{"16", "32"} {
		args := []string{"gen", "-kernel", "gemm", "-m", m, "-n", "16", "-k", "16", "-pkg", "k", "-o", filepath.Join(dir, "k.go"), "-manifest", filepath.Join(dir, "k.json")}
		if code, _, errOut := runCLI(args...); code != 0 {
			t.Fatalf("-m %s: exit %d: %s", m, code, errOut)
		}
	}
	src, _ := os.ReadFile(filepath.Join(dir, "k.go"))
	man, _ := os.ReadFile(filepath.Join(dir, "k.json"))
	if !strings.Contains(string(src), "-m 32 ") || !strings.Contains(string(man), "-m 32 ") {
		t.Errorf("regenerating did not replace ptxgen's own files")
	}
}

// TestGenHeaderNamesEveryConfigurationFlag: the command line gen records (a
// configuration's Args) gives every flag of the kernel's configuration, defaults
// included, so it regenerates the same bytes after a default changes; -precision,
// -producer-warps and -score-warps were left out at their defaults.
func TestGenHeaderNamesEveryConfigurationFlag(t *testing.T) {
	for _, s := range kernels.Specs() {
		fs := flag.NewFlagSet(s.Name, flag.ContinueOnError)
		cfg := s.Bind(fs)
		if err := fs.Parse(nil); err != nil {
			t.Fatal(err)
		}
		args := cfg.Args()
		fs.VisitAll(func(f *flag.Flag) {
			if !slices.ContainsFunc(args, func(a string) bool { return a == "-"+f.Name || strings.HasPrefix(a, "-"+f.Name+"=") }) {
				t.Errorf("%s: %v lacks -%s", s.Name, args, f.Name)
			}
		})
	}
}
