package ir

import (
	"fmt"
	"math"
	"path/filepath"
	"runtime"
	"strconv"
)

// Builder constructs a kernel. Errors are sticky: the first one is kept, with the
// file and line of the kernel author's call that caused it, and every later call is a
// no-op returning a placeholder value, so kernel code needs no error checks per op.
// Finish returns that error, or the verifier's.
type Builder struct {
	k      *Kernel
	blocks []*Block // innermost last
	next   int
	names  map[string]bool
	err    error
	role   string // the role OnRole places new ops on
}

// NewBuilder starts a kernel with one warp and a 1x1x1 grid.
func NewBuilder(name string) *Builder {
	b := &Builder{k: &Kernel{Name: name, Grid: [3]int{1, 1, 1}, Warps: 1, Body: &Block{}}, names: map[string]bool{}}
	b.blocks = []*Block{b.k.Body}
	return b
}

// Err returns the first error recorded so far.
func (b *Builder) Err() error { return b.err }

// Finish verifies and returns the kernel.
func (b *Builder) Finish() (*Kernel, error) {
	if b.err != nil {
		return nil, b.err
	}
	if len(b.blocks) != 1 {
		return nil, fmt.Errorf("ir: kernel %s: Finish inside a loop body", b.k.Name)
	}
	if err := Verify(b.k); err != nil {
		return nil, err
	}
	return b.k, nil
}

// fail records err with the location of the first caller outside this package.
func (b *Builder) fail(format string, args ...any) {
	if b.err != nil {
		return
	}
	loc := ""
	for i := 2; i < 12; i++ {
		pc, file, line, ok := runtime.Caller(i)
		if !ok {
			break
		}
		fn := runtime.FuncForPC(pc)
		if fn != nil && filepath.Base(filepath.Dir(file)) == "ir" && !isTestFile(file) {
			continue
		}
		loc = fmt.Sprintf("%s:%d: ", filepath.Base(file), line)
		break
	}
	b.err = fmt.Errorf("%sir: kernel %s: %s", loc, b.k.Name, fmt.Sprintf(format, args...))
}

func isTestFile(f string) bool { return len(f) > 8 && f[len(f)-8:] == "_test.go" }

func (b *Builder) newValue(t Type, def *Op) *Value {
	for {
		name := strconv.Itoa(b.next)
		b.next++
		if !b.names[name] {
			b.names[name] = true
			return &Value{Name: name, Type: t, Def: def}
		}
	}
}

// Name renames v (names are how values appear in the text form); it returns v.
func (b *Builder) Name(v *Value, name string) *Value {
	if b.err != nil || v == nil {
		return v
	}
	if !validName(name) {
		b.fail("invalid value name %q: want letters, digits and _", name)
		return v
	}
	if b.names[name] {
		b.fail("value name %%%s used twice", name)
		return v
	}
	delete(b.names, v.Name)
	b.names[name] = true
	v.Name = name
	return v
}

func validName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range s {
		if !(c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// SetGrid sets the launch grid.
func (b *Builder) SetGrid(x, y, z int) { b.k.Grid = [3]int{x, y, z} }

// BindGrid makes grid dimension dim the value of the i32 parameter rows at launch
// (the first bound dimension is the rows of the call, another may be the split); the
// grid's extent set for dim (SetGrid) is then the largest value accepted.
func (b *Builder) BindGrid(dim int, rows *Value) {
	if b.err != nil {
		return
	}
	if dim < 0 || dim > 2 {
		b.fail("grid dimension %d, want 0..2", dim)
		return
	}
	b.k.GridParam[dim] = rows.Name
}

// ParamRows is Param for a buffer whose minimum size is perRow bytes per row of the
// call (Param.PerRow), rows being the parameter the grid is bound to (BindGrid).
func (b *Builder) ParamRows(name string, t Type, div int, perRow int64) *Value {
	v := b.Param(name, t, div, 0)
	if b.err == nil {
		b.k.Params[len(b.k.Params)-1].PerRow = perRow
	}
	return v
}

// SplitParam adds the i32 parameter that holds the split (Param.Split); bind it to
// the grid dimension after the rows (BindGrid).
func (b *Builder) SplitParam(name string) *Value {
	v := b.Param(name, ScalarOf(I32), 1, 0)
	if b.err == nil {
		b.k.Params[len(b.k.Params)-1].Split = true
	}
	return v
}

// Strided records how the kernel addresses the pointer parameter ptr (Param.Run,
// Param.Strides): run contiguous elements at each position, stepping by each of dims,
// inner first. Launchers then bound the stride arguments by the buffer.
func (b *Builder) Strided(ptr *Value, run int64, dims ...StrideDim) {
	if b.err != nil {
		return
	}
	for _, p := range b.k.Params {
		if p.Value == ptr {
			p.Run, p.Strides = run, append([]StrideDim(nil), dims...)
			return
		}
	}
	b.fail("strided: %s is not a parameter", ptr)
}

// ParamParts is Param for a buffer whose minimum size is perPart bytes per (row,
// chunk) pair (Param.PerPart): rows x the value of the kernel's split parameter.
func (b *Builder) ParamParts(name string, t Type, div int, perPart int64) *Value {
	v := b.Param(name, t, div, 0)
	if b.err == nil {
		b.k.Params[len(b.k.Params)-1].PerPart = perPart
	}
	return v
}

// SetLatency says whether the kernel's launches are latency-bound (Kernel.Latency).
func (b *Builder) SetLatency(l Latency) { b.k.Latency = l }

// SetWarps sets the number of warps per CTA.
func (b *Builder) SetWarps(n int) { b.k.Warps = n }

// DeclareRole names the warps first .. first+warps-1 of the CTA as a role that ops
// can be placed on (OnRole). Roles must not overlap (Verify checks).
func (b *Builder) DeclareRole(name string, first, warps int) {
	b.k.Roles = append(b.k.Roles, Role{Name: name, First: first, Warps: warps})
}

// OnRole places every op that build emits (loops and their bodies included) on
// the declared role name: those warps alone run them. A value one role computes
// and another reads crosses through shared memory (DESIGN.md, warp roles).
func (b *Builder) OnRole(name string, build func()) {
	if b.err != nil {
		return
	}
	if _, ok := b.k.Role(name); !ok {
		b.fail("role %q is not declared (DeclareRole)", name)
		return
	}
	if b.role != "" {
		b.fail("role %q inside role %q: roles do not nest", name, b.role)
		return
	}
	b.role = name
	build()
	b.role = ""
}

// Param adds a kernel parameter. For pointers, div is the alignment of the address
// in bytes and bytes the minimum buffer size (0 = unknown); for integer scalars div
// is a divisor the value is known to have. Pass 0 for "nothing known".
func (b *Builder) Param(name string, t Type, div int, bytes int64) *Value {
	if b.err != nil {
		return b.placeholder(t)
	}
	if len(b.k.Body.Ops) > 0 {
		b.fail("parameter %s declared after the first op", name)
	}
	v := &Value{Type: t}
	v.Name = b.next0()
	b.Name(v, name)
	b.k.Params = append(b.k.Params, &Param{Value: v, Div: div, Bytes: bytes})
	return v
}

func (b *Builder) next0() string {
	s := strconv.Itoa(b.next)
	b.next++
	b.names[s] = true
	return s
}

func (b *Builder) placeholder(t Type) *Value { return &Value{Name: "invalid", Type: t} }

func (b *Builder) cur() *Block { return b.blocks[len(b.blocks)-1] }

func (b *Builder) emit(op *Op, t Type) *Value {
	if b.err != nil {
		return b.placeholder(t)
	}
	for i, a := range op.Args {
		if a == nil {
			b.fail("%s: operand %d is nil", op.Kind, i)
			return b.placeholder(t)
		}
	}
	v := b.newValue(t, op)
	op.Results = []*Value{v}
	if err := checkOp(op); err != nil {
		b.fail("%v", err)
		return b.placeholder(t)
	}
	op.Role = b.role
	b.cur().Ops = append(b.cur().Ops, op)
	return v
}

// ProgramID returns the CTA index along axis 0, 1 or 2 (i32).
func (b *Builder) ProgramID(axis int) *Value {
	return b.emit(&Op{Kind: OpProgramID, Int: int64(axis)}, ScalarOf(I32))
}

// ConstInt returns an integer constant of type t (scalar or splat tile).
func (b *Builder) ConstInt(v int64, t Type) *Value {
	return b.emit(&Op{Kind: OpConst, Int: v}, t)
}

// ConstFloat returns a float constant of type t (scalar or splat tile).
func (b *Builder) ConstFloat(v float64, t Type) *Value {
	return b.emit(&Op{Kind: OpConst, Float: v}, t)
}

// I32 is shorthand for an i32 scalar constant.
func (b *Builder) I32(v int64) *Value { return b.ConstInt(v, ScalarOf(I32)) }

// I64 is shorthand for an i64 scalar constant.
func (b *Builder) I64(v int64) *Value { return b.ConstInt(v, ScalarOf(I64)) }

// F32 is shorthand for an f32 scalar constant.
func (b *Builder) F32(v float64) *Value { return b.ConstFloat(v, ScalarOf(F32)) }

// Iota returns tile<n x i32> holding 0..n-1.
func (b *Builder) Iota(n int) *Value { return b.emit(&Op{Kind: OpIota}, TileOf(I32, n)) }

func (b *Builder) binary(k OpKind, x, y *Value) *Value {
	if x == nil || y == nil {
		b.fail("%s: nil operand", k)
		return b.placeholder(Type{})
	}
	return b.emit(&Op{Kind: k, Args: []*Value{x, y}}, broadcastType(x.Type, y.Type, x.Type.Elem))
}

// broadcastType is the result type of an elementwise op: the tile operand's shape
// wins over a scalar's.
func broadcastType(x, y Type, e Elem) Type {
	if x.Kind == Tile {
		return x.WithElem(e)
	}
	if y.Kind == Tile {
		return y.WithElem(e)
	}
	return ScalarOf(e)
}

// Add returns x + y. One operand may be a scalar, broadcast over the other's shape.
func (b *Builder) Add(x, y *Value) *Value { return b.binary(OpAdd, x, y) }

// Sub returns x - y.
func (b *Builder) Sub(x, y *Value) *Value { return b.binary(OpSub, x, y) }

// Mul returns x * y.
func (b *Builder) Mul(x, y *Value) *Value { return b.binary(OpMul, x, y) }

// Div returns x / y (integers truncate toward zero).
func (b *Builder) Div(x, y *Value) *Value { return b.binary(OpDiv, x, y) }

// Rem returns the remainder of integer division x / y.
func (b *Builder) Rem(x, y *Value) *Value { return b.binary(OpRem, x, y) }

// Max returns the larger of x and y (for floats, a NaN operand is ignored).
func (b *Builder) Max(x, y *Value) *Value { return b.binary(OpMax, x, y) }

// Min returns the smaller of x and y.
func (b *Builder) Min(x, y *Value) *Value { return b.binary(OpMin, x, y) }

// And returns x & y (integers or i1).
func (b *Builder) And(x, y *Value) *Value { return b.binary(OpAnd, x, y) }

// Or returns x | y.
func (b *Builder) Or(x, y *Value) *Value { return b.binary(OpOr, x, y) }

// Xor returns x ^ y.
func (b *Builder) Xor(x, y *Value) *Value { return b.binary(OpXor, x, y) }

// Shl returns x << y.
func (b *Builder) Shl(x, y *Value) *Value { return b.binary(OpShl, x, y) }

// Shr returns x >> y.
func (b *Builder) Shr(x, y *Value) *Value { return b.binary(OpShr, x, y) }

func (b *Builder) unary(k OpKind, x *Value) *Value {
	if x == nil {
		b.fail("%s: nil operand", k)
		return b.placeholder(Type{})
	}
	return b.emit(&Op{Kind: k, Args: []*Value{x}}, x.Type)
}

// Exp2 returns 2^x (f32).
func (b *Builder) Exp2(x *Value) *Value { return b.unary(OpExp2, x) }

// Log2 returns log2(x) (f32).
func (b *Builder) Log2(x *Value) *Value { return b.unary(OpLog2, x) }

// Rcp returns an approximation of 1/x (f32, within 1 ulp; 1/±0 = ±inf, 1/±inf = ±0).
// Unlike Div it needs no slow path for special operands, so loads after it can be
// scheduled before it.
func (b *Builder) Rcp(x *Value) *Value { return b.unary(OpRcp, x) }

// Sqrt returns the square root of x (f32), correctly rounded (IEEE, sqrt.rn.f32);
// NaN for x < 0.
func (b *Builder) Sqrt(x *Value) *Value { return b.unary(OpSqrt, x) }

// Rsqrt returns an approximation of 1/sqrt(x) (f32, rsqrt.approx.f32: relative
// error at most 2^-22.9; +inf at +0, NaN for x < 0).
func (b *Builder) Rsqrt(x *Value) *Value { return b.unary(OpRsqrt, x) }

// Exp returns an approximation of e^x (f32): exp2(x * log2 e), the product rounded
// once (mul.rn.f32), then ex2.approx.f32 (2 ulp, PTX ISA). Rounding the product
// adds a relative error of at most |x| * 2^-24 (|x| * 2^-24 of e^x for |x| < 88, so
// 2 ulp plus |x|/2 ulp in all); exp(-inf) = 0, exp(+inf) = +inf.
func (b *Builder) Exp(x *Value) *Value { return b.unary(OpExp, x) }

// Log returns an approximation of ln x (f32): lg2.approx.f32 (absolute error
// 2^-22.6 in log2, PTX ISA), then one rounded multiply by ln 2 (half an ulp more);
// log(0) = -inf, NaN for x < 0.
func (b *Builder) Log(x *Value) *Value { return b.unary(OpLog, x) }

// Neg returns -x.
func (b *Builder) Neg(x *Value) *Value { return b.unary(OpNeg, x) }

// Cmp compares x and y with pred (CmpLT, ...) and returns i1 of the broadcast shape.
func (b *Builder) Cmp(pred string, x, y *Value) *Value {
	if x == nil || y == nil {
		b.fail("cmp: nil operand")
		return b.placeholder(Type{})
	}
	return b.emit(&Op{Kind: OpCmp, Pred: pred, Args: []*Value{x, y}}, broadcastType(x.Type, y.Type, I1))
}

// Select returns c ? x : y elementwise. It selects, never blends: a NaN in the
// unselected operand cannot reach the result. Two pointers of one type are
// selected whole, by a scalar condition.
func (b *Builder) Select(c, x, y *Value) *Value {
	if c == nil || x == nil || y == nil {
		b.fail("select: nil operand")
		return b.placeholder(Type{})
	}
	if x.Type.Kind == Ptr {
		return b.emit(&Op{Kind: OpSelect, Args: []*Value{c, x, y}}, x.Type)
	}
	t := broadcastType(x.Type, y.Type, x.Type.Elem)
	if t.Kind != Tile && c.Type.Kind == Tile {
		t = c.Type.WithElem(x.Type.Elem)
	}
	return b.emit(&Op{Kind: OpSelect, Args: []*Value{c, x, y}}, t)
}

// Cast converts x to element type e (round to nearest even where inexact).
func (b *Builder) Cast(x *Value, e Elem) *Value {
	if x == nil {
		b.fail("cast: nil operand")
		return b.placeholder(Type{})
	}
	return b.emit(&Op{Kind: OpCast, Args: []*Value{x}}, x.Type.WithElem(e))
}

// Bitcast reinterprets x's bits as element type e of the same size; on a pointer it
// returns a pointer to e (offsets then count e elements).
func (b *Builder) Bitcast(x *Value, e Elem) *Value {
	if x == nil {
		b.fail("bitcast: nil operand")
		return b.placeholder(Type{})
	}
	return b.emit(&Op{Kind: OpBitcast, Args: []*Value{x}}, x.Type.WithElem(e))
}

// Broadcast expands x to shape: a scalar is splat; a rank-1 tile is repeated along
// the new axis (axis 1 turns a column of rows [R] into [R, C]; axis 0 turns [C] into
// [R, C]).
func (b *Builder) Broadcast(x *Value, axis int, shape ...int) *Value {
	if x == nil {
		b.fail("broadcast: nil operand")
		return b.placeholder(Type{})
	}
	return b.emit(&Op{Kind: OpBroadcast, Int: int64(axis), Args: []*Value{x}}, TileOf(x.Type.Elem, shape...))
}

// Reduce reduces a rank-2 tile along axis with kind "max" or "sum"; padded and
// masked elements are the neutral element (-inf for max, 0 for sum).
func (b *Builder) Reduce(kind string, x *Value, axis int) *Value {
	if x == nil || x.Type.Rank() != 2 || axis < 0 || axis > 1 {
		b.fail("reduce %s: want a rank-2 tile and axis 0 or 1", kind)
		return b.placeholder(Type{})
	}
	return b.emit(&Op{Kind: OpReduce, Pred: kind, Int: int64(axis), Args: []*Value{x}}, TileOf(x.Type.Elem, x.Type.Shape[1-axis]))
}

// Dot returns acc + a·b with fp32 accumulation on tensor cores. a is [M,K], b is
// [K,N] (bf16 or f16), acc is [M,N] f32.
func (b *Builder) Dot(a, bm, acc *Value) *Value {
	if a == nil || bm == nil || acc == nil {
		b.fail("dot: nil operand")
		return b.placeholder(Type{})
	}
	return b.emit(&Op{Kind: OpDot, Args: []*Value{a, bm, acc}}, acc.Type)
}

// ScheduledDot is Dot with its schedule stated (DotSchedule): the lowering computes
// it exactly so, or refuses the kernel naming the clause.
func (b *Builder) ScheduledDot(a, bm, acc *Value, s DotSchedule) *Value {
	v := b.Dot(a, bm, acc)
	if v.Def != nil && v.Def.Kind == OpDot {
		v.Def.Dot = &s
	}
	return v
}

// Slice returns the n elements of a rank-1 tile x from position start (a scalar
// i32 that may vary at run time) on. Positions past the end of x are not
// checked at run time: the caller keeps start+n within x.
func (b *Builder) Slice(x, start *Value, n int) *Value {
	if x == nil || start == nil || x.Type.Rank() != 1 {
		b.fail("slice: want a rank-1 tile and a scalar start")
		return b.placeholder(Type{})
	}
	return b.emit(&Op{Kind: OpSlice, Int: int64(n), Args: []*Value{x, start}}, TileOf(x.Type.Elem, n))
}

// Column returns column c of a rank-2 tile as a rank-1 tile of its rows.
func (b *Builder) Column(x *Value, c int) *Value {
	if x == nil || x.Type.Rank() != 2 {
		b.fail("column: want a rank-2 tile")
		return b.placeholder(Type{})
	}
	return b.emit(&Op{Kind: OpColumn, Int: int64(c), Args: []*Value{x}}, TileOf(x.Type.Elem, x.Type.Shape[0]))
}

// Trans transposes a rank-2 tile.
func (b *Builder) Trans(x *Value) *Value {
	if x == nil || x.Type.Rank() != 2 {
		b.fail("trans: want a rank-2 tile")
		return b.placeholder(Type{})
	}
	return b.emit(&Op{Kind: OpTrans, Args: []*Value{x}}, TileOf(x.Type.Elem, x.Type.Shape[1], x.Type.Shape[0]))
}

// Load1 gathers p[offs[i]] for each element of the rank-1 offsets tile (or one
// element for a scalar offset). mask may be nil; masked-off elements read as 0 and
// are never loaded.
func (b *Builder) Load1(p, offs, mask *Value) *Value {
	if p == nil || offs == nil {
		b.fail("load: nil operand")
		return b.placeholder(Type{})
	}
	op := &Op{Kind: OpLoad, Args: []*Value{p, offs}}
	if mask != nil {
		op.Args = append(op.Args, mask)
		op.HasMask = true
	}
	t := ScalarOf(p.Type.Elem)
	if offs.Type.Kind == Tile {
		t = TileOf(p.Type.Elem, offs.Type.Shape...)
	}
	return b.emit(op, t)
}

// Load2 loads a [len(rows), cols] tile: element (i, j) = p[rows[i] + col0 + j].
// mask (tile<R x i1>) drops whole rows, bound (i32 scalar) keeps only columns
// j < bound; either may be nil. Dropped elements read as 0 and are never loaded.
func (b *Builder) Load2(p, rows, col0 *Value, cols int, mask, bound *Value) *Value {
	if p == nil || rows == nil || col0 == nil {
		b.fail("load: nil operand")
		return b.placeholder(Type{})
	}
	op := &Op{Kind: OpLoad, Args: []*Value{p, rows, col0}}
	if mask != nil {
		op.Args = append(op.Args, mask)
		op.HasMask = true
	}
	if bound != nil {
		op.Args = append(op.Args, bound)
		op.HasBound = true
	}
	r := 1
	if rows.Type.Kind == Tile {
		r = rows.Type.Shape[0]
	}
	return b.emit(op, TileOf(p.Type.Elem, r, cols))
}

// Store1 stores a rank-1 tile (or scalar) v to p[offs[i]] where mask allows.
func (b *Builder) Store1(p, offs, mask, v *Value) { b.store(p, []*Value{offs}, mask, nil, v) }

// Store2 stores a rank-2 tile v: element (i, j) to p[rows[i] + col0 + j] where the
// row mask and the column bound allow.
func (b *Builder) Store2(p, rows, col0, mask, bound, v *Value) {
	b.store(p, []*Value{rows, col0}, mask, bound, v)
}

func (b *Builder) store(p *Value, addr []*Value, mask, bound, v *Value) {
	if b.err != nil {
		return
	}
	if p == nil || v == nil || addr[0] == nil || (len(addr) == 2 && addr[1] == nil) {
		b.fail("store: nil operand")
		return
	}
	op := &Op{Kind: OpStore, Args: append([]*Value{p}, addr...)}
	if mask != nil {
		op.Args = append(op.Args, mask)
		op.HasMask = true
	}
	if bound != nil {
		op.Args = append(op.Args, bound)
		op.HasBound = true
	}
	op.Args = append(op.Args, v)
	if err := checkOp(op); err != nil {
		b.fail("%v", err)
		return
	}
	op.Role = b.role
	b.cur().Ops = append(b.cur().Ops, op)
}

// For emits a counted loop for iv = lo; iv < hi; iv += step, carrying values. body
// receives the induction variable (i32) and the carried values and returns the next
// carried values; For returns their final values.
func (b *Builder) For(lo, hi *Value, step int, inits []*Value, body func(iv *Value, carried []*Value) []*Value) []*Value {
	return b.ForStages(lo, hi, step, 1, inits, body)
}

// ForStages is For with an N-stage pipeline (Op.Stages, 1..MaxStages; 1 is For):
// the loads of the body that the lowering stages into shared memory through
// cp.async, at addresses that only the induction variable and values defined
// before the loop decide, are issued stages-1 iterations ahead.
func (b *Builder) ForStages(lo, hi *Value, step, stages int, inits []*Value, body func(iv *Value, carried []*Value) []*Value) []*Value {
	return b.ForAhead(lo, hi, step, stages, 0, inits, body)
}

// ForAhead is ForStages with its index tiles (the loads the other loads' addresses
// read) issued ahead iterations before the loads that read them (Op.Ahead: 0 the
// lowering's choice, NoAhead none, 1..MaxAhead).
func (b *Builder) ForAhead(lo, hi *Value, step, stages, ahead int, inits []*Value, body func(iv *Value, carried []*Value) []*Value) []*Value {
	if b.err != nil {
		return b.placeholders(inits)
	}
	if lo == nil || hi == nil {
		b.fail("for: nil bound")
		return b.placeholders(inits)
	}
	op := &Op{Kind: OpFor, Int: int64(step), Args: append([]*Value{lo, hi}, inits...), Body: &Block{}}
	if stages != 1 {
		op.Stages = stages
	}
	op.Ahead = ahead
	iv := b.newValue(ScalarOf(I32), nil)
	op.Body.Args = []*Value{iv}
	for _, in := range inits {
		if in == nil {
			b.fail("for: nil carried value")
			return b.placeholders(inits)
		}
		op.Body.Args = append(op.Body.Args, b.newValue(in.Type, nil))
	}
	b.blocks = append(b.blocks, op.Body)
	op.Body.Yield = body(iv, op.Body.Args[1:])
	b.blocks = b.blocks[:len(b.blocks)-1]
	if b.err != nil {
		return b.placeholders(inits)
	}
	for _, in := range inits {
		op.Results = append(op.Results, b.newValue(in.Type, op))
	}
	if err := checkOp(op); err != nil {
		b.fail("%v", err)
		return b.placeholders(inits)
	}
	op.Role = b.role
	b.cur().Ops = append(b.cur().Ops, op)
	return op.Results
}

func (b *Builder) placeholders(vs []*Value) []*Value {
	out := make([]*Value, len(vs))
	for i, v := range vs {
		t := Type{}
		if v != nil {
			t = v.Type
		}
		out[i] = b.placeholder(t)
	}
	return out
}

// NegInf is -inf, for score masks and max-reduction starts.
var NegInf = math.Inf(-1)
