package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	pcheck "github.com/ptxgen/ptxgen/check"
	"github.com/ptxgen/ptxgen/ir"
)

// FuzzCheckFrom runs check -emu -from in-process on a program made from the input's
// bytes (one of ptxgen/testdata/from, or a small kernel genProgram writes: loads,
// elementwise ops, loops with carried tiles and bounds from constants or an argument,
// dots, reductions, rows bound to the grid) with the input's string as -args,
// whatever it holds. Whatever they are: no panic; exit 0 (stdout ends in PASS), 1 (the
// emulator found a fault: random arguments read out of bounds) or 2 (refused), each
// error one line; and a clean run did at least the work programWork bounded it by
// before the run (the bound that refuses up front must not refuse what fits). An
// iteration stays short and small: 64 MB of host memory, 2^18 units of emulation
// work (about 50 ms). Seeds: testdata/fuzz/FuzzCheckFrom.
func FuzzCheckFrom(f *testing.F) {
	for _, s := range []struct {
		prog []byte
		args string
	}{
		{[]byte{0}, "alpha=0.5,n=1000"},
		{[]byte{0}, "alpha=0.5,n=1000,y=6148914691236517206"},
		{[]byte{1}, "rows=3,chunks=2"},
		{[]byte{1}, "rows=0"},
		{[]byte{2}, "scale=0.5"},
		{[]byte{3}, ""},
		{[]byte{4, 1, 3, 1, 2, 5, 0, 1, 2, 3, 4, 0, 7, 1}, "n=100"},
		{[]byte{4, 3, 0, 0, 3, 2, 1, 4, 2, 0, 2, 1, 9, 2}, "rows=5,n=1000"},
		{[]byte{5, 1, 2, 0, 6}, "n=3"},
		{[]byte{5, 3, 1, 1, 0}, "n=100000"},
		{[]byte{4, 0, 4, 0, 1, 1, 3, 3, 0, 1, 1, 1}, "n=-5"},
	} {
		f.Add(s.prog, s.args)
	}
	f.Fuzz(func(t *testing.T, prog []byte, args string) {
		if len(prog) > 64 || len(args) > 256 {
			return
		}
		src, target, err := genProgram(prog)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ir.ParseProgram(src); err != nil {
			t.Fatalf("genProgram(%v) wrote a program that does not parse: %v\n%s", prog, err, src)
		}
		path := filepath.Join(t.TempDir(), "p.ir")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		defer func(r func(*pcheck.Case) (*pcheck.Result, error), m int64, w int64) {
			runCase, maxHostBytes, maxProgramWork = r, m, w
		}(runCase, maxHostBytes, maxProgramWork)
		var ran *pcheck.Case
		runCase = func(c *pcheck.Case) (*pcheck.Result, error) {
			ran = c
			return pcheck.Run(pcheck.Emulator{}, c)
		}
		maxHostBytes, maxProgramWork = 64<<20, 1<<18
		code, out, errOut := runCLI("check", "-emu", "-target", target, "-from", path, "-args", args)
		what := fmt.Sprintf("check -emu -target %s -from p.ir -args %q (genProgram(%v)):\n%s", target, args, prog, src)
		switch {
		case code != 0 && code != 1 && code != 2:
			t.Fatalf("%s\nexit %d, want 0, 1 or 2; stderr %q", what, code, errOut)
		case code != 0 && (out != "" || strings.Count(strings.TrimSpace(errOut), "\n") != 0 || !strings.HasPrefix(errOut, "ptxgen: ")):
			t.Errorf("%s\nexit %d: want one line on stderr and nothing on stdout; stdout %q, stderr %q", what, code, out, errOut)
		case code == 0 && !strings.HasSuffix(out, "PASS\n"):
			t.Errorf("%s\nexit 0 without PASS: %q", what, out)
		case strings.Contains(errOut, "ptxgen bug") || strings.Contains(errOut, "panic"):
			t.Errorf("%s\n%s", what, errOut)
		}
		if code == 0 && ran != nil && ran.WorkUsed < ran.WorkBound {
			t.Errorf("%s\nthe run did %d units of work, less than the %d programWork bounded it by", what, ran.WorkUsed, ran.WorkBound)
		}
	})
}

// fromFiles are the programs of ptxgen/testdata/from genProgram picks first.
var fromFiles = []string{"scale.ir", "split.ir", "roles.ir", "phased.ir"}

// genProgram writes a small valid program from b, and the target to lower it for.
// b[0] picks one of fromFiles or one of two generated kernels: elementwise (a rank-1
// tile of N f32 per CTA, masked by %n, through ops and a loop carrying the tile) or
// dots (a 16x16 bf16 tile multiplied into a carried accumulator in a loop, then
// reduced by rows). The loop bounds are constants or %n, so arguments change the
// work; buffers are sized for the grid, so %n past the elements reads out of bounds.
func genProgram(b []byte) (src, target string, err error) {
	g := &byteGen{b: b}
	kind := g.n(len(fromFiles) + 2)
	target = []string{"sm_90", "sm_120", "sm_80"}[g.n(3)]
	if kind < len(fromFiles) {
		data, err := os.ReadFile(filepath.Join("testdata", "from", fromFiles[kind]))
		return string(data), "sm_90", err // roles and phased need sm_90's shared memory
	}
	warps := 1 + g.n(4)
	var s strings.Builder
	line := func(format string, args ...any) { fmt.Fprintf(&s, "  "+format+"\n", args...) }
	hi := func() string {
		if g.n(2) == 0 {
			line("%%hi = const %d : i32", g.n(12))
			return "%hi"
		}
		return "%n"
	}
	if kind == len(fromFiles) {
		n := []int{32, 64, 100, 128, 256}[g.n(5)]
		ctas := 1 + g.n(4)
		grid, rowsParam, size := fmt.Sprint(ctas), "", fmt.Sprintf("bytes %d", 4*n*ctas)
		if g.n(2) == 1 {
			grid, rowsParam, size = fmt.Sprintf("%%rows max %d", ctas), "%rows: i32, ", fmt.Sprintf("perrow %d", 4*n)
		}
		fmt.Fprintf(&s, "kernel gen(%s%%n: i32, %%x: ptr<f32> div 4 %s, %%y: ptr<f32> div 4 %s) grid(%s, 1, 1) warps %d {\n", rowsParam, size, size, grid, warps)
		line("%%pid = program_id 0 : i32")
		line("%%bs = const %d : i32", n)
		line("%%base = mul %%pid, %%bs : i32")
		line("%%i = iota : tile<%dxi32>", n)
		line("%%off = add %%i, %%base : tile<%dxi32>", n)
		line("%%m = cmp lt %%off, %%n : tile<%dxi1>", n)
		line("%%v0 = load %%x[%%off] mask(%%m) : tile<%dxf32>", n)
		line("%%half = const 0.5 : f32")
		cur := "%v0"
		unary := []string{"exp", "neg", "sqrt", "rcp", "exp2"}
		binary := []string{"add", "mul", "max", "min", "sub"}
		for k := range g.n(5) {
			next := fmt.Sprintf("%%e%d", k)
			if g.n(2) == 0 {
				line("%s = %s %s, %%half : tile<%dxf32>", next, binary[g.n(len(binary))], cur, n)
			} else {
				line("%s = %s %s : tile<%dxf32>", next, unary[g.n(len(unary))], cur, n)
			}
			cur = next
		}
		if g.n(3) > 0 {
			line("%%lo = const %d : i32", g.n(3))
			h := hi()
			fmt.Fprintf(&s, "  %%r = for %%j = %%lo to %s step %d iter(%%acc = %s) {\n", h, 1+g.n(3), cur)
			line("  %%t = mul %%acc, %%half : tile<%dxf32>", n)
			line("  %%u = %s %%t, %%v0 : tile<%dxf32>", binary[g.n(len(binary))], n)
			line("  yield %%u")
			s.WriteString("  }\n")
			cur = "%r"
		}
		line("store %%y[%%off] mask(%%m), %s", cur)
		s.WriteString("}\n")
		return s.String(), target, nil
	}
	fmt.Fprintf(&s, "kernel gendot(%%a: ptr<bf16> div 16 bytes 512, %%y: ptr<f32> div 16 bytes 64, %%n: i32) grid(%d, 1, 1) warps %d {\n", 1+g.n(3), warps)
	line("%%i = iota : tile<16xi32>")
	line("%%ri = cast %%i : tile<16xi64>")
	line("%%c16 = const 16 : i64")
	line("%%ra = mul %%ri, %%c16 : tile<16xi64>")
	line("%%z = const 0 : i64")
	line("%%at = load %%a[%%ra, %%z] : tile<16x16xbf16>")
	line("%%acc0 = const 0.0 : tile<16x16xf32>")
	line("%%lo = const 0 : i32")
	h := hi()
	fmt.Fprintf(&s, "  %%s = for %%j = %%lo to %s step 1 iter(%%acc = %%acc0) {\n", h)
	line("  %%d = dot %%at, %%at, %%acc : tile<16x16xf32>")
	line("  yield %%d")
	s.WriteString("  }\n")
	line("%%mx = reduce %s %%s, 1 : tile<16xf32>", []string{"max", "sum"}[g.n(2)])
	line("store %%y[%%ri], %%mx")
	s.WriteString("}\n")
	return s.String(), target, nil
}

// byteGen hands out small numbers from a fuzz input, 0 once it is spent.
type byteGen struct {
	b []byte
	i int
}

func (g *byteGen) n(k int) int {
	if g.i >= len(g.b) {
		return 0
	}
	g.i++
	return int(g.b[g.i-1]) % k
}
