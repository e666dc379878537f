package ir

import (
	"strings"
	"testing"
)

// User IR that names, stores or sizes things the lowering cannot emit is refused by
// the verifier (Parse verifies) with an error naming the op or the name.
func TestParseRefusesUserIR(t *testing.T) {
	const store = "kernel k(%y: ptr<i32> bytes 128) grid(1, 1, 1) warps 1 {\n  %i = iota : tile<32xi32>\n  %v = %OP\n  store %y[%i], %v\n}\n"
	for _, c := range []struct{ name, src, want string }{
		{"kernel name starts with a digit", "kernel 9lives() grid(1, 1, 1) warps 1 {\n}\n",
			`ir: kernel name "9lives" is not a PTX identifier: want ASCII letters, digits and _, starting with a letter (or _ and at least one more character)`},
		{"kernel name _", "kernel _() grid(1, 1, 1) warps 1 {\n}\n",
			`ir: kernel name "_" is not a PTX identifier: want ASCII letters, digits and _, starting with a letter (or _ and at least one more character)`},
		{"kernel named like the shared array", "kernel smem() grid(1, 1, 1) warps 1 {\n}\n",
			`ir: kernel name "smem" is reserved: it is the shared-memory array every generated module declares`},
		{"kernel named like a PTX constant", "kernel WARP_SZ() grid(1, 1, 1) warps 1 {\n}\n",
			`ir: kernel name "WARP_SZ" is reserved: it is a constant PTX predefines`},
		{"kernel name too long", "kernel " + strings.Repeat("k", MaxNameLen+1) + "() grid(1, 1, 1) warps 1 {\n}\n",
			`is 257 bytes long, want at most 256`},
		{"parameter name starts with a digit", "kernel k(%9x: i32) grid(1, 1, 1) warps 1 {\n}\n",
			`ir: kernel k: parameter name "9x" is not a PTX identifier: want ASCII letters, digits and _, starting with a letter (or _ and at least one more character)`},
		{"parameter _", "kernel k(%_: i32) grid(1, 1, 1) warps 1 {\n}\n",
			`ir: kernel k: parameter name "_" is not a PTX identifier`},
		{"pointer to i1", "kernel k(%m: ptr<i1> bytes 32) grid(1, 1, 1) warps 1 {\n}\n",
			`ir: kernel k: parameter %m has type ptr<i1>; parameters are pointers (not to i1, a predicate with no memory form) or i32/i64/f32 scalars`},
		{"i32 constant too large", strings.Replace(store, "%OP", "const 99999999999 : tile<32xi32>", 1),
			`ir: parse: line 3: ir: %v = const 99999999999 : tile<32xi32>: result %v: i32 constant 99999999999 out of range -2147483648..2147483647`},
		{"i32 constant too small", strings.Replace(store, "%OP", "const -2147483649 : tile<32xi32>", 1),
			`i32 constant -2147483649 out of range -2147483648..2147483647`},
		{"u8 constant negative", "kernel k() grid(1, 1, 1) warps 1 {\n  %c = const -1 : u8\n}\n",
			`ir: parse: line 2: ir: %c = const -1 : u8: result %c: u8 constant -1 out of range 0..255`},
		{"u8 constant 256", "kernel k() grid(1, 1, 1) warps 1 {\n  %c = const 256 : u8\n}\n",
			`u8 constant 256 out of range 0..255`},
		{"i1 constant 2", "kernel k() grid(1, 1, 1) warps 1 {\n  %c = const 2 : i1\n}\n",
			`i1 constant 2 out of range 0..1`},
		{"store of i1 through a bitcast pointer", "kernel k(%y: ptr<u8> bytes 32) grid(1, 1, 1) warps 1 {\n  %p = bitcast %y : ptr<i1>\n}\n",
			`ir: parse: line 2: ir: %p = bitcast %y : ptr<i1>: result %p: bitcast of an i1 (a predicate has no bits to reinterpret): cast it instead (u8 -> i1 gives 0 or 1)`},
		{"bitcast of an i1 tile", strings.Replace(strings.Replace(store, "%OP", "cmp gt %i, %i : tile<32xi1>\n  %w = bitcast %v : tile<32xu8>", 1), "store %y[%i], %v", "", 1),
			`ir: parse: line 4: ir: %w = bitcast %v : tile<32xu8>: result %w: bitcast of an i1 (a predicate has no bits to reinterpret): cast it instead (i1 -> u8 gives 0 or 1)`},
		{"split parameter not i32", "kernel k(%rows: i32, %s: i64 split) grid(1, %rows max 4, %s max 2) warps 1 {\n}\n",
			`ir: kernel k: split parameter %s has type i64, want i32`},
		{"two split parameters", "kernel k(%rows: i32, %s: i32 split, %t: i32 split) grid(1, %rows max 4, %s max 2) warps 1 {\n}\n",
			`ir: kernel k: parameters %s and %t are both marked split; a kernel has at most one split`},
		{"split parameter binds no dimension", "kernel k(%rows: i32, %s: i32 split) grid(1, %rows max 4, 1) warps 1 {\n}\n",
			`ir: kernel k: split parameter %s binds no grid dimension: bind it to the one after the rows (grid(..., %s max N))`},
		{"split parameter bound as the rows", "kernel k(%s: i32 split) grid(1, %s max 4, 1) warps 1 {\n}\n",
			`ir: kernel k: grid dimension 1, the first bound one, is the rows of the call, but %s is marked split: bind the rows to an earlier dimension`},
		{"a parameter named split is not the split", "kernel k(%rows: i32, %split: i32) grid(1, %rows max 4, %split max 2) warps 1 {\n}\n",
			`ir: kernel k: grid dimension 2 is bound to %split: after the rows (%rows) only the parameter marked split may bind a dimension`},
	} {
		_, err := Parse(c.src)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Parse says %v, want %q", c.name, err, c.want)
		}
	}
}

// The store of an i1 tile is refused where it is written, naming the store; the
// builder reports it at the author's line.
func TestStoreOfI1(t *testing.T) {
	src := "kernel k(%x: ptr<i32> bytes 128) grid(1, 1, 1) warps 1 {\n  %i = iota : tile<32xi32>\n  %z = const 0 : i32\n  %c = cmp gt %i, %z : tile<32xi1>\n  store %x[%i], %c\n}\n"
	want := `ir: parse: line 5: ir: store %x[%i], %c: operand 2 (%c: tile<32xi1>): i1 has no memory form (a predicate): store a u8 or i32 instead, converted with cast (0 or 1)`
	if _, err := Parse(src); err == nil || err.Error() != want {
		t.Errorf("store of an i1 into an i32 buffer: Parse says %v, want %q", err, want)
	}
	b := NewBuilder("k")
	x := b.Param("x", PtrTo(U8), 1, 32)
	i := b.Iota(32)
	c := b.Cmp(CmpGT, i, b.I32(0))
	b.Store1(b.Bitcast(x, I1), b.Cast(i, I64), nil, c)
	_, err := b.Finish()
	if err == nil || !strings.Contains(err.Error(), "validate_test.go:") || !strings.Contains(err.Error(), "bitcast of an i1") {
		t.Errorf("builder store of i1: %v", err)
	}
	// The defined widening: cast gives 0 or 1, which may be stored.
	ok := "kernel k(%x: ptr<u8> bytes 32) grid(1, 1, 1) warps 1 {\n  %i = iota : tile<32xi32>\n  %z = const 0 : i32\n  %c = cmp gt %i, %z : tile<32xi1>\n  %w = cast %c : tile<32xu8>\n  store %x[%i], %w\n}\n"
	if _, err := Parse(ok); err != nil {
		t.Errorf("store of a cast predicate: %v", err)
	}
}

// Names that are PTX identifiers pass, and a parameter called split is an ordinary
// parameter; the extremes of each integer type are constants.
func TestParseAcceptsUserIR(t *testing.T) {
	for _, src := range []string{
		"kernel _k(%split: i32, %_x: i32, %Param_9: ptr<f32> bytes 4) grid(1, 1, 1) warps 1 {\n}\n",
		"kernel k9(%rows: i32, %chunks: i32 split, %p: ptr<f32> div 4 perpart 64) grid(1, %rows max 4, %chunks max 3) warps 1 {\n}\n",
		"kernel k() grid(1, 1, 1) warps 1 {\n  %a = const -2147483648 : i32\n  %b = const 2147483647 : i32\n  %c = const 255 : u8\n  %d = const 0 : u8\n  %e = const -9223372036854775808 : i64\n  %f = const 1 : i1\n}\n",
	} {
		k, err := Parse(src)
		if err != nil {
			t.Errorf("Parse(%q): %v", src, err)
			continue
		}
		if got := Print(k); got != src {
			t.Errorf("round trip:\n%s\nprints\n%s", src, got)
		}
	}
}
