package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var o, e bytes.Buffer
	code = run(args, &o, &e)
	return code, o.String(), e.String()
}

func TestDumpGEMM(t *testing.T) {
	code, out, errOut := runCLI("dump", "-kernel", "gemm", "-m", "100", "-n", "72", "-k", "448", "-target", "sm_90")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, s := range []string{".target sm_90", ".visible .entry gemm(", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"} {
		if !strings.Contains(out, s) {
			t.Errorf("dump lacks %q", s)
		}
	}
}

func TestDumpIRAndAfter(t *testing.T) {
	code, out, errOut := runCLI("dump", "-kernel", "gemm", "-m", "17", "-ir")
	if code != 0 || !strings.HasPrefix(out, "kernel gemm(") {
		t.Fatalf("-ir: exit %d, stderr %q, out %.80q", code, errOut, out)
	}
	code, out, _ = runCLI("dump", "-kernel", "gemm", "-m", "17", "-n", "9", "-k", "33", "-after", "layout")
	if code != 0 || !strings.Contains(out, "mma fragments") || !strings.Contains(out, "logical 17x9") {
		t.Fatalf("-after layout: exit %d, out:\n%s", code, out)
	}
}

// TestBadUsage: every bad flag or impossible configuration exits 2 with one line
// naming the flag, the value and what is accepted.
func TestBadUsage(t *testing.T) {
	cases := []struct {
		args []string
		want []string
	}{
		{[]string{"dump", "-kernel", "gemm", "-m", "0"}, []string{"-m 0", "1..16777216"}},
		{[]string{"dump", "-kernel", "gemm", "-n", "-5"}, []string{"-n -5", "1..16777216"}},
		{[]string{"dump", "-kernel=gemm", "-k", "abc"}, []string{"-k", "abc"}},
		{[]string{"dump", "-target", "sm_70"}, []string{"-target sm_70", "sm_80, sm_86, sm_89, sm_90, sm_90a, sm_120, sm_120a"}},
		{[]string{"dump", "-kernel", "conv"}, []string{"-kernel conv", "gemm"}},
		{[]string{"dump", "-kernel", "gemm", "-out", "f16"}, []string{"-out f16", "bf16 or f32"}},
		{[]string{"dump", "-heads", "0"}, []string{"-heads 0", "1..128"}},
		{[]string{"dump", "-heads", "129"}, []string{"-heads 129", "1..128"}},
		{[]string{"dump", "-k0", "0"}, []string{"-k0 0", "1..1048576"}},
		{[]string{"dump", "-page1", "0"}, []string{"-page1 0"}},
		{[]string{"dump", "-cache", "fp4"}, []string{"-cache fp4", "fp8ds or bf16"}},
		{[]string{"dump", "-nope", "512"}, []string{"-nope 512", "-cache bf16"}},
		{[]string{"dump", "-tokens", "0"}, []string{"-tokens 0"}},
		{[]string{"dump", "-max-tokens", "-1"}, []string{"-max-tokens -1", "1..65535"}},
		{[]string{"dump", "-max-tokens", "65536"}, []string{"-max-tokens 65536", "1..65535", "grid"}},
		{[]string{"check", "-emu", "-tokens", "3", "-max-tokens", "2"}, []string{"-tokens 3", "1..2", "capacity"}},
		{[]string{"dump", "-split", "65"}, []string{"-split 65", "1..64"}},
		// Issue 21: the precision is one of two names.
		{[]string{"dump", "-precision", "fp8"}, []string{"-precision fp8", "exact", "bf16p"}},
		{[]string{"check", "-emu", "-precision", "BF16P"}, []string{"-precision BF16P", "exact", "bf16p"}},
		{[]string{"gen", "-pkg", "p", "-o", "x.go", "-precision", "", "-targets", "sm_90"}, []string{"-precision", "exact", "bf16p"}},
		{[]string{"dump", "-cache", "bf16", "-nope", "2000"}, []string{"-nope 2000"}},
		{[]string{"check", "-emu", "-kernel", "gemm", "-vectors", "x"}, []string{"-vectors x", "mla_decode only"}},
		{[]string{"check", "-emu", "-vectors", "/nonexistent"}, []string{"-vectors /nonexistent"}},
		{[]string{"check"}, []string{"-emu"}},
		{[]string{"dump", "-after", "regalloc"}, []string{"-after regalloc", "legalize"}},
		{[]string{"dump", "-bogus"}, []string{"-bogus"}},
		{[]string{"frobnicate"}, []string{"frobnicate", "dump, list or check"}},
		// Issue 15: grids past CUDA's limits (65535 in y) cannot launch.
		{[]string{"dump", "-tokens", "65536", "-heads", "16"}, []string{"-tokens 65536", "1..65535", "grid"}},
		{[]string{"dump", "-kernel", "gemm", "-m", "64", "-n", "8388608"}, []string{"-n 8388608", "1..8388480", "65535"}},
		// Issue 15: float flags must be finite float32 values.
		{[]string{"dump", "-scale", "1e39"}, []string{"-scale", "1e39", "float32"}},
		{[]string{"dump", "-scale", "NaN"}, []string{"-scale", "NaN", "finite"}},
		{[]string{"dump", "-scale", "-Inf"}, []string{"-scale", "-Inf", "finite"}},
		{[]string{"dump", "-scale", "1e-50"}, []string{"-scale", "1e-50", "zero as a float32"}},
		{[]string{"check", "-emu", "-invalid", "NaN"}, []string{"-invalid", "NaN"}},
		{[]string{"check", "-emu", "-invalid", "1e40"}, []string{"-invalid", "1e40"}},
		// Issue 15: the host cannot hold these checks; refused before allocating.
		{[]string{"check", "-emu", "-kernel", "gemm", "-m", "16777216", "-n", "8388480", "-k", "16777216"}, []string{"-m 16777216", "host memory", "PiB"}},
		{[]string{"check", "-emu", "-tokens", "65535", "-k0", "1048576", "-page0", "1"}, []string{"-tokens 65535", "host memory", "-tokens x -k0"}},
		// Inside the memory bound but far too slow for the emulator (hours).
		{[]string{"check", "-emu", "-kernel", "gemm", "-m", "8000", "-n", "8000", "-k", "8000"}, []string{"-m 8000", "emulator finishes", "hours", "ptxgen-gpu check -gpu"}},
		{[]string{"check", "-emu", "-kernel", "mma_loop"}, []string{"-ctas 528", "-ctas x -iters", "30-minute limit"}},
		// Issue 15: stray arguments and conflicting flags.
		{[]string{"list", "extra"}, []string{"list takes no arguments", "extra"}},
		{[]string{"dump", "-k1", "0", "-page1", "32"}, []string{"-page1 32", "-k1 0"}},
		{[]string{"dump", "-k1", "0", "-len1=false"}, []string{"-len1 false", "-k1 0"}},
		{[]string{"help", "extra"}, []string{"help takes no arguments", "extra"}},
		{[]string{"dump", "-ir", "-after", "legalize"}, []string{"-ir or -after"}},
		{[]string{"check", "-emu", "-vectors", "../golden/testdata/vectors/mla_decode/h4_sink_edges", "-heads", "8"}, []string{"-heads", "-vectors", "meta.json"}},
		{[]string{"check", "-emu", "-vectors", "../golden/testdata/vectors/mla_decode/h4_sink_edges", "-seed", "2"}, []string{"-seed", "-vectors"}},
		// Issue 15: a forced CTA shape that does not fit the target names its flags
		// and what fits.
		{[]string{"dump", "-head-block", "64", "-target", "sm_120"}, []string{"-head-block 64", "sm_120", "101376", "-head-block 16 -tile 32"}},
		{[]string{"dump", "-head-block", "16", "-tile", "64", "-target", "sm_120"}, []string{"-head-block 16 -tile 64", "-head-block 16 -tile 32"}},
		{[]string{"check", "-emu", "-head-block", "64", "-target", "sm_120"}, []string{"-head-block 64", "-head-block 16 -tile 32"}},
		{[]string{"gen", "-pkg", "p", "-o", "x.go", "-head-block", "64", "-targets", "sm_90,sm_120"}, []string{"-head-block 64 on sm_120", "-head-block 16 -tile 32"}},
		// Issue 22: flags that do not apply are refused, never ignored.
		{[]string{"check", "-emu", "-kernel", "gemm", "-invalid", "0.5"}, []string{"-invalid", "mla_decode only", "gemm"}},
		{[]string{"check", "-emu", "-kernel", "gemm", "-invalid", "0.1"}, []string{"-invalid", "mla_decode only"}}, // the default value, given
		{[]string{"check", "-emu", "-kernel", "gemm", "-poison"}, []string{"-poison", "mla_decode only"}},
		{[]string{"check", "-emu", "-kernel", "gemm", "-poison=false"}, []string{"-poison", "mla_decode only"}},
		{[]string{"check", "-emu", "-kernel", "copy", "-rows", "64", "-out-of-pool=false"}, []string{"-out-of-pool", "mla_decode only", "copy"}},
		{[]string{"dump", "-heads", "16", "-warps64", "16"}, []string{"-warps64 16", "64-head CTAs", "-heads 16"}},
		{[]string{"dump", "-head-block", "32", "-warps64", "8"}, []string{"-warps64 8", "-head-block 32"}},
		{[]string{"dump", "-producer-warps", "3"}, []string{"-producer-warps 3", "1, 2 or 4"}},
		{[]string{"dump", "-heads", "16", "-producer-warps", "2"}, []string{"-producer-warps 2", "64-head CTAs", "-heads 16"}},
		{[]string{"dump", "-cache", "bf16", "-producer-warps", "2"}, []string{"-producer-warps 2", "fp8ds", "-cache bf16"}},
		{[]string{"dump", "-score-warps", "5"}, []string{"-score-warps 5", "0 (automatic), 4 (a score role) or 8 (every warp)"}},
		{[]string{"dump", "-stages", "3"}, []string{"-stages 3", "0 (automatic), 1 or 2"}},
		{[]string{"dump", "-heads", "64", "-producer-warps", "1", "-stages", "2"}, []string{"-stages 2", "-producer-warps"}},
		{[]string{"dump", "-k-frags=maybe"}, []string{"-k-frags", "want auto, true or false"}},
		{[]string{"dump", "-ahead", "4"}, []string{"-ahead 4", "-1 (automatic), 0 (none) or 1..3"}},
		{[]string{"dump", "-ahead", "-2"}, []string{"-ahead -2", "-1 (automatic), 0 (none) or 1..3"}},
		{[]string{"dump", "-heads", "16", "-score-warps", "4"}, []string{"-score-warps 4", "8-warp 64-head CTAs", "-heads 16"}},
		{[]string{"dump", "-heads", "64", "-warps64", "16", "-score-warps", "8"}, []string{"-score-warps 8", "-warps64 16"}},
		{[]string{"dump", "-heads", "64", "-producer-warps", "2", "-score-warps", "4"}, []string{"-score-warps 4", "-producer-warps 2"}},
		{[]string{"dump", "-score-rows", "3"}, []string{"-score-rows 3", "0 (automatic), 1, 2 or 4"}},
		{[]string{"dump", "-heads", "16", "-score-rows", "2"}, []string{"-score-rows 2", "8-warp 64-head CTAs", "-heads 16"}},
		{[]string{"dump", "-heads", "64", "-tokens", "256", "-score-rows", "1"}, []string{"-score-rows 1", "one of 2, 4", "8 score warps over 4 x 4 m16n8 tiles"}},
		{[]string{"dump", "-ir", "-check"}, []string{"-check", "-ir"}},
		{[]string{"gen", "-kernel", "gemm", "-manifest", "m.json", "-pkg", "p"}, []string{"-pkg", "without -o"}},
		{[]string{"gen", "-kernel", "gemm", "-manifest", "m.json", "-type", "T"}, []string{"-type", "without -o"}},
		// Issue 15: the kernel is the value of -kernel, never another flag's value.
		{[]string{"gen", "-pkg", "kernel", "-o", "k.txt"}, []string{"-o k.txt", ".go"}},
	}
	for _, c := range cases {
		code, out, errOut := runCLI(c.args...)
		if code != 2 {
			t.Errorf("%v: exit %d, want 2", c.args, code)
		}
		if out != "" {
			t.Errorf("%v: wrote to stdout: %.80q", c.args, out)
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
}

// TestDumpDefault: with no flags, dump prints mla_decode for DeepSeek-V4-Flash on
// sm_120.
func TestDumpDefault(t *testing.T) {
	code, out, errOut := runCLI()
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, s := range []string{".version 8.7", ".target sm_120", ".entry mla_decode_h16_split_small(", ".entry mla_combine_20(", "mma.sync.aligned.m16n8k16"} {
		if !strings.Contains(out, s) {
			t.Errorf("default dump lacks %q", s)
		}
	}
}

// TestCheckEmu runs the command: gemm 100x72x448 through the emulator.
func TestCheckEmu(t *testing.T) {
	code, out, errOut := runCLI("check", "-emu", "-kernel", "gemm", "-m", "100", "-n", "72", "-k", "448", "-seed", "1")
	if code != 0 || !strings.Contains(out, "max abs err") || !strings.Contains(out, "PASS") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	code, out, errOut = runCLI("check", "-emu", "-vectors", "../golden/testdata/vectors/mla_decode/h4_sink_edges")
	if code != 0 || !strings.Contains(out, "lse: ok") {
		t.Fatalf("vectors: exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

func TestList(t *testing.T) {
	code, out, _ := runCLI("list")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, s := range []string{"gemm", "sm_120", "legalize", "emit"} {
		if !strings.Contains(out, s) {
			t.Errorf("list lacks %q", s)
		}
	}
}

func TestHelpExitsZero(t *testing.T) {
	code, _, errOut := runCLI("dump", "-help")
	if code != 0 || !strings.Contains(errOut, "-heads int") || !strings.Contains(errOut, "-k1 int") {
		t.Fatalf("exit %d, help:\n%s", code, errOut)
	}
	// list -h once exited 2 ("list takes no arguments").
	for _, h := range []string{"-h", "-help", "--help"} {
		code, out, errOut := runCLI("list", h)
		if code != 0 || out != "" || !strings.Contains(errOut, "usage: ptxgen list") {
			t.Errorf("list %s: exit %d, stdout %q, stderr %q; want 0 and the usage on stderr", h, code, out, errOut)
		}
	}
}

// TestCheckVectorsPlan: -head-block and -tile apply to a vector folder (they used to
// be dropped, so the 64-head path never ran on vectors).
func TestCheckVectorsPlan(t *testing.T) {
	code, out, errOut := runCLI("check", "-emu", "-vectors", "../golden/testdata/vectors/mla_decode/h4_sink_edges", "-head-block", "64", "-tile", "64", "-target", "sm_90")
	if code != 0 || !strings.Contains(out, "head-block=64 tile=64") || !strings.Contains(out, "PASS") {
		t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// TestCheckVectorsValidCount: a meta.json whose valid_candidates_per_row disagrees
// with its len and idx files fails the check (exit 1), naming the row.
func TestCheckVectorsValidCount(t *testing.T) {
	dir := copyVectors(t, func(m map[string]any) {
		counts := m["valid_candidates_per_row"].([]any)
		counts[1] = counts[1].(float64) + 1
	})
	code, out, errOut := runCLI("check", "-emu", "-vectors", dir)
	if code != 1 || !strings.Contains(out, "valid_candidates_per_row") || !strings.Contains(out, "mismatch      [1]") {
		t.Fatalf("exit %d, want 1 and the row named; stdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// copyVectors copies the h4_sink_edges test-vector folder into a new folder, with
// edit applied to its meta.json first.
func copyVectors(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	src := "../golden/testdata/vectors/mla_decode/h4_sink_edges"
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
		if e.Name() == "meta.json" {
			var m map[string]any
			if err := json.Unmarshal(b, &m); err != nil {
				t.Fatal(err)
			}
			edit(m)
			if b, err = json.Marshal(m); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestCheckVectorsRefused: a folder whose meta.json lacks valid_candidates_per_row
// or holds the wrong count of them is refused at load (exit 2; it used to run and
// exit 1 with out and lse correct), values past the kernel's limits name their
// meta.json field (not a flag the user never gave), and a file that is a symbolic
// link out of the folder is not followed.
func TestCheckVectorsRefused(t *testing.T) {
	resize := func(dir, name string, n int) {
		if err := os.WriteFile(filepath.Join(dir, name), make([]byte, n), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// H = 200 with every file sized for it (T = 2, D = 512): only the kernel's
	// limit of 128 heads refuses it.
	heads := copyVectors(t, func(m map[string]any) { m["H"] = 200 })
	resize(heads, "q.bf16", 2*200*512*2)
	resize(heads, "sink.f32", 200*4)
	resize(heads, "out_ref.f64", 2*200*512*8)
	resize(heads, "lse_ref.f64", 2*200*8)
	link := copyVectors(t, func(map[string]any) {})
	outside := filepath.Join(t.TempDir(), "sink.f32")
	if b, err := os.ReadFile(filepath.Join(link, "sink.f32")); err != nil || os.WriteFile(outside, b, 0o644) != nil {
		t.Fatal("copying sink.f32 out of the folder")
	}
	if err := os.Remove(filepath.Join(link, "sink.f32")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(link, "sink.f32")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		dir  string
		want []string
	}{
		{"no valid counts", copyVectors(t, func(m map[string]any) { delete(m, "valid_candidates_per_row") }), []string{"valid_candidates_per_row is missing", "T = 2"}},
		{"one valid count", copyVectors(t, func(m map[string]any) { m["valid_candidates_per_row"] = []int{160} }), []string{"valid_candidates_per_row has 1 counts", "T = 2"}},
		{"negative count", copyVectors(t, func(m map[string]any) { m["valid_candidates_per_row"] = []int{160, -1} }), []string{"valid_candidates_per_row[1] = -1", "0..160"}},
		{"200 heads", heads, []string{"meta.json H = 200", "1..128"}},
		{"huge scale", copyVectors(t, func(m map[string]any) { m["sm_scale"] = 1e308 }), []string{"meta.json sm_scale = 1e+308", "float32"}},
		{"bad page stride", copyVectors(t, func(m map[string]any) { m["segments"].([]any)[1].(map[string]any)["page_stride"] = 10 }), []string{"meta.json segments[1].page_stride = 10"}},
		{"link", link, []string{"sink.f32 is a symbolic link"}},
	} {
		code, out, errOut := runCLI("check", "-emu", "-vectors", c.dir)
		if code != 2 || out != "" {
			t.Errorf("%s: exit %d, stdout %q; want 2 and nothing", c.name, code, out)
		}
		for _, w := range append(c.want, "-vectors "+c.dir) {
			if !strings.Contains(errOut, w) {
				t.Errorf("%s: stderr %q lacks %q", c.name, errOut, w)
			}
		}
		for _, flag := range []string{"-heads", "-scale", "-tokens"} {
			if strings.Contains(errOut, flag) {
				t.Errorf("%s: stderr %q names %s, a flag the user did not give", c.name, errOut, flag)
			}
		}
	}
}

// check -help describes -vectors for both its uses: mla_decode's test vectors and,
// with -from, a kernel vector folder (it said "mla_decode only").
func TestCheckHelpVectors(t *testing.T) {
	code, _, errOut := runCLI("check", "-help")
	_, usage, _ := strings.Cut(errOut, "\n  -vectors")
	usage, _, _ = strings.Cut(usage, "\n  -")
	if code != 0 || usage == "" {
		t.Fatalf("exit %d, no -vectors in the help:\n%s", code, errOut)
	}
	for _, want := range []string{"-from", "NAME.want.f64", "mla_decode"} {
		if !strings.Contains(usage, want) {
			t.Errorf("-vectors help %q lacks %q", usage, want)
		}
	}
	if strings.Contains(usage, "mla_decode only") {
		t.Errorf("-vectors help %q says mla_decode only, but check -from takes it too", usage)
	}
}
