package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/gogen"
)

// writeFile writes data to name in dir and returns the path.
func writeFile(t *testing.T, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// dump -ir prints what dump -from reads back to the same PTX, for a single kernel
// (gemm), the default mla_decode program (a split decode and its combine), a split
// program planned for another SM count, an unsplit decode and the 16-head decode at
// T=256, on several targets, every dot stating its schedule (warps RxC ...); and
// dump -ir -from prints the file it read.
func TestDumpFromRoundTrip(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct {
		name   string
		config []string
		header bool
	}{
		{"gemm", []string{"-kernel", "gemm", "-m", "100", "-n", "72", "-k", "448"}, false},
		{"mla_decode", nil, true},
		{"mla_split3_sms100", []string{"-tokens", "32", "-split", "3", "-sms", "100"}, true},
		{"mla_unsplit", []string{"-tokens", "64", "-heads", "16", "-k1", "0", "-split", "1"}, false},
		{"mla_h16_t256", []string{"-heads", "16", "-tokens", "256"}, false},
	} {
		for _, target := range []string{"sm_120", "sm_90", "sm_80"} {
			args := append(append([]string{"dump"}, c.config...), "-target", target)
			code, want, errOut := runCLI(args...)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", args, code, errOut)
			}
			code, text, errOut := runCLI(append(args, "-ir")...)
			if code != 0 {
				t.Fatalf("%s -ir: exit %d: %s", args, code, errOut)
			}
			for _, line := range strings.Split(text, "\n") {
				if strings.Contains(line, " = dot ") && !strings.Contains(line, " warps ") {
					t.Errorf("%s -ir: a dot without its schedule: %s", args, line)
				}
			}
			if got := strings.HasPrefix(text, "program "); got != c.header {
				t.Errorf("%s -ir: program header %v, want %v:\n%.200s", args, got, c.header, text)
			}
			if c.header && strings.Count(text, "\nkernel ") != 2 {
				t.Errorf("%s -ir: want two kernels (the split decode and its combine):\n%.300s", args, text)
			}
			path := writeFile(t, dir, c.name+"_"+target+".ir", text)
			code, got, errOut := runCLI("dump", "-from", path, "-target", target)
			if code != 0 {
				t.Fatalf("dump -from %s: exit %d: %s", path, code, errOut)
			}
			if got != want {
				t.Errorf("%s: dump -from of dump -ir differs from dump:\n%s", args, strings.Join(lineDiff(want, got), "\n"))
			}
			if code, back, _ := runCLI("dump", "-ir", "-from", path); code != 0 || back != text {
				t.Errorf("%s: dump -ir -from does not print the file back (exit %d)", args, code)
			}
		}
	}
}

// -from refuses what it cannot read or does not apply, one line, exit 2.
func TestFromBadUsage(t *testing.T) {
	dir := t.TempDir()
	scale := filepath.Join("testdata", "from", "scale.ir")
	bad := writeFile(t, dir, "bad.ir", "kernel 9lives() grid(1, 1, 1) warps 1 {\n}\n")
	i1 := writeFile(t, dir, "i1.ir", "kernel k(%x: ptr<i32> bytes 128) grid(1, 1, 1) warps 1 {\n  %i = iota : tile<32xi32>\n  %z = const 0 : i32\n  %c = cmp gt %i, %z : tile<32xi1>\n  store %x[%i], %c\n}\n")
	two := writeFile(t, dir, "two.ir", "kernel a() grid(1, 1, 1) warps 1 {\n}\nkernel b() grid(1, 1, 1) warps 1 {\n}\n")
	unsized := writeFile(t, dir, "unsized.ir", strings.Replace(readFile(t, scale), "%x: ptr<f32> div 4 bytes 4000", "%x: ptr<f32> div 4", 1))
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dump", "-from", filepath.Join(dir, "missing.ir")}, "-from " + filepath.Join(dir, "missing.ir") + ": no such file or directory"},
		{[]string{"dump", "-from", dir}, "-from " + dir + ": not a regular file (a directory)"},
		{[]string{"dump", "-from", bad}, "-from " + bad + `: ir: kernel name "9lives" is not a PTX identifier: want ASCII letters, digits and _, starting with a letter (or _ and at least one more character)`},
		{[]string{"dump", "-from", i1}, "-from " + i1 + ": ir: parse: line 5: ir: store %x[%i], %c: operand 2 (%c: tile<32xi1>): i1 has no memory form (a predicate): store a u8 or i32 instead, converted with cast (0 or 1)"},
		{[]string{"dump", "-from", two}, "-from " + two + ": ir: parse: line 3: a second kernel needs a program header before the first (program NAME { workspace ... }): the kernels then launch in the order they appear"},
		{[]string{"dump", "-from", scale, "-heads", "3", "-all"}, "-all, -heads do not apply with -from (the IR file fixes the kernels; with -from give only -target, -plan-target, -ir, -after, -check, -plan)"},
		{[]string{"dump", "-from", scale, "-kernel", "gemm"}, "-kernel does not apply with -from"},
		{[]string{"dump", "-from", scale, "-after", "nope"}, "-after nope"},
		{[]string{"check", "-from", scale}, "check: say -emu (the CPU emulator)"},
		{[]string{"check", "-emu", "-from", scale}, "check -from: give the scalar arguments f32 alpha, i32 n with -args name=value,... (or a folder's meta.json args)"},
		{[]string{"check", "-emu", "-from", scale, "-args", "alpha=0.5,n=1,alpha=2"}, "-args alpha=0.5,n=1,alpha=2: want each name once (alpha is given twice)"},
		{[]string{"check", "-emu", "-from", scale, "-args", "alpha"}, "-args alpha: want name=value pairs separated by commas (e.g. n=1000,alpha=0.5)"},
		{[]string{"check", "-emu", "-from", scale, "-args", "alpha=0.5,n=1,beta=2"}, "check -from: -args names beta, which is not a parameter (the scalars are: alpha, n; a buffer's value is its size in bytes)"},
		{[]string{"check", "-emu", "-from", scale, "-args", "alpha=1e39,n=1"}, `check -from: argument alpha = "1e39": want a finite f32`},
		{[]string{"check", "-emu", "-from", scale, "-args", "alpha=1,n=4294967296"}, `check -from: argument n = "4294967296": want an i32 (-2147483648..2147483647)`},
		{[]string{"check", "-emu", "-from", scale, "-args", "alpha=1,n=1,x=16"}, "check -from: argument x = 16 bytes, less than the 4000 the kernels declare"},
		{[]string{"check", "-emu", "-from", unsized, "-args", "alpha=1,n=1"}, "check -from: buffer parameter x has no size in the IR: give its size in bytes with -args x=BYTES (or bytes N in the IR, or a x.bin in -vectors)"},
		{[]string{"check", "-emu", "-from", scale, "-args", "alpha=1,n=1", "-invalid", "0.5"}, "-invalid does not apply with -from"},
		{[]string{"check", "-emu", "-from", filepath.Join("testdata", "from", "split.ir"), "-args", "chunks=5"}, "check -from: chunks = 5 (the split), want 1..4"},
		{[]string{"check", "-emu", "-from", filepath.Join("testdata", "from", "split.ir"), "-args", "rows=5"}, "check -from: rows = 5 rows, want 0..4 (the capacity)"},
		{[]string{"check", "-emu", "-args", "n=1"}, "-args n=1: want no -args without -from"},
		{[]string{"gen", "-from", scale, "-tokens", "5", "-pkg", "p", "-o", filepath.Join(dir, "k.go")}, "-tokens does not apply with -from"},
	} {
		code, out, errOut := runCLI(c.args...)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("ptxgen %q: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.args, code, out, errOut, c.want)
		}
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// check -emu -from runs a kernel of one's own clean on seeded inputs, passes on a
// vector folder of its float64 outputs, fails (exit 1) when one expected value is
// off, and a kernel that stores past its buffer fails naming the access.
func TestCheckFrom(t *testing.T) {
	scale := filepath.Join("testdata", "from", "scale.ir")
	code, out, errOut := runCLI("check", "-emu", "-from", scale, "-args", "alpha=0.5,n=1000", "-seed", "7")
	if code != 0 || out != "scale on seeded inputs (seed 7)\nran clean: no out-of-bounds or misaligned access, no shared-memory race or read of unwritten shared memory, read-only buffers unchanged\nPASS\n" {
		t.Fatalf("clean run: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	code, out, errOut = runCLI("check", "-emu", "-from", filepath.Join("testdata", "from", "split.ir"))
	if code != 0 || !strings.HasPrefix(out, "split_copy on seeded inputs (seed 1, 4 rows, split 4)\n") {
		t.Fatalf("split program: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	// Warp roles from text: the loop split by roles runs clean (the emulator checks
	// the handoff for races and the barriers for matching counts), with the ring's
	// named barriers in the PTX.
	roles := filepath.Join("testdata", "from", "roles.ir")
	if code, out, errOut := runCLI("check", "-emu", "-target", "sm_90", "-from", roles, "-args", "scale=0.5"); code != 0 || !strings.HasSuffix(out, "PASS\n") {
		t.Fatalf("roles: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := runCLI("dump", "-target", "sm_90", "-from", roles); code != 0 || strings.Count(out, "bar.arrive") != 2 {
		t.Errorf("roles dump: exit %d, %d bar.arrive (want 2: the producer's full, the consumer's empty), stderr %q", code, strings.Count(out, "bar.arrive"), errOut)
	}

	// A phased loop from text: the score role's region in each iteration, what it
	// computes read by every warp through shared memory, and no ring.
	phased := filepath.Join("testdata", "from", "phased.ir")
	if code, out, errOut := runCLI("check", "-emu", "-target", "sm_90", "-from", phased); code != 0 || !strings.HasSuffix(out, "PASS\n") {
		t.Fatalf("phased: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	if code, out, errOut := runCLI("dump", "-target", "sm_90", "-from", phased); code != 0 || strings.Contains(out, "bar.arrive") || !strings.Contains(out, "setp.ge.u32") {
		t.Errorf("phased dump: exit %d, want a role region (setp.ge.u32, bra.uni) and no ring (bar.arrive); stderr %q", code, errOut)
	}

	// A parameter called split is an ordinary i32 (it used to be refused: "split 0, want 1..").
	named := writeFile(t, t.TempDir(), "named.ir", "kernel k(%rows: i32, %split: i32, %y: ptr<i32> div 4 perrow 4) grid(1, %rows max 4, 1) warps 1 {\n  %r = program_id 1 : i32\n  store %y[%r], %split\n}\n")
	if code, out, errOut := runCLI("check", "-emu", "-from", named, "-args", "rows=2,split=0"); code != 0 || !strings.HasSuffix(out, "PASS\n") {
		t.Errorf("a parameter named split, 0: exit %d, stdout %q, stderr %q", code, out, errOut)
	}

	seed := uint64(11)
	r := rand.New(rand.NewPCG(seed, 0))
	const n, alpha = 1000, float32(-1.75)
	x := make([]byte, 4000)
	want := make([]byte, 8000)
	for i := range 1000 {
		v := float32(r.NormFloat64())
		binary.LittleEndian.PutUint32(x[4*i:], math.Float32bits(v))
		binary.LittleEndian.PutUint64(want[8*i:], math.Float64bits(float64(v)*float64(alpha)))
	}
	dir := t.TempDir()
	meta := fmt.Sprintf(`{"format": "ptxgen-kernel-vectors", "version": 1, "args": {"alpha": %v, "n": %d}}`, alpha, n)
	writeFile(t, dir, "meta.json", meta)
	writeFile(t, dir, "x.bin", string(x))
	writeFile(t, dir, "y.want.f64", string(want))
	code, out, errOut = runCLI("check", "-emu", "-from", scale, "-vectors", dir)
	if code != 0 || !strings.Contains(out, "y: ok, 1000 elements") || !strings.HasSuffix(out, "PASS\n") {
		t.Fatalf("vectors (seed %d): exit %d, stdout %q, stderr %q", seed, code, out, errOut)
	}
	i := r.IntN(1000)
	wrong := append([]byte(nil), want...)
	binary.LittleEndian.PutUint64(wrong[8*i:], math.Float64bits(math.Float64frombits(binary.LittleEndian.Uint64(want[8*i:]))+1e-3))
	writeFile(t, dir, "y.want.f64", string(wrong))
	code, out, errOut = runCLI("check", "-emu", "-from", scale, "-vectors", dir)
	if code != 1 || !strings.Contains(out, fmt.Sprintf("mismatch      [%d]", i)) || errOut != "ptxgen: outputs outside tolerance\n" {
		t.Fatalf("one wrong expected value at %d (seed %d): exit %d, stdout %q, stderr %q", i, seed, code, out, errOut)
	}
	for _, c := range []struct{ file, data, want string }{
		{"meta.json", `{"format": "ptxgen-kernel-vectors", "version": 1, "args": {"alpha": 1, "n": 1000}, "extra": 1}`, `meta.json: json: unknown key extra (the keys of the top level are: args, format, tolerance, version)`},
		{"meta.json", `{"format": "ptxgen-kernel-vectors", "version": 2}`, `meta.json is "ptxgen-kernel-vectors" version 2, want "ptxgen-kernel-vectors" version 1`},
		{"meta.json", `{"format": "ptxgen-kernel-vectors", "version": 1, "args": {"alpha": "x", "n": 1000}}`, `meta.json: json: args.alpha is the string "x": want a number`},
		{"meta.json", `{"format": "ptxgen-kernel-vectors", "version": 1, "args": {"alpha": 1, "n": 1000}, "tolerance": {"abs": -1, "rel": 0}}`, "meta.json: tolerance wants finite abs >= 0 and rel >= 0"},
		{"x.bin", "short", "x.bin has 5 bytes, want a multiple of 4 (the element size) of at least 4000 (the size the kernels declare)"},
		{"y.want.f64", "short", "y.want.f64 has 5 bytes, want 8000"},
	} {
		bad := t.TempDir()
		writeFile(t, bad, "meta.json", meta)
		writeFile(t, bad, "x.bin", string(x))
		writeFile(t, bad, "y.want.f64", string(want))
		writeFile(t, bad, c.file, c.data)
		code, out, errOut := runCLI("check", "-emu", "-from", scale, "-vectors", bad)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) {
			t.Errorf("%s = %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", c.file, c.data, code, out, errOut, c.want)
		}
	}
	if code, _, errOut := runCLI("check", "-emu", "-from", scale, "-vectors", dir, "-seed", "3"); code != 2 || !strings.Contains(errOut, "-seed does not apply with -vectors (the folder holds the inputs)") {
		t.Errorf("-seed with -vectors: exit %d, %q", code, errOut)
	}
	link := t.TempDir()
	writeFile(t, link, "meta.json", meta)
	writeFile(t, link, "y.want.f64", string(want))
	if err := os.Symlink(filepath.Join(dir, "x.bin"), filepath.Join(link, "x.bin")); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI("check", "-emu", "-from", scale, "-vectors", link); code != 2 || !strings.Contains(errOut, "x.bin is not a regular file (a link, a FIFO, a device or a folder)") {
		t.Errorf("x.bin a link out of the folder: exit %d, %q", code, errOut)
	}
	noWant := t.TempDir()
	writeFile(t, noWant, "meta.json", meta)
	writeFile(t, noWant, "x.bin", string(x))
	if code, _, errOut := runCLI("check", "-emu", "-from", scale, "-vectors", noWant); code != 2 || !strings.Contains(errOut, "no NAME.want.f64 file: give the expected contents of at least one written buffer") {
		t.Errorf("a folder without expected outputs: exit %d, %q", code, errOut)
	}
	noX := t.TempDir()
	writeFile(t, noX, "meta.json", meta)
	writeFile(t, noX, "y.want.f64", string(want))
	if code, _, errOut := runCLI("check", "-emu", "-from", scale, "-vectors", noX); code != 2 || !strings.Contains(errOut, "x.bin is missing: the initial contents of buffer x, which the kernels read") {
		t.Errorf("a folder without an input: exit %d, %q", code, errOut)
	}

	// The IR declares 4000 bytes for y but the grid covers 1024 elements and n says so.
	oob := writeFile(t, t.TempDir(), "oob.ir", readFile(t, scale))
	code, out, errOut = runCLI("check", "-emu", "-from", oob, "-args", "alpha=2,n=1024")
	if code != 1 || out != "" || !strings.Contains(errOut, "out of bounds") || !strings.Contains(errOut, `buffer "x"`) {
		t.Errorf("a load past the buffer: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
}

// gen -from writes the launcher, PTX and manifest of a kernel or program of one's
// own; its header reruns from the Go file's folder; a split program's per-part
// workspace is sized for the largest launch and its split is the caller's.
func TestGenFrom(t *testing.T) {
	dir := t.TempDir()
	src := writeFile(t, dir, "scale.ir", readFile(t, filepath.Join("testdata", "from", "scale.ir")))
	out := filepath.Join(dir, "gen", "scale_gen.go")
	if err := os.Mkdir(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI("gen", "-from", src, "-targets", "sm_90,sm_120", "-pkg", "scale", "-o", out)
	if code != 0 {
		t.Fatalf("gen -from: exit %d: %s", code, errOut)
	}
	goSrc := readFile(t, out)
	for _, want := range []string{
		`// Code generated by "ptxgen gen -from ../scale.ir -targets sm_120,sm_90 -pkg scale -o scale_gen.go" (ptxgen ` + gogen.Version + `); DO NOT EDIT.`,
		"func (s *Scale) Launch(x, y *runtime.Buffer, alpha float32, n int32) error {",
		"ScaleXBytes = 4000",
	} {
		if !strings.Contains(goSrc, want) {
			t.Errorf("generated Go lacks %q", want)
		}
	}
	code, ptx, _ := runCLI("dump", "-from", src, "-target", "sm_90")
	if code != 0 || readFile(t, filepath.Join(dir, "gen", "scale_gen_sm_90.ptx")) != ptx {
		t.Errorf("gen -from's sm_90 PTX is not dump -from's")
	}

	// The default mla_decode call (a split decode and its combine) as text: gen -from
	// writes dump's PTX, and Launch takes the split as an argument (no plan).
	_, text, _ := runCLI("dump", "-ir", "-target", "sm_90")
	mla := writeFile(t, dir, "mla.ir", text)
	if code, _, errOut := runCLI("gen", "-from", mla, "-targets", "sm_90", "-pkg", "dec", "-o", filepath.Join(dir, "dec.go")); code != 0 {
		t.Fatalf("gen -from mla.ir: exit %d: %s", code, errOut)
	}
	if _, want, _ := runCLI("dump", "-target", "sm_90"); readFile(t, filepath.Join(dir, "dec_sm_90.ptx")) != want {
		t.Errorf("gen -from of dump -ir's program does not write dump's PTX")
	}
	if !strings.Contains(readFile(t, filepath.Join(dir, "dec.go")), "func (m *MLADecode) Launch(\n\trows int,\n\tsplit int32,\n\tq *runtime.Buffer,") {
		t.Errorf("the launcher of the mla_decode program does not take rows and the split first")
	}

	split := writeFile(t, dir, "split.ir", readFile(t, filepath.Join("testdata", "from", "split.ir")))
	manifest := filepath.Join(dir, "split.json")
	if code, _, errOut := runCLI("gen", "-from", split, "-targets", "sm_90", "-manifest", manifest); code != 0 {
		t.Fatalf("gen -from split -manifest: exit %d: %s", code, errOut)
	}
	m, err := gogen.ParseManifest([]byte(readFile(t, manifest)))
	if err != nil {
		t.Fatal(err)
	}
	ws := m.Targets[0].Workspace
	// perpart 4 x (capacity 4 x largest split 4): the one buffer the launcher allocates.
	if len(ws) != 1 || ws[0].Name != "ws" || ws[0].Bytes != 64 || ws[0].PerPart != 0 || m.Targets[0].Plan != nil {
		t.Errorf("workspace %+v, plan %v; want ws of 64 bytes and no plan", ws, m.Targets[0].Plan)
	}
	var args []string
	for _, a := range m.Arguments {
		args = append(args, a.Name)
	}
	if got := strings.Join(args, " "); got != "rows chunks x out" {
		t.Errorf("caller arguments %q, want rows chunks x out (the split is the caller's without a plan)", got)
	}
	if _, err := json.Marshal(m); err != nil {
		t.Fatal(err)
	}
}

// TestDumpPlanFrom: dump -plan -from shows the file's program (it has no launch plan:
// its kernels run in order, each with its figures), not the built-in decode's plan it
// used to print; a kernel flag beside it is refused, and so is an empty -from, which
// used to mean the built-in decode.
func TestDumpPlanFrom(t *testing.T) {
	split := filepath.Join("testdata", "from", "split.ir")
	code, out, errOut := runCLI("dump", "-plan", "-from", split, "-target", "sm_90")
	if code != 0 {
		t.Fatalf("dump -plan -from: exit %d: %s", code, errOut)
	}
	for _, want := range []string{"split_copy on sm_90", "no launch plan", "partial", "combine", "bytes shared", "registers"} {
		if !strings.Contains(out, want) {
			t.Errorf("dump -plan -from %s lacks %q:\n%s", split, want, out)
		}
	}
	if strings.Contains(out, "mla_decode") || strings.Contains(out, "family") {
		t.Errorf("dump -plan -from %s shows the built-in decode's plan:\n%s", split, out)
	}
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"dump", "-plan", "-heads", "24", "-from", split}, []string{"-heads", "-from"}},
		{[]string{"dump", "-from", ""}, []string{`-from ""`, "IR text file"}},
		{[]string{"dump", "-plan", "-from="}, []string{`-from ""`, "IR text file"}},
		{[]string{"check", "-emu", "-from", ""}, []string{`-from ""`, "IR text file"}},
		{[]string{"gen", "-from", "", "-pkg", "p", "-o", filepath.Join(t.TempDir(), "k.go")}, []string{`-from ""`, "IR text file"}},
	} {
		code, out, errOut := runCLI(c.args...)
		if code != 2 || out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("%q: exit %d, stdout %.80q, stderr %q; want 2, nothing on stdout and one line", c.args, code, out, errOut)
		}
		for _, w := range c.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%q: error %q lacks %q", c.args, errOut, w)
			}
		}
	}
}

// TestGenTypeNameRefused: a kernel whose name has no exported Go form (__ gives "",
// _9 gives "9") is refused naming the kernel, the type name it gives and -type, which
// sets another; a bad -type is refused naming -type. Both used to say only `gogen: type
// name "" is not an exported Go identifier`. With -type the same kernels generate.
func TestGenTypeNameRefused(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "k.go")
	for _, c := range []struct{ kernel, typ string }{{"__", ""}, {"_9", "9"}} {
		src := writeFile(t, dir, "k.ir", "kernel "+c.kernel+"() grid(1, 1, 1) warps 1 {\n}\n")
		code, _, errOut := runCLI("gen", "-from", src, "-pkg", "p", "-o", out)
		if code != 2 || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("kernel %s: exit %d, stderr %q; want 2 and one line", c.kernel, code, errOut)
		}
		for _, want := range []string{fmt.Sprintf("kernel %q", c.kernel), fmt.Sprintf("type name %q", c.typ), "-type"} {
			if !strings.Contains(errOut, want) {
				t.Errorf("kernel %s: error %q lacks %q", c.kernel, errOut, want)
			}
		}
		if code, _, errOut := runCLI("gen", "-from", src, "-pkg", "p", "-type", "Kernel", "-o", out); code != 0 {
			t.Errorf("kernel %s -type Kernel: exit %d: %s", c.kernel, code, errOut)
		}
	}
	for _, typ := range []string{"lower", "9", "", "A-B"} {
		code, _, errOut := runCLI("gen", "-kernel", "copy", "-pkg", "p", "-type", typ, "-o", filepath.Join(t.TempDir(), "k.go"))
		if code != 2 || !strings.Contains(errOut, fmt.Sprintf("-type %s: want an exported Go identifier", quoteEmpty(typ))) {
			t.Errorf("-type %q: exit %d, stderr %q; want 2 naming -type", typ, code, errOut)
		}
	}
}

// TestGenFromCapacityNamesTheIR: a -from launcher's row error (and MaxRows's comment)
// says where its capacity comes from, the grid's `%rows max N` in the IR file, not
// -max-tokens, a flag that does not exist with -from; a built-in decode's keeps naming
// -max-tokens.
func TestGenFromCapacityNamesTheIR(t *testing.T) {
	dir := t.TempDir()
	split := writeFile(t, dir, "split.ir", readFile(t, filepath.Join("testdata", "from", "split.ir")))
	out := filepath.Join(dir, "split_gen.go")
	if code, _, errOut := runCLI("gen", "-from", split, "-targets", "sm_90", "-pkg", "p", "-o", out); code != 0 {
		t.Fatalf("gen -from: exit %d: %s", code, errOut)
	}
	src := readFile(t, out)
	if strings.Contains(src, "-max-tokens") {
		t.Errorf("the -from launcher names -max-tokens:\n%s", grepLines(src, "-max-tokens"))
	}
	// In a format string, so the IR's % doubled.
	if want := "(the capacity it was generated for, %%rows max in split.ir)"; !strings.Contains(src, want) {
		t.Errorf("the -from launcher's row error lacks %q:\n%s", want, grepLines(src, "capacity"))
	}
	dec := filepath.Join(dir, "dec_gen.go")
	if code, _, errOut := runCLI("gen", "-max-tokens", "4", "-heads", "16", "-k1", "0", "-targets", "sm_90", "-pkg", "p", "-o", dec); code != 0 {
		t.Fatalf("gen mla_decode: exit %d: %s", code, errOut)
	}
	if want := "(the capacity it was generated for, -max-tokens)"; !strings.Contains(readFile(t, dec), want) {
		t.Errorf("the decode launcher's row error lacks %q", want)
	}
}

// grepLines returns the lines of s holding sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// check -emu -from sizes every buffer before allocating any: a size from -args whose
// copies wrap past 2^63 is refused naming the buffer, not a panic (the same size
// declared in the IR is past ir.MaxBufferBytes, refused as the IR is read, naming the
// parameter and the accepted range); a refusal names the largest buffers and their
// sizes; the workspace is sized as the generated launcher sizes it (capacity x largest
// split), so a call of fewer rows or a smaller split runs, 0 rows included, and a
// kernel declaring more workspace than that is refused before the run.
func TestCheckFromSizes(t *testing.T) {
	dir := t.TempDir()
	scale := filepath.Join("testdata", "from", "scale.ir")
	split := filepath.Join("testdata", "from", "split.ir")
	const huge = "6148914691236517206" // 3 x huge wraps to 2
	hugeIR := writeFile(t, dir, "huge.ir", strings.Replace(readFile(t, scale), "%y: ptr<f32> div 4 bytes 4000", "%y: ptr<f32> div 4 bytes "+huge, 1))
	greedy := writeFile(t, dir, "greedy.ir", strings.Replace(readFile(t, split), "%ws: ptr<f32> div 4 perrow 16, %out", "%ws: ptr<f32> div 4 perrow 32, %out", 1))
	for _, c := range []struct {
		args  []string
		limit int64
		want  []string
	}{
		{[]string{"-from", scale, "-args", "alpha=0.5,n=1000,y=" + huge}, 0, []string{"host memory", "y (" + huge + " bytes"}},
		{[]string{"-from", hugeIR, "-args", "alpha=0.5,n=1000"}, 0, []string{"-from " + hugeIR + ": ir: kernel scale: parameter %y: bytes " + huge + ", want 0..281474976710656"}},
		{[]string{"-from", scale, "-args", "alpha=0.5,n=1000,x=2000000"}, 1 << 20, []string{"limit of 1.0 MiB", "the largest: x (2000000 bytes"}},
		{[]string{"-from", scale, "-args", "alpha=0.5,n=1000,y=2000000"}, 1 << 20, []string{"limit of 1.0 MiB", "the largest: y (2000000 bytes"}},
		{[]string{"-from", greedy}, 0, []string{"workspace ws", "64 bytes", "combine", "ws", "128 bytes"}},
	} {
		maxHostBytes = c.limit
		code, out, errOut := runCLI(append([]string{"check", "-emu"}, c.args...)...)
		maxHostBytes = 0
		ok := code == 2 && out == "" && strings.Count(errOut, "\n") == 1
		for _, w := range c.want {
			ok = ok && strings.Contains(errOut, w)
		}
		if !ok {
			t.Errorf("check -emu %q (limit %d): exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.args, c.limit, code, out, errOut, c.want)
		}
	}
	for _, args := range []string{"rows=3,chunks=2", "rows=1,chunks=1", "rows=0", "rows=0,chunks=3"} {
		code, out, errOut := runCLI("check", "-emu", "-from", split, "-args", args)
		if code != 0 || !strings.HasSuffix(out, "PASS\n") {
			t.Errorf("split.ir -args %s: exit %d, stdout %q, stderr %q; want a clean run", args, code, out, errOut)
		}
	}
}

// A written buffer without NAME.bin starts as NaN in check -emu -vectors (README,
// docs/own-kernels.md): a kernel that writes half of y fails on the other half's NaN;
// with y.bin holding the expected tail, it passes.
func TestCheckFromVectorsUnwrittenIsNaN(t *testing.T) {
	seed := uint64(5)
	r := rand.New(rand.NewPCG(seed, 0))
	const n, written, alpha = 1000, 600, 0.5
	x, y, want := make([]byte, 4*n), make([]byte, 4*n), make([]byte, 8*n)
	for i := range n {
		v := float32(r.NormFloat64())
		binary.LittleEndian.PutUint32(x[4*i:], math.Float32bits(v))
		w := float64(v) * alpha
		if i >= written {
			w = r.NormFloat64() // what y.bin holds there, unwritten by the kernel
			binary.LittleEndian.PutUint32(y[4*i:], math.Float32bits(float32(w)))
			w = float64(float32(w))
		}
		binary.LittleEndian.PutUint64(want[8*i:], math.Float64bits(w))
	}
	dir := t.TempDir()
	writeFile(t, dir, "meta.json", fmt.Sprintf(`{"format": "ptxgen-kernel-vectors", "version": 1, "args": {"alpha": %v, "n": %d}}`, alpha, written))
	writeFile(t, dir, "x.bin", string(x))
	writeFile(t, dir, "y.want.f64", string(want))
	scale := filepath.Join("testdata", "from", "scale.ir")
	code, out, _ := runCLI("check", "-emu", "-from", scale, "-vectors", dir)
	if code != 1 || !regexp.MustCompile(fmt.Sprintf(`NaN in got +%d\n`, n-written)).MatchString(out) || !strings.Contains(out, fmt.Sprintf("[%d] got NaN", written)) {
		t.Errorf("y written at %d of %d elements, no y.bin (seed %d): exit %d, stdout %q; want exit 1 and %d NaN from [%d]", written, n, seed, code, out, n-written, written)
	}
	writeFile(t, dir, "y.bin", string(y))
	if code, out, errOut := runCLI("check", "-emu", "-from", scale, "-vectors", dir); code != 0 || !strings.HasSuffix(out, "PASS\n") {
		t.Errorf("the same with y.bin (seed %d): exit %d, stdout %q, stderr %q; want PASS", seed, code, out, errOut)
	}
}

// dotsIR is one CTA of 4 warps multiplying a 64x64 bf16 tile by itself into a carried
// accumulator %n times (docs/bad-inputs.md's dots.ir).
const dotsIR = `kernel dots(%a: ptr<bf16> div 16 bytes 8192, %y: ptr<f32> div 16 bytes 16384, %n: i32) grid(1, 1, 1) warps 4 {
  %r = iota : tile<64xi32>
  %r64 = cast %r : tile<64xi64>
  %k = const 64 : i64
  %rows = mul %r64, %k : tile<64xi64>
  %z = const 0 : i64
  %at = load %a[%rows, %z] : tile<64x64xbf16>
  %acc0 = const 0.0 : tile<64x64xf32>
  %lo = const 0 : i32
  %accfin = for %j = %lo to %n step 1 iter(%acc = %acc0) {
    %next = dot %at, %at, %acc : tile<64x64xf32>
    yield %next
  }
  store %y[%rows, %z], %accfin
}
`

// wideIR is %rows CTAs (at most 65535) of 40 multiplies of a tile<1024xf32>
// (docs/bad-inputs.md's wide.ir).
func wideIR() string {
	var wide strings.Builder
	wide.WriteString("kernel wide(%rows: i32, %x: ptr<f32> div 16 bytes 4096, %y: ptr<f32> div 16 bytes 4096) grid(%rows max 65535, 1, 1) warps 4 {\n  %i = iota : tile<1024xi32>\n  %t0 = load %x[%i] : tile<1024xf32>\n")
	for i := 1; i <= 40; i++ {
		fmt.Fprintf(&wide, "  %%t%d = mul %%t%d, %%t%d : tile<1024xf32>\n", i, i-1, i-1)
	}
	wide.WriteString("  store %y[%i], %t40\n}\n")
	return wide.String()
}

// memLoopIR is a loop whose bound is read from memory, c[0] x 2000000000: no bound sees
// its work coming (docs/bad-inputs.md's memloop.ir).
const memLoopIR = "kernel k(%c: ptr<i32> div 4 bytes 4, %x: ptr<i32> div 4 bytes 4) grid(1, 1, 1) warps 1 {\n  %z = const 0 : i32\n  %one = const 1 : i32\n" +
	"  %cnt = load %c[%z] : i32\n  %big = const 2000000000 : i32\n  %hi = mul %cnt, %big : i32\n" +
	"  %r = for %i = %z to %hi step 1 iter(%a = %z) {\n    %b = add %a, %one : i32\n    yield %b\n  }\n  store %x[%z], %r\n}\n"

// check -emu -from refuses, exit 2, a call whose emulation would pass the budget
// (check.MaxProgramWork), naming its work and the budget: before the run when its
// loops and dots alone pass it, after its first CTA when that CTA's work times the
// CTAs would (a program of 65535 rows ran 88 s before failing, "more than 4096 warp
// instructions executed in this CTA"); the same programs with less work pass.
func TestCheckFromBudget(t *testing.T) {
	dir := t.TempDir()
	loop := writeFile(t, dir, "loop.ir", "kernel k(%x: ptr<i32> bytes 4, %n: i32) grid(1, 1, 1) warps 1 {\n  %z = const 0 : i32\n  %one = const 1 : i32\n"+
		"  %r = for %i = %z to %n step 1 iter(%a = %z) {\n    %b = add %a, %one : i32\n    yield %b\n  }\n  store %x[%z], %r\n}\n")
	dots := writeFile(t, dir, "dots.ir", dotsIR)
	widePath := writeFile(t, dir, "wide.ir", wideIR())
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-from", loop, "-args", "n=2000000000"}, []string{"at least 6000000000 units of emulation work", "a loop of 2000000000 iterations (%i)", "budget of 67108864"}},
		{[]string{"-from", dots, "-args", "n=100000"}, []string{"at least", "a loop of 100000 iterations (%j) of dots of 64x64x64 (128 mma.sync each)", "budget of 67108864"}},
		{[]string{"-from", widePath}, []string{"kernel wide", "stopped after the first CTA", "its 65535 CTAs would do about", "budget of 67108864"}},
	} {
		code, out, errOut := runCLI(append([]string{"check", "-emu"}, c.args...)...)
		ok := code == 2 && out == "" && strings.Count(errOut, "\n") == 1
		for _, w := range c.want {
			ok = ok && strings.Contains(errOut, w)
		}
		if !ok {
			t.Errorf("check -emu %q: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.args, code, out, errOut, c.want)
		}
	}
	for _, args := range [][]string{{"-from", loop, "-args", "n=1000"}, {"-from", dots, "-args", "n=3"}, {"-from", widePath, "-args", "rows=7"}} {
		if code, out, errOut := runCLI(append([]string{"check", "-emu"}, args...)...); code != 0 || !strings.HasSuffix(out, "PASS\n") {
			t.Errorf("check -emu %q: exit %d, stdout %q, stderr %q; want PASS", args, code, out, errOut)
		}
	}
}

// An -args value with a newline or a space (FuzzCheckFrom found "\n") is quoted in
// the error, which stays one line.
func TestCheckFromArgsQuoted(t *testing.T) {
	scale := filepath.Join("testdata", "from", "scale.ir")
	for _, c := range []struct{ args, want string }{
		{"\n", `-args "\n": want name=value pairs`},
		{"alpha=1,n=2,a\nb=3", `-args names "a\nb", which is not a parameter`},
		{"n=1,\tn=2,\tn=3", `-args "n=1,\tn=2,\tn=3": want each name once ("\tn" is given twice)`},
	} {
		code, out, errOut := runCLI("check", "-emu", "-from", scale, "-args", c.args)
		if code != 2 || out != "" || !strings.Contains(errOut, c.want) || strings.Count(errOut, "\n") != 1 {
			t.Errorf("-args %q: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q", c.args, code, out, errOut, c.want)
		}
	}
}

// A run that spends the emulation budget where no bound saw it coming (a loop whose
// bound is read from memory, here one that does not end for the seeded count) is
// refused, exit 2: the emulator cannot check the program, which did not fail.
func TestCheckFromBudgetSpent(t *testing.T) {
	path := writeFile(t, t.TempDir(), "mem.ir", memLoopIR)
	defer func(w int64) { maxProgramWork = w }(maxProgramWork)
	maxProgramWork = 1 << 16
	for seed := 1; seed < 20; seed++ {
		code, out, errOut := runCLI("check", "-emu", "-from", path, "-seed", fmt.Sprint(seed))
		if code == 0 {
			continue // the seeded count was 0
		}
		if code != 2 || out != "" || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "the emulation budget of 65536 units is spent") || !strings.Contains(errOut, "a loop that does not end, or a program too large for the emulator") {
			t.Errorf("seed %d: exit %d, stdout %q, stderr %q; want exit 2 naming the budget", seed, code, out, errOut)
		}
		return
	}
	t.Errorf("no seed in 1..19 gave a count above 0")
}
