package ir

import (
	"strconv"
	"strings"
	"testing"
)

// boundsKernel is a small valid kernel that the cases of TestParseRefusesOutOfRange
// change one attribute or op of.
const boundsKernel = `kernel k(%x: ptr<f32> div 16 bytes 4096, %y: ptr<f32> div 16 bytes 4096, %n: i32, %s: i64, %alpha: f32) grid(1, 1, 1) warps 6 role mma 0 4 role load 4 2 {
  %lo = const 0 : i32
  %hi = const 8 : i32
  %r = iota : tile<16xi32>
  %o = cast %r : tile<16xi64>
  %z = const 0 : i64
  %acc0 = const 0.0 : tile<16xf32>
  %acc = for %i = %lo to %hi step 1 iter(%a = %acc0) {
    %t = load %x[%o] : tile<16xf32>
    %u = add %a, %t : tile<16xf32>
    yield %u
  }
  store %y[%o], %acc
}
`

// TestBoundsKernelParses: the kernel the refusals start from is valid, so each
// refusal below is the change's.
func TestBoundsKernelParses(t *testing.T) {
	if _, err := Parse(boundsKernel); err != nil {
		t.Fatal(err)
	}
}

// TestParseRefusesOutOfRange: values whose arithmetic overflows, or that the lowering
// and launchers would ignore, are refused with one error naming the value and what is
// accepted (issue 29). Each used to pass the verifier: the roles spun the warp-grid
// search or wrote `bar.sync 2, -32`, the tiles wrapped past 2^64 elements to 0 and
// ran the host out of memory, the step was printed as an s32 immediate.
func TestParseRefusesOutOfRange(t *testing.T) {
	for _, c := range []struct{ name, from, to, want string }{
		{"role whose warp count overflows", "role load 4 2", "role load 4 9223372036854775807",
			"ir: kernel k: role load is warps 4..9223372036854775810 (first 4, 9223372036854775807 warps); the CTA has warps 0..5 and a role at least one"},
		{"role whose first warp overflows", "role load 4 2", "role load 9223372036854775807 1",
			"ir: kernel k: role load is warps 9223372036854775807..9223372036854775807 (first 9223372036854775807, 1 warps); the CTA has warps 0..5"},
		{"role past the CTA by its first warp", "role load 4 2", "role load 1 9223372036854775807",
			"role load is warps 1..9223372036854775807 (first 1, 9223372036854775807 warps)"},
		{"tile whose extents multiply to 2^64", "%acc0 = const 0.0 : tile<16xf32>", "%c = const 1.0 : tile<1048576x17592186044416xf32>\n  %acc0 = const 0.0 : tile<16xf32>",
			"result %c: tile of 18446744073709551616 elements exceeds the limit of 1048576"},
		{"tile of 16 x 2^60", "%acc0 = const 0.0 : tile<16xf32>", "%c = const 1.0 : tile<16x1152921504606846976xf32>\n  %acc0 = const 0.0 : tile<16xf32>",
			"result %c: tile of 18446744073709551616 elements exceeds the limit of 1048576"},
		{"loop step past i32", "step 1", "step 4294967297",
			"step 4294967297: want 1..2147483647 (the induction variable is an i32)"},
		{"perrow past the buffer limit", "%y: ptr<f32> div 16 bytes 4096", "%y: ptr<f32> div 16 perrow 4611686018427387904",
			"ir: kernel k: parameter %y: perrow 4611686018427387904, want 0..281474976710656"},
		{"bytes past the buffer limit", "%y: ptr<f32> div 16 bytes 4096", "%y: ptr<f32> div 16 bytes 4611686018427387904",
			"ir: kernel k: parameter %y: bytes 4611686018427387904, want 0..281474976710656"},
		{"perpart past the buffer limit", "%y: ptr<f32> div 16 bytes 4096", "%y: ptr<f32> div 16 perpart 4611686018427387904",
			"ir: kernel k: parameter %y: perpart 4611686018427387904, want 0..281474976710656"},
		{"bytes not a multiple of the element", "%y: ptr<f32> div 16 bytes 4096", "%y: ptr<f32> div 16 bytes 4001",
			"ir: kernel k: parameter %y: bytes 4001 is not a multiple of 4, the size of one f32"},
		{"perrow not a multiple of the element", "%y: ptr<f32> div 16 bytes 4096", "%y: ptr<f32> div 16 perrow 6",
			"ir: kernel k: parameter %y: perrow 6 is not a multiple of 4, the size of one f32"},
		{"bytes on a scalar", "%n: i32,", "%n: i32 bytes 4,",
			"ir: kernel k: parameter %n: bytes 4 on a scalar: bytes, perrow and perpart size a pointer's buffer"},
		{"div on an f32", "%alpha: f32", "%alpha: f32 div 4",
			"ir: kernel k: parameter %alpha: div 4 on an f32: div is a pointer's alignment or an integer's divisor"},
		{"pointer alignment 2^62", "%x: ptr<f32> div 16", "%x: ptr<f32> div 4611686018427387904",
			"ir: kernel k: parameter %x: div 4611686018427387904, want 0 or a power of two in 1..4096 (a pointer's alignment in bytes)"},
		{"i32 divisor past its type", "%n: i32,", "%n: i32 div 4294967296,",
			"ir: kernel k: parameter %n: div 4294967296, want 0 or a power of two in 1..1073741824 (a divisor of the i32)"},
		{"repeated bytes", "%y: ptr<f32> div 16 bytes 4096", "%y: ptr<f32> div 16 bytes 4096 bytes 8",
			"parameter %y: bytes given twice"},
		{"repeated div", "%y: ptr<f32> div 16 bytes 4096", "%y: ptr<f32> div 16 div 4 bytes 4096",
			"parameter %y: div given twice"},
		{"strided run of 2^63-1", "%y: ptr<f32> div 16 bytes 4096", "%y: ptr<f32> div 16 bytes 4096 strided 9223372036854775807 [%s x 2]",
			"ir: kernel k: parameter %y: strided: run 9223372036854775807, want 1..70368744177664 elements (281474976710656 bytes of f32)"},
		{"strided count past i32", "%y: ptr<f32> div 16 bytes 4096", "%y: ptr<f32> div 16 bytes 4096 strided 4 [%s x 9223372036854775807]",
			"ir: kernel k: parameter %y: strided: %s x 9223372036854775807: want a count in 1..2147483647"},
		{"yield outside a loop", "  store %y[%o], %acc\n}", "  store %y[%o], %acc\n  yield %acc\n}",
			"yield outside a loop: only a loop's body yields (its carried values)"},
		{"yield before the end of a body", "    yield %u\n  }", "    yield %u\n    %w = add %u, %u : tile<16xf32>\n  }",
			`yield ends a loop's body: want "}" after it, have "%w"`},
		{"load whose type differs from its pointer's", "%t = load %x[%o] : tile<16xf32>\n    %u = add %a, %t : tile<16xf32>", "%t = load %x[%o] : tile<16xbf16>\n    %u = add %a, %a : tile<16xf32>",
			"ir: %t = load %x[%o] : tile<16xbf16>: operand 0 (%x: ptr<f32>): the pointer is to f32, the load's result is bf16"},
	} {
		src := strings.Replace(boundsKernel, c.from, c.to, 1)
		if src == boundsKernel {
			t.Fatalf("%s: %q is not in the kernel", c.name, c.from)
		}
		_, err := Parse(src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Parse says %v, want an error with %q", c.name, err, c.want)
		}
		if _, err := ParseProgram(src); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ParseProgram says %v, want an error with %q", c.name, err, c.want)
		}
	}
}

// TestVerifyRefusesOutOfRange: the builder's kernels meet the same bounds (Finish
// verifies), so a kernel built in Go cannot carry them past the parser.
func TestVerifyRefusesOutOfRange(t *testing.T) {
	b := NewBuilder("k")
	b.SetWarps(4)
	b.DeclareRole("r", 2, int(^uint(0)>>1))
	if _, err := b.Finish(); err == nil || !strings.Contains(err.Error(), "role r is warps 2..9223372036854775808") {
		t.Errorf("role overflowing the CTA: %v", err)
	}
	b = NewBuilder("k")
	b.ParamRows("y", PtrTo(F32), 16, 1<<62)
	if _, err := b.Finish(); err == nil || !strings.Contains(err.Error(), "perrow 4611686018427387904, want 0..281474976710656") {
		t.Errorf("perrow 2^62: %v", err)
	}
}

// TestParseRefusesEmptyText: a text with no kernel says so, not that the program's
// name "" is no identifier.
func TestParseRefusesEmptyText(t *testing.T) {
	for _, src := range []string{"", "\n\n", "// only a comment\n  // and another\n"} {
		want := "ir: parse: no kernel: the text is empty or only comments (want kernel NAME(...) or a program header)"
		if _, err := ParseProgram(src); err == nil || err.Error() != want {
			t.Errorf("ParseProgram(%q): %v, want %q", src, err, want)
		}
		if _, err := Parse(src); err == nil || err.Error() != want {
			t.Errorf("Parse(%q): %v, want %q", src, err, want)
		}
	}
}

// TestLoopNestingBounded: loops nest at most MaxLoopDepth deep; deeper is refused by
// the parser before the kernel is built further, and by the verifier. (Printing
// indents each level, so 40,000 nested loops took 8 GB to copy.)
func TestLoopNestingBounded(t *testing.T) {
	nest := func(depth int) string {
		var b strings.Builder
		b.WriteString("kernel k() grid(1, 1, 1) warps 1 {\n  %lo = const 0 : i32\n  %hi = const 2 : i32\n")
		for i := range depth {
			b.WriteString("for %i" + strconv.Itoa(i) + " = %lo to %hi step 1 {\n")
		}
		b.WriteString(strings.Repeat("}\n", depth))
		b.WriteString("}\n")
		return b.String()
	}
	if _, err := Parse(nest(MaxLoopDepth)); err != nil {
		t.Errorf("%d nested loops: %v", MaxLoopDepth, err)
	}
	want := "loops nest 33 deep, more than the limit of 32"
	for _, depth := range []int{MaxLoopDepth + 1, 40000} {
		if _, err := Parse(nest(depth)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%d nested loops: %v, want an error with %q", depth, err, want)
		}
	}
	k, err := Parse(nest(MaxLoopDepth))
	if err != nil {
		t.Fatal(err)
	}
	inner := k.Body.Ops[2]
	for len(inner.Body.Ops) > 0 {
		inner = inner.Body.Ops[0]
	}
	inner.Body.Ops = append(inner.Body.Ops, &Op{Kind: OpFor, Int: 1, Args: k.Body.Ops[2].Args[:2], Body: &Block{Args: []*Value{{Name: "deep", Type: ScalarOf(I32)}}}})
	if err := Verify(k); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Verify of %d nested loops: %v, want an error with %q", MaxLoopDepth+1, err, want)
	}
}
