package ir

import (
	"fmt"
	"math"
	"math/big"

	"github.com/ptxgen/ptxgen/target"
)

// OpError is a verifier error: it names the op, the operand and the problem.
type OpError struct {
	Op      string // the op as printed (its first line)
	Operand string // "operand 2 (%x)", "result", ""
	Problem string
}

func (e *OpError) Error() string {
	s := "ir: " + e.Op + ": "
	if e.Operand != "" {
		s += e.Operand + ": "
	}
	return s + e.Problem
}

func opErr(o *Op, operand int, format string, args ...any) error {
	e := &OpError{Op: opHeadline(o), Problem: fmt.Sprintf(format, args...)}
	switch {
	case operand >= 0 && operand < len(o.Args):
		e.Operand = fmt.Sprintf("operand %d (%s: %s)", operand, o.Args[operand], o.Args[operand].Type)
	case operand == -1 && len(o.Results) > 0:
		e.Operand = "result " + o.Results[0].String()
	}
	return e
}

// MaxTileElems bounds tile sizes so a typo cannot ask for gigabytes of registers.
const MaxTileElems = 1 << 20

// checkOp checks one op's operand and result types.
func checkOp(o *Op) error {
	nargs := func(n int) error {
		if len(o.Args) != n {
			return opErr(o, -2, "want %d operands, have %d", n, len(o.Args))
		}
		return nil
	}
	if o.Dot != nil {
		if o.Kind != OpDot {
			return opErr(o, -2, "has a dot schedule (%s), which only a dot takes", o.Dot)
		}
		if err := o.Dot.check(); err != nil {
			return opErr(o, -2, "%v", err)
		}
	}
	for i, a := range o.Args {
		if a.Type.Kind == Tile {
			if err := checkShape(a.Type); err != nil {
				return opErr(o, i, "%v", err)
			}
		}
	}
	var res Type
	if len(o.Results) > 0 {
		res = o.Results[0].Type
		if res.Kind == Tile {
			if err := checkShape(res); err != nil {
				return opErr(o, -1, "%v", err)
			}
		}
	}
	if n := o.Kind.Class().Arity; n >= 0 {
		if err := nargs(n); err != nil {
			return err
		}
	}
	switch o.Kind {
	case OpProgramID:
		if o.Int < 0 || o.Int > 2 {
			return opErr(o, -2, "axis %d out of range 0..2", o.Int)
		}
		if !res.Equal(ScalarOf(I32)) {
			return opErr(o, -1, "want i32, have %s", res)
		}
	case OpConst:
		if res.Kind == Ptr || res.Elem == Invalid {
			return opErr(o, -1, "constants are scalars or tiles, not %s", res)
		}
		if !res.Elem.IsFloat() && o.Float != 0 {
			return opErr(o, -1, "integer constant with a float value %g", o.Float)
		}
		if res.Elem.IsFloat() && o.Int != 0 {
			return opErr(o, -1, "float constant with an integer value %d", o.Int)
		}
		if lo, hi, ok := intRange(res.Elem); ok && (o.Int < lo || o.Int > hi) {
			return opErr(o, -1, "%s constant %d out of range %d..%d", res.Elem, o.Int, lo, hi)
		}
	case OpIota:
		if res.Kind != Tile || res.Rank() != 1 || res.Elem != I32 {
			return opErr(o, -1, "want tile<N x i32>, have %s", res)
		}
	case OpAdd, OpSub, OpMul, OpDiv, OpRem, OpMax, OpMin, OpAnd, OpOr, OpXor, OpShl, OpShr:
		x, y := o.Args[0].Type, o.Args[1].Type
		if err := checkElementwise(o, 0, 1); err != nil {
			return err
		}
		e := x.Elem
		switch o.Kind {
		case OpAnd, OpOr, OpXor:
			if !e.IsInt() && e != I1 {
				return opErr(o, 0, "%s needs integers or i1", o.Kind)
			}
		case OpShl, OpShr, OpRem:
			if !e.IsInt() {
				return opErr(o, 0, "%s needs integers", o.Kind)
			}
		default:
			if e == I1 || e == E4M3 || e == BF16 || e == F16 {
				return opErr(o, 0, "%s is not defined on %s (cast to f32 first)", o.Kind, e)
			}
		}
		if !res.Equal(broadcastType(x, y, e)) {
			return opErr(o, -1, "want %s, have %s", broadcastType(x, y, e), res)
		}
	case OpExp2, OpLog2, OpRcp, OpSqrt, OpRsqrt, OpExp, OpLog, OpNeg:
		e := o.Args[0].Type.Elem
		if o.Kind != OpNeg && e != F32 || o.Kind == OpNeg && e != F32 && e != I32 && e != I64 {
			return opErr(o, 0, "%s is not defined on %s", o.Kind, e)
		}
		if o.Args[0].Type.Kind == Ptr {
			return opErr(o, 0, "pointer operand")
		}
		if !res.Equal(o.Args[0].Type) {
			return opErr(o, -1, "want %s, have %s", o.Args[0].Type, res)
		}
	case OpCmp:
		switch o.Pred {
		case CmpLT, CmpLE, CmpGT, CmpGE, CmpEQ, CmpNE:
		default:
			return opErr(o, -2, "unknown comparison %q (want lt, le, gt, ge, eq or ne)", o.Pred)
		}
		if err := checkElementwise(o, 0, 1); err != nil {
			return err
		}
		x, y := o.Args[0].Type, o.Args[1].Type
		if x.Elem == I1 || x.Elem == E4M3 || x.Elem == BF16 || x.Elem == F16 {
			return opErr(o, 0, "cmp is not defined on %s", x.Elem)
		}
		if !res.Equal(broadcastType(x, y, I1)) {
			return opErr(o, -1, "want %s, have %s", broadcastType(x, y, I1), res)
		}
	case OpSelect:
		if o.Args[0].Type.Elem != I1 || o.Args[0].Type.Kind == Ptr {
			return opErr(o, 0, "condition must be i1")
		}
		if x, y := o.Args[1].Type, o.Args[2].Type; x.Kind == Ptr || y.Kind == Ptr {
			// A pointer is chosen whole, by one condition for the CTA: which of two
			// buffers (a tile's candidate list, say) its loads read.
			switch {
			case o.Args[0].Type.Kind != Scalar:
				return opErr(o, 0, "a pointer select takes a scalar condition, not %s", o.Args[0].Type)
			case !x.Equal(y):
				return opErr(o, 2, "%s differs from %s: a pointer select takes two pointers of one type", y, x)
			case !res.Equal(x):
				return opErr(o, -1, "want %s, have %s", x, res)
			}
			break
		}
		if err := checkElementwise(o, 1, 2); err != nil {
			return err
		}
		t := broadcastType(o.Args[1].Type, o.Args[2].Type, o.Args[1].Type.Elem)
		c := o.Args[0].Type
		if c.Kind == Tile {
			if t.Kind == Tile && !sameShape(c, t) {
				return opErr(o, 0, "condition shape %v does not match value shape %v", c.Shape, t.Shape)
			}
			t = c.WithElem(t.Elem)
		}
		if !res.Equal(t) {
			return opErr(o, -1, "want %s, have %s", t, res)
		}
	case OpCast, OpBitcast:
		x := o.Args[0].Type
		if x.Kind != res.Kind || !sameShape(x, res) {
			return opErr(o, -1, "%s changes the element type only; have %s -> %s", o.Kind, x, res)
		}
		if o.Kind == OpBitcast && (x.Elem == I1) != (res.Elem == I1) {
			return opErr(o, -1, "bitcast of an i1 (a predicate has no bits to reinterpret): cast it instead (%s -> %s gives 0 or 1)", x.Elem, res.Elem)
		}
		if o.Kind == OpBitcast && x.Elem.Size() != res.Elem.Size() && x.Kind != Ptr {
			return opErr(o, -1, "bitcast between types of different sizes (%s -> %s)", x.Elem, res.Elem)
		}
		if o.Kind == OpCast && x.Kind == Ptr {
			return opErr(o, 0, "cast of a pointer (use bitcast)")
		}
	case OpBroadcast:
		x := o.Args[0].Type
		if res.Kind != Tile || res.Rank() != 2 || x.Elem != res.Elem {
			return opErr(o, -1, "want a rank-2 tile of %s, have %s", x.Elem, res)
		}
		switch x.Kind {
		case Scalar:
		case Tile:
			if x.Rank() != 1 || o.Int < 0 || o.Int > 1 || x.Shape[0] != res.Shape[1-o.Int] {
				return opErr(o, 0, "cannot broadcast %s along axis %d to %s", x, o.Int, res)
			}
		default:
			return opErr(o, 0, "cannot broadcast a pointer")
		}
	case OpReduce:
		x := o.Args[0].Type
		if x.Kind != Tile || x.Rank() != 2 || x.Elem != F32 {
			return opErr(o, 0, "reduce needs a rank-2 f32 tile")
		}
		if o.Pred != "max" && o.Pred != "sum" {
			return opErr(o, -2, "unknown reduction %q (want max or sum)", o.Pred)
		}
		if o.Int < 0 || o.Int > 1 || !res.Equal(TileOf(F32, x.Shape[1-o.Int])) {
			return opErr(o, -1, "want tile<%dxf32> for axis %d", x.Shape[1-o.Int&1], o.Int)
		}
	case OpDot:
		a, b, c := o.Args[0].Type, o.Args[1].Type, o.Args[2].Type
		for i, t := range []Type{a, b, c} {
			if t.Kind != Tile || t.Rank() != 2 {
				return opErr(o, i, "dot operands are rank-2 tiles")
			}
		}
		if a.Elem != BF16 && a.Elem != F16 || b.Elem != a.Elem {
			return opErr(o, 1, "dot inputs must both be bf16 or both f16 (have %s and %s)", a.Elem, b.Elem)
		}
		if c.Elem != F32 {
			return opErr(o, 2, "the accumulator must be f32")
		}
		if a.Shape[1] != b.Shape[0] {
			return opErr(o, 1, "inner dimensions differ: a is %dx%d, b is %dx%d", a.Shape[0], a.Shape[1], b.Shape[0], b.Shape[1])
		}
		if c.Shape[0] != a.Shape[0] || c.Shape[1] != b.Shape[1] {
			return opErr(o, 2, "accumulator is %dx%d, want %dx%d", c.Shape[0], c.Shape[1], a.Shape[0], b.Shape[1])
		}
		if !res.Equal(c) {
			return opErr(o, -1, "want %s", c)
		}
	case OpTrans:
		x := o.Args[0].Type
		if x.Kind != Tile || x.Rank() != 2 || !res.Equal(TileOf(x.Elem, x.Shape[1], x.Shape[0])) {
			return opErr(o, 0, "trans needs a rank-2 tile")
		}
	case OpSlice:
		x, s := o.Args[0].Type, o.Args[1].Type
		if x.Kind != Tile || x.Rank() != 1 {
			return opErr(o, 0, "slice needs a rank-1 tile")
		}
		if s.Kind != Scalar || s.Elem != I32 {
			return opErr(o, 1, "slice start must be a scalar i32")
		}
		if o.Int < 1 || o.Int > int64(x.Shape[0]) {
			return opErr(o, -2, "slice length %d out of range 1..%d", o.Int, x.Shape[0])
		}
		if !res.Equal(TileOf(x.Elem, int(o.Int))) {
			return opErr(o, -1, "want %s", TileOf(x.Elem, int(o.Int)))
		}
	case OpColumn:
		x := o.Args[0].Type
		if x.Kind != Tile || x.Rank() != 2 {
			return opErr(o, 0, "column needs a rank-2 tile")
		}
		if o.Int < 0 || o.Int >= int64(x.Shape[1]) {
			return opErr(o, -2, "column %d out of range 0..%d", o.Int, x.Shape[1]-1)
		}
		if !res.Equal(TileOf(x.Elem, x.Shape[0])) {
			return opErr(o, -1, "want %s", TileOf(x.Elem, x.Shape[0]))
		}
	case OpLoad, OpStore:
		return checkMemory(o)
	case OpFor:
		if len(o.Args) < 2 || o.Body == nil {
			return opErr(o, -2, "malformed loop")
		}
		for i := 0; i < 2; i++ {
			if !o.Args[i].Type.Equal(ScalarOf(I32)) {
				return opErr(o, i, "loop bounds are i32 scalars")
			}
		}
		if o.Int < 1 || o.Int > math.MaxInt32 {
			return opErr(o, -2, "step %d: want 1..%d (the induction variable is an i32)", o.Int, math.MaxInt32)
		}
		if o.Stages < 0 || o.Stages > MaxStages {
			return opErr(o, -2, "stages %d: want 1..%d", o.Stages, MaxStages)
		}
		if o.Ahead < NoAhead || o.Ahead > MaxAhead {
			return opErr(o, -2, "ahead %d: want 0..%d", o.Ahead, MaxAhead)
		}
		inits := o.Args[2:]
		if len(o.Body.Args) != len(inits)+1 || len(o.Body.Yield) != len(inits) || len(o.Results) != len(inits) {
			return opErr(o, -2, "loop carries %d values but its body has %d arguments, yields %d and the loop has %d results",
				len(inits), len(o.Body.Args)-1, len(o.Body.Yield), len(o.Results))
		}
		for i, in := range inits {
			if !o.Body.Args[i+1].Type.Equal(in.Type) || !o.Results[i].Type.Equal(in.Type) {
				return opErr(o, i+2, "carried value %d types differ", i)
			}
			if y := o.Body.Yield[i]; y == nil || !y.Type.Equal(in.Type) {
				return opErr(o, i+2, "carried value %d: body yields %v, want %s", i, y, in.Type)
			}
		}
	default:
		return opErr(o, -2, "unknown op %q", o.Kind)
	}
	return nil
}

// intRange is the range of an integer element type's constants (ok false for the
// others).
func intRange(e Elem) (lo, hi int64, ok bool) {
	switch e {
	case I1:
		return 0, 1, true
	case U8:
		return 0, math.MaxUint8, true
	case I32:
		return math.MinInt32, math.MaxInt32, true
	case I64:
		return math.MinInt64, math.MaxInt64, true
	}
	return 0, 0, false
}

func checkShape(t Type) error {
	if t.Rank() < 1 || t.Rank() > 2 {
		return fmt.Errorf("tiles have rank 1 or 2, not %d", t.Rank())
	}
	for _, d := range t.Shape {
		if d < 1 {
			return fmt.Errorf("tile extent %d must be >= 1", d)
		}
	}
	if t.Elems() > MaxTileElems {
		// The exact product: extents of 2^20 x 2^44 wrap to 0 in an int.
		n := big.NewInt(1)
		for _, d := range t.Shape {
			n.Mul(n, big.NewInt(int64(d)))
		}
		return fmt.Errorf("tile of %s elements exceeds the limit of %d", n, MaxTileElems)
	}
	return nil
}

func sameShape(x, y Type) bool {
	if len(x.Shape) != len(y.Shape) {
		return false
	}
	for i := range x.Shape {
		if x.Shape[i] != y.Shape[i] {
			return false
		}
	}
	return true
}

func checkElementwise(o *Op, i, j int) error {
	x, y := o.Args[i].Type, o.Args[j].Type
	if x.Kind == Ptr {
		return opErr(o, i, "pointer operand")
	}
	if y.Kind == Ptr {
		return opErr(o, j, "pointer operand")
	}
	if x.Elem != y.Elem {
		return opErr(o, j, "element type %s differs from %s", y.Elem, x.Elem)
	}
	if x.Kind == Tile && y.Kind == Tile && !sameShape(x, y) {
		return opErr(o, j, "shape %v differs from %v", y.Shape, x.Shape)
	}
	return nil
}

func isIndex(t Type) bool { return t.Elem == I32 || t.Elem == I64 }

func checkMemory(o *Op) error {
	args := o.Args
	if o.Kind == OpStore {
		if len(args) < 3 {
			return opErr(o, -2, "store needs a pointer, an address and a value")
		}
		args = args[:len(args)-1]
	}
	if len(args) < 2 || args[0].Type.Kind != Ptr {
		return opErr(o, 0, "the first operand must be a pointer")
	}
	p := args[0].Type
	if p.Elem == I1 {
		return opErr(o, 0, "i1 has no memory form (a predicate): %s a u8 or i32 instead, converted with cast (0 or 1)", o.Kind)
	}
	n := len(args) - 1
	if o.HasMask {
		n--
	}
	if o.HasBound {
		n--
	}
	if n != 1 && n != 2 {
		return opErr(o, -2, "want [offs] or [rows, col0] addressing")
	}
	offs := args[1]
	if !isIndex(offs.Type) || offs.Type.Kind == Tile && offs.Type.Rank() != 1 {
		return opErr(o, 1, "offsets must be an i32/i64 scalar or rank-1 tile")
	}
	rows := 1
	if offs.Type.Kind == Tile {
		rows = offs.Type.Shape[0]
	}
	k := 2
	if n == 2 {
		if !isIndex(args[2].Type) || args[2].Type.Kind != Scalar {
			return opErr(o, 2, "col0 must be an i32/i64 scalar")
		}
		k = 3
	} else if o.HasBound {
		return opErr(o, -2, "a column bound needs rank-2 [rows, col0] addressing")
	}
	if o.HasMask {
		m := args[k].Type
		if m.Elem != I1 || (offs.Type.Kind == Tile) != (m.Kind == Tile) || m.Kind == Tile && m.Shape[0] != rows {
			return opErr(o, k, "the mask must be i1 shaped like the offsets (%s)", offs.Type.WithElem(I1))
		}
		k++
	}
	if o.HasBound {
		if !args[k].Type.Equal(ScalarOf(I32)) {
			return opErr(o, k, "the column bound must be an i32 scalar")
		}
	}
	// The value is a store's last operand and a load's result (-1): errors about it
	// name that, not the load's last address operand.
	var v Type
	value := -1
	if o.Kind == OpStore {
		value = len(o.Args) - 1
		v = o.Args[value].Type
		if len(o.Results) != 0 {
			return opErr(o, -2, "store has no result")
		}
	} else {
		if len(o.Results) != 1 {
			return opErr(o, -2, "load has one result, have %d", len(o.Results))
		}
		v = o.Results[0].Type
	}
	if v.Elem == I1 && o.Kind == OpStore {
		return opErr(o, value, "i1 has no memory form (a predicate): store a u8 or i32 instead, converted with cast (0 or 1)")
	}
	if v.Elem != p.Elem {
		if o.Kind == OpLoad {
			return opErr(o, 0, "the pointer is to %s, the load's result is %s", p.Elem, v.Elem)
		}
		return opErr(o, value, "element type %s does not match the pointer's %s", v.Elem, p.Elem)
	}
	if n == 1 {
		if offs.Type.Kind == Scalar && v.Kind != Scalar || offs.Type.Kind == Tile && (v.Rank() != 1 || v.Shape[0] != rows) {
			return opErr(o, value, "value %s does not match the offsets %s", v, offs.Type)
		}
	} else if v.Kind != Tile || v.Rank() != 2 || v.Shape[0] != rows {
		return opErr(o, value, "value %s must be a rank-2 tile with %d rows", v, rows)
	}
	return nil
}

// Verify checks a whole kernel: every op's types, that each value is defined
// before its use and in scope, unique names, and launch parameters.
func Verify(k *Kernel) error {
	if err := CheckName("kernel", k.Name); err != nil {
		return err
	}
	for i, g := range k.Grid {
		if limit := target.MaxGrid[i]; g < 1 || g > limit {
			return fmt.Errorf("ir: kernel %s: grid dimension %d is %d, want 1..%d (CUDA's limit)", k.Name, i, g, limit)
		}
	}
	if err := verifyRows(k); err != nil {
		return err
	}
	if k.Warps < 1 || k.Warps > 32 {
		return fmt.Errorf("ir: kernel %s: %d warps per CTA, want 1..32", k.Name, k.Warps)
	}
	names := map[string]bool{}
	scope := map[*Value]bool{}
	define := func(v *Value) error {
		if names[v.Name] {
			return fmt.Errorf("ir: kernel %s: value %s defined twice", k.Name, v)
		}
		names[v.Name] = true
		scope[v] = true
		return nil
	}
	for _, p := range k.Params {
		t := p.Value.Type
		if t.Kind == Tile || t.Kind == Scalar && t.Elem != I32 && t.Elem != I64 && t.Elem != F32 || t.Kind == Ptr && t.Elem == I1 {
			return fmt.Errorf("ir: kernel %s: parameter %s has type %s; parameters are pointers (not to i1, a predicate with no memory form) or i32/i64/f32 scalars", k.Name, p.Value, t)
		}
		if problem := identProblem(p.Value.Name); problem != "" {
			return fmt.Errorf("ir: kernel %s: parameter name %q %s", k.Name, p.Value.Name, problem)
		}
		if err := verifyDiv(k, p); err != nil {
			return err
		}
		if err := define(p.Value); err != nil {
			return err
		}
	}
	if err := verifyRoles(k); err != nil {
		return err
	}
	var walk func(b *Block, role string, depth int) error
	walk = func(b *Block, role string, depth int) error {
		var local []*Value
		defer func() {
			for _, v := range local {
				delete(scope, v)
			}
		}()
		for _, o := range b.Ops {
			for i, a := range o.Args {
				if !scope[a] {
					return opErr(o, i, "used before its definition or outside its scope")
				}
			}
			if err := checkOp(o); err != nil {
				return err
			}
			if o.Role != "" {
				if _, ok := k.Role(o.Role); !ok {
					return opErr(o, -1, "is placed on role %q, which the kernel does not declare", o.Role)
				}
			}
			if role != "" && o.Role != role {
				return opErr(o, -1, "is in the body of a loop on role %q but placed on %q: a loop's role places its whole body", role, o.Role)
			}
			if err := verifyDotWarps(k, o); err != nil {
				return err
			}
			if o.Body != nil {
				if depth+1 > MaxLoopDepth {
					return opErr(o, -2, "loops nest %d deep, more than the limit of %d", depth+1, MaxLoopDepth)
				}
				for _, a := range o.Body.Args {
					if err := define(a); err != nil {
						return err
					}
				}
				if err := walk(o.Body, o.Role, depth+1); err != nil {
					return err
				}
				for _, a := range o.Body.Args {
					delete(scope, a)
				}
			}
			for _, r := range o.Results {
				if err := define(r); err != nil {
					return err
				}
				local = append(local, r)
			}
		}
		for i, y := range b.Yield {
			if !scope[y] {
				return fmt.Errorf("ir: kernel %s: yield operand %d (%s) is not in scope", k.Name, i, y)
			}
		}
		return nil
	}
	if len(k.Body.Yield) > 0 {
		return fmt.Errorf("ir: kernel %s: yield outside a loop: only a loop's body yields (its carried values)", k.Name)
	}
	return walk(k.Body, "", 0)
}

// MaxPointerAlign bounds a pointer parameter's div, its alignment in bytes (what a
// launcher can check and a host can give; the lowering uses up to 16).
const MaxPointerAlign = 4096

// verifyDiv checks a parameter's div: 0 or 1 (nothing), or a power of two that a
// value of its type can be a multiple of; on a pointer at most MaxPointerAlign. An f32
// has no divisor, and launchers would ignore one.
func verifyDiv(k *Kernel, p *Param) error {
	t := p.Value.Type
	if p.Div <= 1 && p.Div >= 0 {
		return nil
	}
	limit, what := MaxPointerAlign, "a pointer's alignment in bytes"
	switch {
	case t.Kind == Scalar && t.Elem == I32:
		limit, what = 1<<30, "a divisor of the i32"
	case t.Kind == Scalar && t.Elem == I64:
		limit, what = 1<<62, "a divisor of the i64"
	case t.Kind != Ptr:
		return fmt.Errorf("ir: kernel %s: parameter %s: div %d on an %s: div is a pointer's alignment or an integer's divisor", k.Name, p.Value, p.Div, t)
	}
	if p.Div < 0 || p.Div > limit || p.Div&(p.Div-1) != 0 {
		return fmt.Errorf("ir: kernel %s: parameter %s: div %d, want 0 or a power of two in 1..%d (%s)", k.Name, p.Value, p.Div, limit, what)
	}
	return nil
}

// verifyRoles checks the kernel's role declarations: identifiers, distinct, each a
// non-empty range of the CTA's warps, no two overlapping.
func verifyRoles(k *Kernel) error {
	owner := make([]string, k.Warps)
	for i, r := range k.Roles {
		if problem := identProblem(r.Name); problem != "" {
			return fmt.Errorf("ir: kernel %s: role name %q %s", k.Name, r.Name, problem)
		}
		for _, q := range k.Roles[:i] {
			if q.Name == r.Name {
				return fmt.Errorf("ir: kernel %s: role %s declared twice", k.Name, r.Name)
			}
		}
		// k.Warps is in 1..32 here, so k.Warps-r.Warps cannot overflow where
		// r.First+r.Warps could (a role of 2^63-1 warps wrapped and passed).
		if r.Warps < 1 || r.First < 0 || r.Warps > k.Warps || r.First > k.Warps-r.Warps {
			last := new(big.Int).Add(big.NewInt(int64(r.First)), big.NewInt(int64(r.Warps)-1))
			return fmt.Errorf("ir: kernel %s: role %s is warps %d..%s (first %d, %d warps); the CTA has warps 0..%d and a role at least one", k.Name, r.Name, r.First, last, r.First, r.Warps, k.Warps-1)
		}
		for w := r.First; w < r.First+r.Warps; w++ {
			if owner[w] != "" {
				return fmt.Errorf("ir: kernel %s: roles %s and %s both hold warp %d; roles are disjoint", k.Name, owner[w], r.Name, w)
			}
			owner[w] = r.Name
		}
	}
	return nil
}

// ReservedNames are the names a kernel may not take, with why: the lowering declares
// them in every module, or PTX predefines them. (Parameters are emitted as param_NAME
// and labels and registers start with $ and %, so nothing else can collide.)
var ReservedNames = map[string]string{
	"smem":    "the shared-memory array every generated module declares",
	"WARP_SZ": "a constant PTX predefines",
}

// CheckName reports whether name may name what ("kernel", "program", "workspace
// buffer"): a PTX identifier made of ASCII letters, digits and _ (a letter first, or _
// and at least one more character; ptxas refuses "9lives" and "_"), and for a kernel
// not one of ReservedNames.
func CheckName(what, name string) error {
	if problem := identProblem(name); problem != "" {
		return fmt.Errorf("ir: %s name %q %s", what, name, problem)
	}
	if why, ok := ReservedNames[name]; ok && what == "kernel" {
		return fmt.Errorf("ir: kernel name %q is reserved: it is %s", name, why)
	}
	return nil
}

// identProblem says why name is not a PTX identifier of ASCII letters, digits and _
// ("" when it is one).
func identProblem(name string) string {
	const want = "is not a PTX identifier: want ASCII letters, digits and _, starting with a letter (or _ and at least one more character)"
	if !validName(name) || name[0] >= '0' && name[0] <= '9' || name == "_" {
		return want
	}
	if len(name) > MaxNameLen {
		return fmt.Sprintf("is %d bytes long, want at most %d", len(name), MaxNameLen)
	}
	return ""
}

// MaxNameLen bounds kernel, parameter and program names (they become PTX symbols and
// Go identifiers).
const MaxNameLen = 256

// verifyRows checks the run-time rows and split: bound grid dimensions name
// distinct i32 parameters, the first of them the rows, any other the parameter marked
// split (at most one, which must bind a dimension); per-row buffer sizes are only
// given with rows, per-part sizes with rows and a split, on pointers.
func verifyRows(k *Kernel) error {
	params := map[string]*Param{}
	var split *Param
	for _, p := range k.Params {
		params[p.Value.Name] = p
		if !p.Split {
			continue
		}
		if split != nil {
			return fmt.Errorf("ir: kernel %s: parameters %s and %s are both marked split; a kernel has at most one split", k.Name, split.Value, p.Value)
		}
		if !p.Value.Type.Equal(ScalarOf(I32)) {
			return fmt.Errorf("ir: kernel %s: split parameter %s has type %s, want i32", k.Name, p.Value, p.Value.Type)
		}
		split = p
	}
	rows := k.RowsParam()
	seen := map[string]bool{}
	for i, n := range k.GridParam {
		if n == "" {
			continue
		}
		if seen[n] {
			return fmt.Errorf("ir: kernel %s: grid dimension %d is bound to %%%s, as a dimension before it is", k.Name, i, n)
		}
		seen[n] = true
		p := params[n]
		switch {
		case p == nil:
			return fmt.Errorf("ir: kernel %s: grid bound to %%%s, which is not a parameter", k.Name, n)
		case !p.Value.Type.Equal(ScalarOf(I32)):
			return fmt.Errorf("ir: kernel %s: grid bound to %s of type %s, want i32", k.Name, p.Value, p.Value.Type)
		case n == rows && p.Split:
			return fmt.Errorf("ir: kernel %s: grid dimension %d, the first bound one, is the rows of the call, but %s is marked split: bind the rows to an earlier dimension", k.Name, i, p.Value)
		case n != rows && !p.Split:
			return fmt.Errorf("ir: kernel %s: grid dimension %d is bound to %%%s: after the rows (%%%s) only the parameter marked split may bind a dimension", k.Name, i, n, rows)
		}
	}
	if split != nil && !seen[split.Value.Name] {
		return fmt.Errorf("ir: kernel %s: split parameter %s binds no grid dimension: bind it to the one after the rows (grid(..., %s max N))", k.Name, split.Value, split.Value)
	}
	for _, p := range k.Params {
		for _, size := range []struct {
			attr string
			n    int64
		}{{"bytes", p.Bytes}, {"perrow", p.PerRow}, {"perpart", p.PerPart}} {
			if size.n < 0 || size.n > MaxBufferBytes {
				return fmt.Errorf("ir: kernel %s: parameter %s: %s %d, want 0..%d", k.Name, p.Value, size.attr, size.n, int64(MaxBufferBytes))
			}
			if size.n == 0 {
				continue
			}
			t := p.Value.Type
			if t.Kind != Ptr && size.attr == "bytes" {
				return fmt.Errorf("ir: kernel %s: parameter %s: bytes %d on a scalar: bytes, perrow and perpart size a pointer's buffer", k.Name, p.Value, size.n)
			}
			// Sizes count whole elements: a launcher would otherwise take a buffer
			// that ends inside the last one.
			if e := int64(t.Elem.Size()); t.Kind == Ptr && size.n%e != 0 {
				return fmt.Errorf("ir: kernel %s: parameter %s: %s %d is not a multiple of %d, the size of one %s", k.Name, p.Value, size.attr, size.n, e, t.Elem)
			}
		}
		if p.PerRow > 0 && (rows == "" || p.Value.Type.Kind != Ptr) {
			return fmt.Errorf("ir: kernel %s: parameter %s has a per-row size but is not a pointer of a kernel whose grid is bound to its rows", k.Name, p.Value)
		}
		if p.PerPart > 0 && (rows == "" || split == nil || p.Value.Type.Kind != Ptr) {
			return fmt.Errorf("ir: kernel %s: parameter %s has a per-part size but is not a pointer of a kernel with rows and a split parameter", k.Name, p.Value)
		}
		if err := verifyStrides(k, p, params); err != nil {
			return err
		}
	}
	return nil
}

// verifyStrides checks a parameter's strided description: only on pointers, a
// positive run with at least one dimension, each naming an integer scalar parameter
// for its stride and either a positive count or an i32 parameter and a positive
// divisor for it.
func verifyStrides(k *Kernel, p *Param, params map[string]*Param) error {
	if p.Run == 0 && len(p.Strides) == 0 {
		return nil
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("ir: kernel %s: parameter %s: strided: %s", k.Name, p.Value, fmt.Sprintf(format, args...))
	}
	if p.Value.Type.Kind != Ptr {
		return bad("only a pointer is addressed through strides")
	}
	if p.Run < 1 || len(p.Strides) == 0 {
		return bad("want a run of at least 1 element and at least one stride (have run %d, %d strides)", p.Run, len(p.Strides))
	}
	if e := int64(p.Value.Type.Elem.Size()); p.Run > MaxBufferBytes/e {
		return bad("run %d, want 1..%d elements (%d bytes of %s)", p.Run, MaxBufferBytes/e, int64(MaxBufferBytes), p.Value.Type.Elem)
	}
	for _, d := range p.Strides {
		s := params[d.Stride]
		if s == nil || s.Value.Type.Kind != Scalar || !s.Value.Type.Elem.IsInt() {
			return bad("%%%s is not an integer scalar parameter", d.Stride)
		}
		if d.CountParam == "" {
			if d.Count < 1 || d.Count > math.MaxInt32 {
				return bad("%%%s x %d: want a count in 1..%d", d.Stride, d.Count, math.MaxInt32)
			}
			continue
		}
		c := params[d.CountParam]
		if c == nil || !c.Value.Type.Equal(ScalarOf(I32)) {
			return bad("%%%s counts %%%s, which is not an i32 parameter", d.Stride, d.CountParam)
		}
		if d.CountDiv < 1 || d.CountDiv > math.MaxInt32 || d.Count != 0 {
			return bad("%%%s x %%%s / %d: want a divisor in 1..%d", d.Stride, d.CountParam, d.CountDiv, math.MaxInt32)
		}
	}
	return nil
}

// verifyDotWarps checks that a dot's schedule spreads it over exactly the warps
// that run it: its role's, or the kernel's.
func verifyDotWarps(k *Kernel, o *Op) error {
	if o.Dot == nil || o.Dot.Warps == [2]int{} {
		return nil
	}
	warps, who := k.Warps, "the kernel's"
	if r, ok := k.Role(o.Role); ok {
		warps, who = r.Warps, "role "+r.Name+"'s"
	}
	if n := o.Dot.WarpCount(); n != warps {
		return opErr(o, -2, "schedule %s spreads it over %d warps; it runs on %s %d", o.Dot, n, who, warps)
	}
	return nil
}
