package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ptxgen/ptxgen/internal/doccheck"
)

// badInputsDoc is the page that lists the bad inputs tried and what each prints.
const badInputsDoc = "../docs/bad-inputs.md"

// slowDocEntries are documented commands the test does not run, and why.
var slowDocEntries = map[string]string{
	"check -emu -kernel gemm -m 1 -n 8388480 -k 200": "checks a 1 x 8388480 x 200 GEMM in the emulator at 6.4 GiB resident (4 to 5 minutes)",
	"check -emu -from memloop.ir":                    "spends the emulation budget of 2^26 units before it stops (5 to 6 s); TestCheckFromBudgetSpent runs its kernel under a budget of 2^16",
}

// TestBadInputsDoc runs every ptxgen command docs/bad-inputs.md documents, in a folder
// holding the files the page describes, and compares the exit status and the first
// line printed with the page's, so the page cannot drift from the messages.
func TestBadInputsDoc(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every documented command")
	}
	entries, err := doccheck.Parse(badInputsDoc, "ptxgen")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 100 {
		t.Fatalf("%d entries in %s: the page's format changed?", len(entries), badInputsDoc)
	}
	dir := badInputsFolder(t)
	t.Chdir(dir)
	for _, e := range entries {
		cmd := strings.Join(e.Args, " ")
		if why, ok := slowDocEntries[cmd]; ok {
			t.Logf("%s:%d: not run: %s", badInputsDoc, e.Line, why)
			continue
		}
		start := time.Now()
		code, stdout, stderr := runCLI(e.Args...)
		if d := time.Since(start); d > 5*time.Second {
			t.Logf("%s:%d: ptxgen %s took %v", badInputsDoc, e.Line, cmd, d.Round(time.Millisecond))
		}
		if code != e.Code {
			t.Errorf("%s:%d: ptxgen %s: exit %d, the page says %d (stderr %q)", badInputsDoc, e.Line, cmd, code, e.Code, firstLine(stderr))
			continue
		}
		if e.Describes("ptxgen") {
			continue
		}
		got := firstLine(stderr)
		if e.FromStdout() || stderr == "" {
			got = firstLine(stdout)
		}
		if !e.Printed(got) {
			t.Errorf("%s:%d: ptxgen %s prints\n\t%s\nthe page says\n\t%s", badInputsDoc, e.Line, cmd, got, e.Text)
		}
	}
}

// badInputsFolder makes the scratch folder docs/bad-inputs.md runs its commands in,
// with every file it names, as its paragraphs describe them.
func badInputsFolder(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	in := func(name string) string { return filepath.Join(dir, name) }
	write := func(name, data string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(in(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(in(name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	fifo := func(name string) {
		t.Helper()
		os.Remove(in(name))
		if err := syscall.Mkfifo(in(name), 0o644); err != nil {
			t.Skip("no FIFOs:", err)
		}
	}
	link := func(name, to string) {
		t.Helper()
		os.Remove(in(name))
		if err := os.Symlink(to, in(name)); err != nil {
			t.Fatal(err)
		}
	}

	// The mla_decode vector folders: copies of h4_sink_edges, edited.
	vectors := func(name string, edit func(m map[string]any)) {
		t.Helper()
		src := copyVectors(t, edit)
		if err := os.CopyFS(in(name), os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
	}
	segment := func(m map[string]any, i int) map[string]any { return m["segments"].([]any)[i].(map[string]any) }
	counts := func(m map[string]any) []any { return m["valid_candidates_per_row"].([]any) }
	vectors("vec", func(map[string]any) {})
	vectors("vecbad", func(m map[string]any) { counts(m)[1] = counts(m)[1].(float64) - 1 })
	vectors("vecfifo", func(map[string]any) {})
	fifo("vecfifo/q.bf16")
	vectors("vecshort", func(map[string]any) {})
	write("vecshort/cache0.u8", strings.Repeat("\x00", 100))
	vectors("vecesc", func(m map[string]any) { segment(m, 0)["cache"] = "../vec/cache0.u8" })
	vectors("vechuge", func(m map[string]any) { m["T"] = int64(1) << 62 })
	vectors("vecnocount", func(m map[string]any) { delete(m, "valid_candidates_per_row") })
	vectors("veccount1", func(m map[string]any) { m["valid_candidates_per_row"] = counts(m)[:1] })
	vectors("vecneg", func(m map[string]any) { counts(m)[1] = -1.0 })
	vectors("vecheads", func(m map[string]any) { m["H"] = 200.0 })
	for name, size := range map[string]int{"q.bf16": 2 * 200 * 512 * 2, "sink.f32": 200 * 4, "out_ref.f64": 2 * 200 * 512 * 8, "lse_ref.f64": 2 * 200 * 8} {
		write("vecheads/"+name, string(make([]byte, size)))
	}
	vectors("vecscale", func(m map[string]any) { m["sm_scale"] = 1e308 })
	vectors("veclink", func(map[string]any) {})
	sink, err := os.ReadFile(in("veclink/sink.f32"))
	if err != nil {
		t.Fatal(err)
	}
	write("outside/sink.f32", string(sink))
	link("veclink/sink.f32", in("outside/sink.f32"))
	vectors("vecnan", func(map[string]any) {})
	ref, err := os.ReadFile(in("vecnan/out_ref.f64"))
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint64(ref[8*37:], math.Float64bits(math.NaN()))
	write("vecnan/out_ref.f64", string(ref))
	vectors("veccase", func(m map[string]any) { m["t"] = m["T"]; delete(m, "T") })
	vectors("vecnull", func(m map[string]any) { m["sm_scale"] = nil })
	vectors("vecpast", func(map[string]any) {})
	idx, err := os.ReadFile(in("vecpast/idx0.i32"))
	if err != nil {
		t.Fatal(err)
	}
	binary.LittleEndian.PutUint32(idx, 1000000000)
	write("vecpast/idx0.i32", string(idx))

	// Output names gen refuses or rewrites.
	fifo("fifo.go")
	link("full.go", "/dev/full")
	write("hand.go", "// written by hand\n")
	write("hand.json", "{}\n")
	write("outside/hand.go", "// written by hand\n")
	link("link.go", in("outside/hand.go"))
	if err := os.Mkdir(in("stale"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := runCLI("gen", "-kernel", "gemm", "-targets", "sm_120,sm_90,sm_80", "-pkg", "p", "-o", in("stale/k.go")); code != 0 {
		t.Fatalf("stale/k.go: exit %d: %s", code, errOut)
	}

	// A launcher and a manifest alone, each using PTX files of its own name.
	if err := os.Mkdir(in("lk"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, out := range [][]string{{"-pkg", "k", "-o", in("lk/k.go")}, {"-manifest", in("lk/m.json")}} {
		if code, _, errOut := runCLI(append([]string{"gen", "-kernel", "copy", "-targets", "sm_120,sm_90"}, out...)...); code != 0 {
			t.Fatalf("%v: exit %d: %s", out, code, errOut)
		}
	}

	// Kernels of one's own: copies of testdata/from, and files made from them by one
	// replacement each (a sed of the page's words); edit fails the test where the text
	// it replaces is not in the file, so a change to testdata/from shows here.
	from := map[string]string{}
	for _, name := range []string{"phased.ir", "roles.ir", "scale.ir", "split.ir"} {
		from[name] = readFile(t, filepath.Join("testdata", "from", name))
		write(name, from[name])
	}
	scale := from["scale.ir"]
	edit := func(name, src, old, new string) {
		t.Helper()
		if !strings.Contains(src, old) {
			t.Fatalf("%s: %q is not in its source", name, old)
		}
		write(name, strings.Replace(src, old, new, 1))
	}
	empty := func(name string) string { return "kernel " + name + "() grid(1, 1, 1) warps 1 {\n}\n" }
	write("9lives.ir", empty("9lives"))
	write("under.ir", empty("_"))
	write("under2.ir", empty("__"))
	write("smem.ir", empty("smem"))
	write("param.ir", "kernel k(%9x: i32) grid(1, 1, 1) warps 1 {\n}\n")
	write("storei1.ir", "kernel k(%x: ptr<i32> bytes 128) grid(1, 1, 1) warps 1 {\n  %i = iota : tile<32xi32>\n  %z = const 0 : i32\n  %c = cmp gt %i, %z : tile<32xi1>\n  store %x[%i], %c\n}\n")
	write("ptri1.ir", "kernel k(%m: ptr<i1>) grid(1, 1, 1) warps 1 {\n}\n")
	write("bitcasti1.ir", "kernel k(%x: ptr<u8> bytes 32) grid(1, 1, 1) warps 1 {\n  %i = iota : tile<32xi32>\n  %z = const 0 : i32\n  %c = cmp gt %i, %z : tile<32xi1>\n  %w = bitcast %c : tile<32xu8>\n  store %x[%i], %w\n}\n")
	write("const.ir", "kernel k() grid(1, 1, 1) warps 1 {\n  %c = const 99999999999 : i32\n}\n")
	write("splitgrid.ir", "kernel k(%rows: i32, %split: i32) grid(1, %rows max 4, %split max 4) warps 1 {\n}\n")
	write("two.ir", empty("a")+empty("b"))
	write("splitname.ir", "kernel k(%rows: i32, %split: i32, %y: ptr<i32> div 4 perrow 4) grid(1, %rows max 4, 1) warps 1 {\n  %r = program_id 1 : i32\n  store %y[%r], %split\n}\n")
	write("unsized.ir", strings.Replace(scale, "%x: ptr<f32> div 4 bytes 4000", "%x: ptr<f32> div 4", 1))
	write("loop.ir", "kernel k() grid(1, 1, 1) warps 1 {\n  %lo = const 0 : i32\n  %hi = const 2000000000 : i32\n  for %i = %lo to %hi step 1 {\n  }\n}\n")
	_, gemmIR, _ := runCLI("dump", "-kernel", "gemm", "-ir")
	write("stages.ir", strings.Replace(gemmIR, " step 1 iter(", " step 1 stages 5 iter(", 1))

	// Issue 32: schedule clauses that cannot be honoured, and one that can.
	score := "%s = dot %at, %xt, %s0 : tile<64x64xf32> on score"
	edit("sched8.ir", from["phased.ir"], score, "%s = dot %at, %xt, %s0 warps 2x4 : tile<64x64xf32> on score")
	edit("sched4x1.ir", from["phased.ir"], score, "%s = dot %at, %xt, %s0 warps 4x1 : tile<64x64xf32> on score")
	edit("schedrep.ir", from["phased.ir"], score, "%s = dot %at, %xt, %s0 warps 2x2 replicate 1 splitk 2 : tile<64x64xf32> on score")
	edit("schedatom.ir", gemmIR, " warps 4x1 a shared atom m16n8k16 ", " warps 4x1 a shared atom m16n8k8 ")
	edit("schedk.ir", gemmIR, " warps 4x1 a shared atom m16n8k16 ", " warps 1x1 replicate 4 splitk 4 ")
	edit("schedhold.ir", gemmIR, " warps 4x1 a shared atom m16n8k16 ", " warps 4x1 a regs atom m16n8k16 ")
	_, decodeIR, _ := runCLI("dump", "-ir", "-heads", "16", "-tokens", "2", "-k0", "64", "-k1", "0", "-target", "sm_90")
	edit("schedgrid.ir", decodeIR, " warps 1x1 replicate 4 a shared atom m16n8k16 ", " warps 2x2 atom m16n8k16 ")

	// Issue 29: IR whose numbers overflowed, bounds the parser and verifier hold.
	edit("rolewarps.ir", from["phased.ir"], "role score 0 4", "role score 1 9223372036854775807")
	edit("roleload.ir", from["roles.ir"], "role load 4 2", "role load 4 9223372036854775807")
	edit("rolefirst.ir", from["roles.ir"], "role load 4 2", "role load 9223372036854775807 1")
	edit("step.ir", from["roles.ir"], "step 1", "step 4294967297")
	edit("bytes.ir", from["roles.ir"], "%y: ptr<f32> div 16 bytes 16384", "%y: ptr<f32> div 16 bytes 4611686018427387904")
	edit("tile.ir", scale, "{\n", "{\n  %huge = const 1.0 : tile<1048576x17592186044416xf32>\n")
	edit("divf32.ir", scale, "%alpha: f32", "%alpha: f32 div 4")
	edit("bytesscalar.ir", scale, "%n: i32", "%n: i32 bytes 4")
	edit("bytestwice.ir", scale, "%x: ptr<f32> div 4 bytes 4000", "%x: ptr<f32> div 4 bytes 4000 bytes 8")
	edit("bytes4001.ir", scale, "%x: ptr<f32> div 4 bytes 4000", "%x: ptr<f32> div 4 bytes 4001")
	edit("div62.ir", scale, "%x: ptr<f32> div 4 ", "%x: ptr<f32> div 4611686018427387904 ")
	edit("strided.ir", scale, "%x: ptr<f32> div 4 bytes 4000", "%x: ptr<f32> div 4 bytes 4000 strided 9223372036854775807 [%n x 2]")
	edit("yield.ir", scale, "\n}\n", "\n  yield %w\n}\n")
	write("empty.ir", "// only a comment\n")
	edit("loadtype.ir", scale, "mask(%m) : tile<128xf32>", "mask(%m) : tile<128xbf16>")
	var deep strings.Builder
	deep.WriteString("kernel k() grid(1, 1, 1) warps 1 {\n  %lo = const 0 : i32\n  %hi = const 2 : i32\n")
	for i := range 40000 {
		fmt.Fprintf(&deep, "for %%i%d = %%lo to %%hi step 1 {\n", i)
	}
	deep.WriteString(strings.Repeat("}\n", 40000) + "}\n")
	write("deep.ir", deep.String())
	ring := goRawString(t, "../lower/smem_ring_test.go", "ringKernel")
	edit("ring.ir", strings.ReplaceAll(ring, "COLS", "112"), "stages STAGES", "stages 4")
	edit("pscast.ir", from["phased.ir"], "%ps = cast %s : tile<64x64xbf16> on score", "%ps = cast %s : tile<64x64xbf16>")
	edit("scoresall.ir", from["phased.ir"], "%s = dot %at, %xt, %s0 : tile<64x64xf32> on score", "%s = dot %at, %xt, %s0 : tile<64x64xf32>")
	edit("pad31.ir", from["phased.ir"], "warps 8 role score 0 4", "warps 31 role score 0 6")

	// Issue 29: check -emu's sizes, the emulation budget, vector folders and JSON.
	edit("hugey.ir", scale, "%y: ptr<f32> div 4 bytes 4000", "%y: ptr<f32> div 4 bytes 6148914691236517206")
	edit("greedy.ir", from["split.ir"], "%ws: ptr<f32> div 4 perrow 16, %out", "%ws: ptr<f32> div 4 perrow 32, %out")
	loop := readFile(t, in("loop.ir"))
	edit("loopn.ir", strings.Replace(loop, "kernel k()", "kernel k(%n: i32)", 1), "to %hi", "to %n")
	write("dots.ir", dotsIR)
	write("wide.ir", wideIR())
	write("memloop.ir", memLoopIR)

	// Kernel vector folders for scale.ir: y = 0.5 x over 1000 elements.
	const n, alpha = 1000, 0.5
	x := make([]byte, 4*n)
	want := make([]byte, 8*n)
	for i := range n {
		v := float32(i%17) - 8
		binary.LittleEndian.PutUint32(x[4*i:], math.Float32bits(v))
		binary.LittleEndian.PutUint64(want[8*i:], math.Float64bits(float64(v)*alpha))
	}
	metaOf := func(format string, n any) string {
		meta, _ := json.Marshal(map[string]any{format: "ptxgen-kernel-vectors", "version": 1, "args": map[string]any{"alpha": alpha, "n": n}})
		return string(meta)
	}
	meta := metaOf("format", n)
	kvec := func(name string) {
		write(name+"/meta.json", meta)
		write(name+"/x.bin", string(x))
		write(name+"/y.want.f64", string(want))
	}
	kvec("kvec")
	kvec("kvecoff")
	off := append([]byte(nil), want...)
	binary.LittleEndian.PutUint64(off[8*17:], math.Float64bits(math.Float64frombits(binary.LittleEndian.Uint64(want[8*17:]))+0.01))
	write("kvecoff/y.want.f64", string(off))
	kvec("kvecnox")
	os.Remove(in("kvecnox/x.bin"))
	kvec("kvecnowant")
	os.Remove(in("kvecnowant/y.want.f64"))
	kvec("kvecshort")
	write("kvecshort/x.bin", string(x[:100]))
	kvec("kvecfifo")
	fifo("kvecfifo/x.bin")
	kvec("kvecv2")
	write("kvecv2/meta.json", `{"format": "ptxgen-kernel-vectors", "version": 2}`)
	kvec("kvecq")
	write("kvecq/meta.json", metaOf("format", "1000"))
	kvec("kvecFORMAT")
	write("kvecFORMAT/meta.json", metaOf("FORMAT", n))
	return dir
}

// goRawString is the text of the raw-string constant name in the Go file at path (a
// kernel another package's test holds, which the page names by that test).
func goRawString(t *testing.T, path, name string) string {
	t.Helper()
	src := readFile(t, path)
	_, rest, ok := strings.Cut(src, "\nconst "+name+" = `")
	text, _, closed := strings.Cut(rest, "`")
	if !ok || !closed {
		t.Fatalf("%s: no raw-string constant %s", path, name)
	}
	return text
}
