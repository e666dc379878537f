package ir

import (
	"strings"
	"testing"
)

// everyOp builds a kernel that uses every op, so the text form round trip covers
// every printer and parser case.
func everyOp(t testing.TB) *Kernel {
	b := NewBuilder("every_op")
	b.SetGrid(3, 2, 1)
	b.SetWarps(4)
	q := b.Param("q", PtrTo(BF16), 16, 4096)
	idx := b.Param("idx", PtrTo(I32), 4, 0)
	out := b.Param("out", PtrTo(F32), 16, 0)
	ld := b.Param("ld", ScalarOf(I64), 8, 0)
	scale := b.Param("scale", ScalarOf(F32), 0, 0)
	pid := b.ProgramID(1)
	rows := b.Iota(24)
	ok := b.Cmp(CmpLT, rows, b.I32(20))
	ids := b.Load1(idx, rows, ok)
	valid := b.And(ok, b.Cmp(CmpGE, ids, b.I32(0)))
	off := b.Mul(b.Cast(b.Rem(ids, b.I32(7)), I64), ld)
	qt := b.Load2(q, off, b.Cast(pid, I64), 40, valid, b.I32(33))
	kt := b.Load2(b.Select(b.Cmp(CmpGE, pid, b.I32(1)), q, q), off, b.I64(0), 40, nil, nil)
	zero := b.ConstFloat(0, TileOf(F32, 24, 24))
	res := b.For(b.I32(0), b.I32(3), 1, []*Value{zero, b.F32(NegInf)}, func(iv *Value, c []*Value) []*Value {
		s := b.Dot(qt, b.Trans(kt), c[0])
		s = b.Mul(s, scale)
		s = b.Select(b.Broadcast(valid, 0, 24, 24), s, b.F32(NegInf))
		m := b.Reduce("max", s, 1)
		p := b.Exp2(b.Sub(s, b.Broadcast(m, 1, 24, 24)))
		l := b.Reduce("sum", p, 1)
		lg := b.Log2(b.Max(l, b.F32(1e-30)))
		_ = b.Neg(lg)
		_ = b.Log(b.Exp(b.Rsqrt(b.Sqrt(l))))
		sh := b.Shr(b.Shl(b.Xor(b.Or(iv, b.I32(1)), b.I32(2)), b.I32(1)), b.I32(1))
		_ = b.Min(b.Div(sh, b.I32(3)), b.I32(9))
		_ = b.Bitcast(b.Cast(p, BF16), F16)
		_ = b.Column(p, 3)
		_ = b.Slice(ids, b.Mul(iv, b.I32(8)), 8)
		return []*Value{p, c[1]}
	})
	b.Store2(out, off, b.I64(0), valid, b.I32(24), res[0])
	b.Store1(out, b.Cast(rows, I64), nil, b.Reduce("max", res[0], 0))
	k, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestRoundTrip(t *testing.T) {
	k := everyOp(t)
	text := Print(k)
	k2, err := Parse(text)
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if got := Print(k2); got != text {
		t.Errorf("round trip changed the text:\n--- printed\n%s\n--- reparsed\n%s", text, got)
	}
	for _, s := range []string{"load %q[", "mask(", "bound(", "for ", "iter(", "yield ", "reduce max", "broadcast ", "= sqrt ", "= rsqrt ", "= exp ", "= log ", "column ", "slice ", "-inf", "div 16 bytes 4096", "%q, %q : ptr<bf16>"} {
		if !strings.Contains(text, s) {
			t.Errorf("text form lacks %q", s)
		}
	}
}

func TestFloatConstantsRoundTrip(t *testing.T) {
	for _, f := range []float64{0, -0.5, 1e-30, 3.4028234663852886e38, NegInf, 0.1} {
		b := NewBuilder("c")
		b.F32(f)
		k, err := b.Finish()
		if err != nil {
			t.Fatal(err)
		}
		k2, err := Parse(Print(k))
		if err != nil {
			t.Fatal(err)
		}
		if got := k2.Body.Ops[0].Float; got != f {
			t.Errorf("constant %v came back as %v", f, got)
		}
	}
}

// TestVerifierErrors: each ill-formed kernel is rejected with an error naming the
// op, the operand and the problem.
func TestVerifierErrors(t *testing.T) {
	cases := []struct {
		name string
		src  string
		want []string
	}{
		{"shape mismatch", `kernel k() grid(1, 1, 1) warps 1 {
  %a = iota : tile<8xi32>
  %b = iota : tile<9xi32>
  %c = add %a, %b : tile<8xi32>
}`, []string{"%c = add %a, %b", "operand 1 (%b: tile<9xi32>)", "shape [9] differs from [8]"}},
		{"dot inner dims", `kernel k(%p: ptr<bf16>) grid(1, 1, 1) warps 1 {
  %z = const 0 : i64
  %r = iota : tile<16xi32>
  %o = cast %r : tile<16xi64>
  %a = load %p[%o, %z] : tile<16x32xbf16>
  %b = load %p[%o, %z] : tile<16x8xbf16>
  %c = const 0.0 : tile<16x8xf32>
  %d = dot %a, %b, %c : tile<16x8xf32>
}`, []string{"dot %a, %b, %c", "operand 1", "inner dimensions differ: a is 16x32, b is 16x8"}},
		{"use out of scope", `kernel k() grid(1, 1, 1) warps 1 {
  %lo = const 0 : i32
  %hi = const 4 : i32
  for %i = %lo to %hi step 1 {
    %x = add %i, %lo : i32
  }
  %y = add %x, %lo : i32
}`, []string{"%y = add %x, %lo", "operand 0 (%x: i32)", "outside its scope"}},
		{"pointer select by a tile", `kernel k(%p: ptr<f32>, %q: ptr<f32>) grid(1, 1, 1) warps 1 {
  %r = iota : tile<16xi32>
  %z = const 0 : i32
  %c = cmp lt %r, %z : tile<16xi1>
  %s = select %c, %p, %q : ptr<f32>
}`, []string{"%s = select %c, %p, %q", "a pointer select takes a scalar condition, not tile<16xi1>"}},
		{"pointer select of two types", `kernel k(%p: ptr<f32>, %q: ptr<i32>) grid(1, 1, 1) warps 1 {
  %i = program_id 0 : i32
  %z = const 0 : i32
  %c = cmp lt %i, %z : i1
  %s = select %c, %p, %q : ptr<f32>
}`, []string{"%s = select %c, %p, %q", "operand 2", "ptr<i32> differs from ptr<f32>: a pointer select takes two pointers of one type"}},
		{"pointer select of a pointer and an integer", `kernel k(%p: ptr<f32>) grid(1, 1, 1) warps 1 {
  %i = program_id 0 : i32
  %z = const 0 : i32
  %c = cmp lt %i, %z : i1
  %s = select %c, %p, %i : ptr<f32>
}`, []string{"%s = select %c, %p, %i", "i32 differs from ptr<f32>: a pointer select takes two pointers of one type"}},
		{"bad grid", `kernel k() grid(0, 1, 1) warps 1 {
}`, []string{"grid dimension 0 is 0"}},
		{"grid y past CUDA's limit", `kernel k() grid(1, 65536, 1) warps 1 {
}`, []string{"grid dimension 1 is 65536, want 1..65535"}},
		{"grid z past CUDA's limit", `kernel k() grid(1, 1, 70000) warps 1 {
}`, []string{"grid dimension 2 is 70000, want 1..65535"}},
		{"bad warps", `kernel k() grid(1, 1, 1) warps 33 {
}`, []string{"33 warps per CTA, want 1..32"}},
		{"exp2 on ints", `kernel k() grid(1, 1, 1) warps 1 {
  %a = const 1 : i32
  %b = exp2 %a : i32
}`, []string{"exp2 %a", "exp2 is not defined on i32"}},
		{"rcp on ints", `kernel k() grid(1, 1, 1) warps 1 {
  %a = const 1 : i32
  %b = rcp %a : i32
}`, []string{"rcp %a", "rcp is not defined on i32"}},
		{"sqrt on ints", `kernel k() grid(1, 1, 1) warps 1 {
  %a = const 1 : i32
  %b = sqrt %a : i32
}`, []string{"sqrt %a", "sqrt is not defined on i32"}},
		{"exp on bf16", `kernel k() grid(1, 1, 1) warps 1 {
  %a = const 1 : bf16
  %b = exp %a : bf16
}`, []string{"exp %a", "exp is not defined on bf16"}},
		{"log result type", `kernel k() grid(1, 1, 1) warps 1 {
  %a = const 1 : f32
  %b = log %a : i32
}`, []string{"log %a", "want f32, have i32"}},
		{"rsqrt on a tile of i32", `kernel k() grid(1, 1, 1) warps 1 {
  %a = iota : tile<8xi32>
  %b = rsqrt %a : tile<8xi32>
}`, []string{"rsqrt %a", "rsqrt is not defined on i32"}},
		{"mask shape", `kernel k(%p: ptr<f32>) grid(1, 1, 1) warps 1 {
  %r = iota : tile<8xi32>
  %m = iota : tile<4xi32>
  %c = const 1 : i32
  %mm = cmp lt %m, %c : tile<4xi1>
  %v = load %p[%r] mask(%mm) : tile<8xf32>
}`, []string{"load %p[%r] mask(%mm)", "the mask must be i1 shaped like the offsets"}},
		{"slice too long", `kernel k() grid(1, 1, 1) warps 1 {
  %a = iota : tile<8xi32>
  %s = const 2 : i32
  %b = slice %a, %s, 9 : tile<9xi32>
}`, []string{"slice %a, %s, 9", "slice length 9 out of range 1..8"}},
		{"slice start not i32", `kernel k() grid(1, 1, 1) warps 1 {
  %a = iota : tile<8xi32>
  %s = const 2 : i64
  %b = slice %a, %s, 4 : tile<4xi32>
}`, []string{"slice start must be a scalar i32"}},
		{"unknown op", `kernel k() grid(1, 1, 1) warps 1 {
  %a = frobnicate : i32
}`, []string{"unknown op \"frobnicate\""}},
		{"parse error line", `kernel k() grid(1, 1, 1) warps 1 {
  %a = const 1 : i32
  %b = add %a, %nope : i32
}`, []string{"line 3", "undefined value %nope"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse(c.src)
			if err == nil {
				t.Fatal("accepted an ill-formed kernel")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestBuilderErrorLocation: the builder reports the kernel author's line.
func TestBuilderErrorLocation(t *testing.T) {
	b := NewBuilder("k")
	x := b.Iota(8)
	y := b.Iota(9)
	b.Add(x, y) // the error must point here
	b.Add(x, x) // later calls are no-ops once an error is recorded
	_, err := b.Finish()
	if err == nil || !strings.Contains(err.Error(), "ir_test.go:") || !strings.Contains(err.Error(), "differs from") {
		t.Fatalf("want an error located in ir_test.go, got %v", err)
	}
}

// A grid bound to the rows and the split, per-part sizes and the latency class print
// and parse back; a per-part size needs the split parameter.
func TestSplitRoundTrip(t *testing.T) {
	b := NewBuilder("k")
	b.SetGrid(4, 8, 20)
	b.SetLatency(LatencySmall)
	b.BindGrid(1, b.Param("rows", ScalarOf(I32), 1, 0))
	b.BindGrid(2, b.SplitParam("split"))
	p := b.ParamParts("p", PtrTo(F32), 4, 256)
	b.Store1(p, b.Cast(b.ProgramID(2), I64), nil, b.F32(1))
	k, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	text := Print(k)
	for _, want := range []string{"grid(4, %rows max 8, %split max 20)", "perpart 256", "warps 1 latency small {"} {
		if !strings.Contains(text, want) {
			t.Fatalf("printed form lacks %q:\n%s", want, text)
		}
	}
	back, err := Parse(text)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	if back.GridParam != k.GridParam || back.Params[2].PerPart != 256 || back.Latency != LatencySmall || Print(back) != text {
		t.Fatalf("round trip changed the kernel:\n%s\n%s", text, Print(back))
	}
	back.Params[1].Split = false
	if err := Verify(back); err == nil || !strings.Contains(err.Error(), "grid dimension 2 is bound to %split: after the rows (%rows) only the parameter marked split may bind a dimension") {
		t.Errorf("a grid bound to an unmarked parameter after the rows: Verify says %v", err)
	}
	back.GridParam[2] = ""
	if err := Verify(back); err == nil || !strings.Contains(err.Error(), "per-part size") {
		t.Errorf("per-part size without a split parameter: Verify says %v", err)
	}
	if _, err := Parse(strings.Replace(text, "latency small", "latency tiny", 1)); err == nil || !strings.Contains(err.Error(), `"tiny"`) {
		t.Errorf("unknown latency: Parse says %v", err)
	}
}

// A grid bound to the rows parameter and per-row buffer sizes print and parse back.
func TestRowsRoundTrip(t *testing.T) {
	b := NewBuilder("k")
	b.SetGrid(4, 8, 1)
	rows := b.Param("rows", ScalarOf(I32), 1, 0)
	b.BindGrid(1, rows)
	p := b.ParamRows("p", PtrTo(F32), 4, 512)
	b.Store1(p, b.Cast(b.ProgramID(1), I64), nil, b.F32(1))
	k, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	text := Print(k)
	if !strings.Contains(text, "grid(4, %rows max 8, 1)") || !strings.Contains(text, "perrow 512") {
		t.Fatalf("printed form lacks the bound grid or per-row size:\n%s", text)
	}
	back, err := Parse(text)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	if back.GridParam != k.GridParam || back.Params[1].PerRow != 512 || back.RowsParam() != "rows" || Print(back) != text {
		t.Fatalf("round trip changed the kernel:\n%s\n%s", text, Print(back))
	}
	back.GridParam = [3]string{"", "rows", "rows"}
	if err := Verify(back); err == nil || !strings.Contains(err.Error(), "as a dimension before it is") {
		t.Errorf("one parameter bound twice: Verify says %v", err)
	}
	back.GridParam = [3]string{"", "p", ""}
	if err := Verify(back); err == nil || !strings.Contains(err.Error(), "want i32") {
		t.Errorf("grid bound to a pointer: Verify says %v", err)
	}
}

// A strided pointer (its run and the stride parameters stepping it, one counted by
// the rows) prints and parses back; Verify refuses strides that name no integer
// parameter, counts below 1 and strides on a scalar.
func TestStridedRoundTrip(t *testing.T) {
	b := NewBuilder("k")
	b.SetGrid(1, 8, 1)
	rows := b.Param("rows", ScalarOf(I32), 1, 0)
	b.BindGrid(1, rows)
	p := b.ParamRows("p", PtrTo(F32), 4, 512)
	b.Param("sh", ScalarOf(I64), 1, 0)
	b.Param("st", ScalarOf(I64), 1, 0)
	b.Strided(p, 64, StrideDim{Stride: "sh", Count: 2}, StrideDim{Stride: "st", CountParam: "rows", CountDiv: 1})
	b.Store1(p, b.Cast(b.ProgramID(1), I64), nil, b.F32(1))
	k, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	text := Print(k)
	if !strings.Contains(text, "strided 64 [%sh x 2, %st x %rows / 1]") {
		t.Fatalf("printed form lacks the strides:\n%s", text)
	}
	back, err := Parse(text)
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, text)
	}
	if Print(back) != text || back.Params[1].Run != 64 || len(back.Params[1].Strides) != 2 || back.Params[1].Strides[1].CountParam != "rows" {
		t.Fatalf("round trip changed the kernel:\n%s\n%s", text, Print(back))
	}
	for _, c := range []struct{ from, to, want string }{
		{"[%sh x 2,", "[%nope x 2,", "%nope is not an integer scalar parameter"},
		{"[%sh x 2,", "[%p x 2,", "%p is not an integer scalar parameter"},
		{"[%sh x 2,", "[%sh x 0,", "want a count in 1..2147483647"},
		{"%rows / 1]", "%rows / 0]", "want a divisor in 1..2147483647"},
		{"%rows / 1]", "%sh / 1]", "not an i32 parameter"},
		{"strided 64 [", "strided 0 [", "run of at least 1"},
	} {
		bad := strings.Replace(text, c.from, c.to, 1)
		k, err := Parse(bad)
		if err == nil {
			err = Verify(k)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s -> %s: %v, want %q", c.from, c.to, err, c.want)
		}
	}
}
