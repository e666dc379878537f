package lower

import (
	"fmt"
	"maps"
	"math"
	"math/bits"
	"strconv"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
)

// Register files. PTX registers are virtual: each value gets fresh ones and ptxas
// allocates the machine registers.
var regFiles = []struct {
	prefix string
	typ    ptx.Type
}{{"%p", "pred"}, {"%h", "b16"}, {"%r", "b32"}, {"%rd", "b64"}, {"%f", "f32"}}

func regPrefix(e ir.Elem) string {
	switch e {
	case ir.I1:
		return "%p"
	case ir.BF16, ir.F16:
		return "%h"
	case ir.F32:
		return "%f"
	case ir.I64:
		return "%rd"
	}
	return "%r" // i32, and u8/e4m3 widened to 32 bits
}

// vals holds the registers of a materialized value.
type vals struct {
	scalar ptx.Operand
	acc    [][][4]ptx.Operand // [mi][ni][c] for this warp's m16n8 tiles
	vec    [][2]ptx.Operand   // lRows: [mi][row half]; lCols: [ni][column parity]
}

type emitter struct {
	uses  map[*ir.Value]int // each value's uses in the kernel (useCounts)
	f     *fn
	body  []ptx.Stmt
	nregs map[string]int
	v     map[*ir.Value]*vals
	// cache maps (value, coordinates) to a recomputed element, per open scope.
	cache []map[string]ptx.Operand
	// coordScopes caches fragment coordinates per open scope, like cache.
	coordScopes []map[[5]int]*coords
	written     []bool
	// Shared-memory hazards: cp.async writes not yet waited for, plain writes not
	// yet followed by a barrier, and arrays read since the last barrier (an array
	// whose bytes are reused must not be overwritten before all reads are done).
	outstanding  []*ir.Value        // cp.async groups not yet waited for, oldest first
	waited       map[*ir.Value]bool // cp.async data waited for, not yet behind a barrier
	plainPending map[*ir.Value]bool // written with st.shared since the last barrier
	readSince    map[*ir.Value]bool
	// stagedDone marks rank-1 tiles already computed into shared memory.
	stagedDone map[*ir.Value]bool
	// runCache holds vector evaluations (see atRun) for the current staging run.
	runCache   map[string]*run
	version    int
	labels     int
	params     map[*ir.Value]ptx.Operand
	tid, lane  ptx.Operand
	warp, g, t ptx.Operand
	smem       ptx.Operand
	nthreads   int
}

func emit(f *fn) error {
	e := &emitter{f: f, nregs: map[string]int{}, v: map[*ir.Value]*vals{}, coordScopes: []map[[5]int]*coords{{}},
		params: map[*ir.Value]ptx.Operand{}, readSince: map[*ir.Value]bool{}, waited: map[*ir.Value]bool{}, plainPending: map[*ir.Value]bool{}, runCache: map[string]*run{}, stagedDone: map[*ir.Value]bool{}, version: f.target.MinVersion, nthreads: 32 * f.k.Warps}
	e.cache = []map[string]ptx.Operand{{}}
	e.uses = useCounts(f.k)
	fnc := &ptx.Func{Name: f.k.Name, ReqNTid: e.nthreads}
	out := &ptx.Kernel{Name: f.k.Name, Grid: f.k.Grid, Block: e.nthreads}
	for _, p := range f.k.Params {
		name := "param_" + p.Value.Name
		kp := ptx.KParam{Name: p.Value.Name, Align: p.Div, Bytes: p.Bytes}
		t := p.Value.Type
		var pt ptx.Type
		switch {
		case t.Kind == ir.Ptr:
			pt, kp.Kind, kp.Elem = "u64", "ptr", t.Elem.String()
		case t.Elem == ir.I32:
			pt, kp.Kind = "s32", "i32"
		case t.Elem == ir.I64:
			pt, kp.Kind = "s64", "i64"
		case t.Elem == ir.F32:
			pt, kp.Kind = "f32", "f32"
		}
		fnc.Params = append(fnc.Params, ptx.Param{Name: name, Type: pt})
		out.Params = append(out.Params, kp)
	}
	markWritten(f.k, out)
	for _, p := range out.Params {
		e.written = append(e.written, p.Written)
	}
	e.prologue(fnc)
	if err := e.block(f.k.Body); err != nil {
		return err
	}
	e.ins("ret")
	for _, rf := range regFiles {
		if n := e.nregs[rf.prefix]; n > 0 {
			fnc.Regs = append(fnc.Regs, ptx.RegDecl{Type: rf.typ, Prefix: rf.prefix, Count: n})
		}
	}
	if f.smem > 0 {
		fnc.Shared = []ptx.SharedDecl{{Name: "smem", Align: 128, Extern: true}}
	}
	fnc.Body = e.body
	fnc.MaxNReg = regBudget(f.target, e.nthreads, f.smem, f.carriedRegs())
	out.SharedBytes = f.smem
	out.Programmatic = f.follows && f.target.GridDependency
	out.Module = &ptx.Module{Version: versionString(e.version), Target: f.target.Name, AddressSize: 64, Funcs: []*ptx.Func{fnc}}
	f.out = out
	return nil
}

// markWritten flags pointer parameters that a store writes through.
func markWritten(k *ir.Kernel, out *ptx.Kernel) {
	walkOps(k.Body, func(o *ir.Op) {
		if o.Kind != ir.OpStore {
			return
		}
		p := o.Args[0]
		for p.Def != nil && p.Def.Kind == ir.OpBitcast {
			p = p.Def.Args[0]
		}
		for i, kp := range k.Params {
			if kp.Value == p {
				out.Params[i].Written = true
			}
		}
	})
}

func (e *emitter) reg(elem ir.Elem) ptx.Reg {
	p := regPrefix(elem)
	n := e.nregs[p]
	e.nregs[p] = n + 1
	return ptx.Reg(p + strconv.Itoa(n))
}

func (e *emitter) ins(op string, args ...ptx.Operand) {
	e.body = append(e.body, &ptx.Instr{Op: op, Args: args})
}

func (e *emitter) insIf(guard ptx.Operand, neg bool, op string, args ...ptx.Operand) {
	in := &ptx.Instr{Op: op, Args: args}
	if guard != nil {
		in.Guard, in.GuardNeg = string(guard.(ptx.Reg)), neg
	}
	e.body = append(e.body, in)
}

func (e *emitter) comment(format string, args ...any) {
	e.body = append(e.body, &ptx.Comment{Text: fmt.Sprintf(format, args...)})
}

func (e *emitter) label() string {
	e.labels++
	return fmt.Sprintf("$L%d", e.labels)
}

func (e *emitter) needVersion(v int) {
	if v > e.version {
		e.version = v
	}
}

func (e *emitter) prologue(fnc *ptx.Func) {
	if e.f.target.GridDependency {
		// Programmatic dependent launch: a kernel with a successor lets it launch
		// now (its CTAs then wait below, resident, instead of after the launch gap);
		// a kernel with a predecessor waits for it to finish and its writes to be
		// visible before anything else, so it may safely be launched early.
		if e.f.precedes {
			e.ins("griddepcontrol.launch_dependents")
		}
		if e.f.follows {
			e.ins("griddepcontrol.wait")
		}
		if e.f.precedes || e.f.follows {
			e.needVersion(featureVersion["griddepcontrol"])
		}
	}
	for i, p := range e.f.k.Params {
		t := p.Value.Type
		name := ptx.Sym(fnc.Params[i].Name)
		switch {
		case t.Kind == ir.Ptr:
			raw := e.reg(ir.I64)
			e.ins("ld.param.u64", raw, ptx.Addr{Base: name})
			r := e.reg(ir.I64)
			e.ins("cvta.to.global.u64", r, raw)
			e.params[p.Value] = r
		default:
			r := e.reg(t.Elem)
			e.ins("ld.param."+string(fnc.Params[i].Type), r, ptx.Addr{Base: name})
			e.params[p.Value] = r
		}
		e.v[p.Value] = &vals{scalar: e.params[p.Value]}
	}
	e.tid = e.reg(ir.I32)
	e.ins("mov.u32", e.tid, ptx.Reg("%tid.x"))
	e.lane = e.reg(ir.I32)
	e.ins("and.b32", e.lane, e.tid, ptx.Imm(31))
	e.warp = e.reg(ir.I32)
	e.ins("shr.u32", e.warp, e.tid, ptx.Imm(5))
	e.g = e.reg(ir.I32)
	e.ins("shr.u32", e.g, e.lane, ptx.Imm(2))
	e.t = e.reg(ir.I32)
	e.ins("and.b32", e.t, e.lane, ptx.Imm(3))
	if e.f.smem > 0 {
		e.smem = e.reg(ir.I32)
		e.ins("mov.u32", e.smem, ptx.Sym("smem"))
	}
}

func (e *emitter) block(b *ir.Block) error {
	for i := 0; i < len(b.Ops); {
		if g := e.dotGroupAt(b.Ops, i); g != nil {
			if err := e.dotGroup(g); err != nil {
				return err
			}
			i += len(g)
			continue
		}
		if err := e.op(b.Ops[i]); err != nil {
			return opError(b.Ops[i], err)
		}
		i++
	}
	return nil
}

// useCounts counts each value's uses: as an op argument anywhere in k, and as
// a loop's yielded value.
func useCounts(k *ir.Kernel) map[*ir.Value]int {
	n := map[*ir.Value]int{}
	walkOps(k.Body, func(o *ir.Op) {
		for _, a := range o.Args {
			n[a]++
		}
		if o.Body != nil {
			for _, y := range o.Body.Yield {
				n[y]++
			}
		}
	})
	return n
}

func (e *emitter) layout(v *ir.Value) layout { return e.f.layouts[v] }

func (e *emitter) op(o *ir.Op) error {
	if err := e.opCompute(o); err != nil {
		return err
	}
	if len(o.Results) == 1 {
		if _, ok := e.f.staged[o.Result()]; ok {
			return e.stage(o.Result())
		}
	}
	return nil
}

func (e *emitter) opCompute(o *ir.Op) error {
	switch o.Kind {
	case ir.OpFor:
		return e.loop(o)
	case ir.OpStore:
		return e.store(o)
	}
	r := o.Result()
	l := e.layout(r)
	switch l.kind {
	case lScalar:
		args := make([]ptx.Operand, len(o.Args))
		for i, a := range o.Args {
			args[i] = e.scalar(a)
		}
		x, err := e.elem(o, args)
		if err != nil {
			return err
		}
		e.v[r] = &vals{scalar: x}
	case lExpr, lShared:
		// Recomputed per use, or stored by the cp.asyncs issued here.
		if o.Kind == ir.OpLoad && l.kind == lShared {
			return e.loadShared(o)
		}
	case lAcc:
		if o.Kind == ir.OpDot {
			return e.dot(o)
		}
		if o.Kind == ir.OpBroadcast {
			return nil // read through to the row or column vector
		}
		return e.accElementwise(o)
	case lRows, lCols:
		if o.Kind == ir.OpReduce {
			return e.reduce(o)
		}
		return e.vecElementwise(o)
	}
	return nil
}

func (e *emitter) scalar(v *ir.Value) ptx.Operand {
	if x, ok := e.v[v]; ok && x.scalar != nil {
		return x.scalar
	}
	panic(fmt.Sprintf("lower: scalar %s used before emission", v))
}

// typeSuffix is the PTX type an op on elem computes in.
func typeSuffix(elem ir.Elem) string {
	switch elem {
	case ir.I32, ir.U8:
		return "s32"
	case ir.I64:
		return "s64"
	case ir.F32:
		return "f32"
	case ir.BF16, ir.F16, ir.E4M3:
		return "b16"
	case ir.I1:
		return "pred"
	}
	return "b32"
}

func bitsSuffix(elem ir.Elem) string {
	switch elem {
	case ir.I1:
		return "pred"
	case ir.BF16, ir.F16:
		return "b16"
	case ir.I64:
		return "b64"
	case ir.F32:
		return "f32"
	}
	return "b32"
}

func isImm(x ptx.Operand) bool {
	switch x.(type) {
	case ptx.Imm, ptx.FImm:
		return true
	}
	return false
}

// inReg moves an immediate into a register when an instruction needs a register.
func (e *emitter) inReg(x ptx.Operand, elem ir.Elem) ptx.Operand {
	if !isImm(x) {
		return x
	}
	if elem == ir.I1 {
		r := e.reg(ir.I1)
		e.ins("setp.ne.s32", r, x, ptx.Imm(0))
		return r
	}
	r := e.reg(elem)
	e.ins("mov."+bitsSuffix(elem), r, x)
	return r
}

func constOperand(o *ir.Op, elem ir.Elem) ptx.Operand {
	switch elem {
	case ir.F32:
		return ptx.F32(float32(o.Float))
	case ir.BF16, ir.F16, ir.E4M3:
		// 16-bit and 8-bit float constants are materialized from f32 by a cvt.
		return ptx.F32(float32(o.Float))
	}
	return ptx.Imm(o.Int)
}

// elem emits one element of an op from its operand elements and returns the result
// (a register or an immediate). It serves scalars, recomputed tiles and every
// element of a distributed tile alike.
func (e *emitter) elem(o *ir.Op, args []ptx.Operand) (ptx.Operand, error) {
	re := o.Result().Type.Elem
	var ae ir.Elem
	if len(o.Args) > 0 {
		ae = o.Args[0].Type.Elem
	}
	switch o.Kind {
	case ir.OpConst:
		c := constOperand(o, re)
		if re == ir.BF16 || re == ir.F16 {
			r := e.reg(re)
			e.ins("cvt.rn."+re.String()+".f32", r, c)
			return r, nil
		}
		if re == ir.I1 {
			return e.inReg(c, ir.I1), nil
		}
		return c, nil
	case ir.OpProgramID:
		r := e.reg(ir.I32)
		e.ins("mov.u32", r, ptx.Reg("%ctaid."+"xyz"[o.Int:o.Int+1]))
		return r, nil
	case ir.OpIota:
		return nil, fmt.Errorf("iota has no scalar value")
	case ir.OpBroadcast:
		return args[0], nil
	case ir.OpAdd, ir.OpSub, ir.OpMul, ir.OpDiv, ir.OpRem, ir.OpMax, ir.OpMin, ir.OpAnd, ir.OpOr, ir.OpXor, ir.OpShl, ir.OpShr:
		return e.binary(o.Kind, ae, args[0], args[1])
	case ir.OpNeg:
		if c, ok := args[0].(ptx.Imm); ok {
			return -c, nil
		}
		r := e.reg(re)
		e.ins("neg."+typeSuffix(re), r, args[0])
		return r, nil
	case ir.OpExp2, ir.OpLog2, ir.OpRcp:
		r := e.reg(re)
		name := map[ir.OpKind]string{ir.OpExp2: "ex2.approx.f32", ir.OpLog2: "lg2.approx.f32", ir.OpRcp: "rcp.approx.f32"}[o.Kind]
		e.ins(name, r, e.inReg(args[0], ir.F32))
		return r, nil
	case ir.OpCmp:
		r := e.reg(ir.I1)
		a, b := args[0], args[1]
		pred := o.Pred
		if isImm(a) {
			a, b = b, a
			pred = map[string]string{"lt": "gt", "le": "ge", "gt": "lt", "ge": "le", "eq": "eq", "ne": "ne"}[pred]
		}
		e.ins("setp."+pred+"."+typeSuffix(ae), r, e.inReg(a, ae), b)
		return r, nil
	case ir.OpSelect:
		if re == ir.I1 {
			// c ? a : b on predicates: (c & a) | (!c & b).
			c, a, b := e.inReg(args[0], ir.I1), e.inReg(args[1], ir.I1), e.inReg(args[2], ir.I1)
			t1, t2, r := e.reg(ir.I1), e.reg(ir.I1), e.reg(ir.I1)
			e.ins("and.pred", t1, c, a)
			e.ins("not.pred", t2, c)
			e.ins("and.pred", t2, t2, b)
			e.ins("or.pred", r, t1, t2)
			return r, nil
		}
		r := e.reg(re)
		e.ins("selp."+bitsSuffix(re), r, args[1], args[2], e.inReg(args[0], ir.I1))
		return r, nil
	case ir.OpCast:
		return e.cast(ae, re, args[0])
	case ir.OpBitcast:
		if o.Args[0].Type.Kind == ir.Ptr {
			return args[0], nil
		}
		if ae.Size() == re.Size() && regPrefix(ae) == regPrefix(re) {
			return args[0], nil
		}
		r := e.reg(re)
		e.ins("mov.b"+strconv.Itoa(8*max(re.Size(), 2)), r, args[0])
		return r, nil
	case ir.OpLoad:
		return e.loadElem(o, args)
	}
	return nil, fmt.Errorf("op %s cannot be computed per element", o.Kind)
}

func foldInt(k ir.OpKind, a, b int64) (int64, bool) {
	switch k {
	case ir.OpAdd:
		return a + b, true
	case ir.OpSub:
		return a - b, true
	case ir.OpMul:
		return a * b, true
	case ir.OpMax:
		return max(a, b), true
	case ir.OpMin:
		return min(a, b), true
	case ir.OpDiv:
		if b != 0 {
			return a / b, true
		}
	}
	return 0, false
}

func (e *emitter) binary(k ir.OpKind, elem ir.Elem, a, b ptx.Operand) (ptx.Operand, error) {
	ia, aok := a.(ptx.Imm)
	ib, bok := b.(ptx.Imm)
	if aok && bok {
		if c, ok := foldInt(k, int64(ia), int64(ib)); ok {
			return ptx.Imm(c), nil
		}
	}
	// Identities that index arithmetic hits constantly.
	switch {
	case bok && ib == 0 && (k == ir.OpAdd || k == ir.OpSub):
		return a, nil
	case aok && ia == 0 && k == ir.OpAdd:
		return b, nil
	case bok && ib == 1 && (k == ir.OpMul || k == ir.OpDiv):
		return a, nil
	case aok && ia == 1 && k == ir.OpMul:
		return b, nil
	}
	if bok && (elem == ir.I32 || elem == ir.I64) && (k == ir.OpDiv || k == ir.OpRem) && ib > 1 && ib <= math.MaxInt32 {
		if ib&(ib-1) == 0 {
			return e.divRemPow2(k, elem, a, int(ib)), nil
		}
		if elem == ir.I32 {
			return e.divRemMagic(k, a, int64(ib)), nil
		}
	}
	commutative := k == ir.OpAdd || k == ir.OpMul || k == ir.OpMax || k == ir.OpMin || k == ir.OpAnd || k == ir.OpOr || k == ir.OpXor
	if isImm(a) && commutative {
		a, b = b, a
	}
	a = e.inReg(a, elem)
	if elem == ir.I1 {
		b = e.inReg(b, elem)
	}
	r := e.reg(elem)
	ts := typeSuffix(elem)
	var name string
	switch k {
	case ir.OpAdd, ir.OpSub:
		name = string(k) + "." + ts
		if elem == ir.F32 {
			name = string(k) + ".rn.f32"
		}
	case ir.OpMul:
		name = "mul.lo." + ts
		if elem == ir.F32 {
			name = "mul.rn.f32"
		}
	case ir.OpDiv:
		name = "div." + ts
		if elem == ir.F32 {
			name = "div.rn.f32"
		}
	case ir.OpRem:
		name = "rem." + ts
	case ir.OpMax, ir.OpMin:
		name = string(k) + "." + ts
	case ir.OpAnd, ir.OpOr, ir.OpXor:
		name = string(k) + "." + bitsSuffix(elem)
		if elem == ir.I1 {
			name = string(k) + ".pred"
		}
	case ir.OpShl:
		name = "shl.b" + strconv.Itoa(8*max(elem.Size(), 4))
	case ir.OpShr:
		name = "shr." + ts
		if elem == ir.U8 {
			name = "shr.u32"
		}
	}
	if (k == ir.OpShl || k == ir.OpShr) && elem == ir.I64 {
		// Shift amounts are 32-bit registers in PTX.
		if ib, ok := b.(ptx.Imm); ok {
			b = ib
		} else {
			t := e.reg(ir.I32)
			e.ins("cvt.u32.u64", t, b)
			b = t
		}
	}
	e.ins(name, r, a, b)
	return r, nil
}

// divRemPow2 is signed i32 or i64 division (truncating) or remainder by d = 2^k
// with shifts: a negative dividend is biased by d-1 so the arithmetic shift rounds
// toward zero, as div.s32 does. ptxas 11.8 expands div.s32 and rem.s32 by a
// constant into its general sequence (about 15 instructions with a float
// reciprocal), and div.s64 into a call to a 64-bit division routine; a page
// index and slot, and a bf16 view's row of a byte offset, are computed per
// gathered candidate.
func (e *emitter) divRemPow2(k ir.OpKind, elem ir.Elem, a ptx.Operand, d int) ptx.Operand {
	a = e.inReg(a, elem)
	width := 8 * elem.Size()
	ts := typeSuffix(elem)
	sign := e.reg(elem)
	e.ins("shr.s"+ts[1:], sign, a, ptx.Imm(width-1))
	bias := e.reg(elem)
	e.ins("shr.u"+ts[1:], bias, sign, ptx.Imm(width-log2(d)))
	biased := e.reg(elem)
	e.ins("add.s"+ts[1:], biased, a, bias)
	r := e.reg(elem)
	if k == ir.OpDiv {
		e.ins("shr.s"+ts[1:], r, biased, ptx.Imm(log2(d)))
		return r
	}
	// a - trunc(a/d)*d: clear the biased value's low bits and subtract.
	whole := e.reg(elem)
	e.ins("and.b"+ts[1:], whole, biased, ptx.Imm(-d))
	e.ins("sub.s"+ts[1:], r, a, whole)
	return r
}

// divRemU32 writes r = a / d or a % d for an a known to be non-negative (a thread,
// warp or run number) and a constant d >= 1, without div.u32 or rem.u32, which
// ptxas 11.8 expands into a float-reciprocal sequence even for powers of two.
func (e *emitter) divRemU32(k ir.OpKind, r, a ptx.Operand, d int) {
	switch {
	case d == 1 && k == ir.OpDiv:
		e.ins("mov.u32", r, a)
	case d == 1:
		e.ins("mov.u32", r, ptx.Imm(0))
	case d&(d-1) == 0 && k == ir.OpDiv:
		e.ins("shr.u32", r, a, ptx.Imm(log2(d)))
	case d&(d-1) == 0:
		e.ins("and.b32", r, a, ptx.Imm(d-1))
	default:
		e.ins("mov.u32", r, e.divRemMagic(k, a, int64(d)))
	}
}

// divRemMagic is signed i32 division (truncating) or remainder by a constant d > 1
// that is not a power of two, as a multiplication by a "magic" reciprocal (Granlund
// and Montgomery; the form of Go's cmd/compile smagic): with s = floor(log2 d) and
// M = ceil(2^(32+s) / d) < 2^32, x / d = floor(x*M / 2^(32+s)) + (1 if x < 0). ptxas
// 11.8 expands div.s32 by a constant into a float-reciprocal sequence instead.
func (e *emitter) divRemMagic(k ir.OpKind, a ptx.Operand, d int64) ptx.Operand {
	a = e.inReg(a, ir.I32)
	s := bits.Len64(uint64(d)) - 1
	m := (uint64(1)<<(32+s) + uint64(d) - 1) / uint64(d)
	hi := e.reg(ir.I32)
	// 2^s < d < 2^(s+1) puts M in (2^31, 2^32): as an s32 it is M - 2^32, so the
	// signed high product is x*M/2^32 - x, and adding x back restores it.
	e.ins("mul.hi.s32", hi, a, ptx.Imm(int64(int32(uint32(m)))))
	e.ins("add.s32", hi, hi, a)
	e.ins("shr.s32", hi, hi, ptx.Imm(s))
	neg := e.reg(ir.I32)
	e.ins("shr.u32", neg, a, ptx.Imm(31))
	q := e.reg(ir.I32)
	e.ins("add.s32", q, hi, neg)
	if k == ir.OpDiv {
		return q
	}
	whole := e.reg(ir.I32)
	e.ins("mul.lo.s32", whole, q, ptx.Imm(d))
	r := e.reg(ir.I32)
	e.ins("sub.s32", r, a, whole)
	return r
}

// cast converts one element.
func (e *emitter) cast(from, to ir.Elem, x ptx.Operand) (ptx.Operand, error) {
	if from == to {
		return x, nil
	}
	if c, ok := x.(ptx.Imm); ok && to.IsInt() && from.IsInt() {
		switch to {
		case ir.I32:
			return ptx.Imm(int32(c)), nil
		case ir.U8:
			return ptx.Imm(uint8(c)), nil
		}
		return c, nil
	}
	r := e.reg(to)
	x = e.inReg(x, from)
	switch {
	case from == ir.I32 && to == ir.I64:
		e.ins("cvt.s64.s32", r, x)
	case from == ir.I64 && to == ir.I32:
		e.ins("cvt.u32.u64", r, x)
	case from == ir.U8 && to == ir.I32:
		e.ins("and.b32", r, x, ptx.Imm(255))
	case from == ir.U8 && to == ir.I64:
		e.ins("cvt.u64.u32", r, x)
	case from == ir.I32 && to == ir.U8:
		e.ins("and.b32", r, x, ptx.Imm(255))
	case (from == ir.I32 || from == ir.U8) && to == ir.F32:
		e.ins("cvt.rn.f32.s32", r, x)
	case from == ir.I64 && to == ir.F32:
		e.ins("cvt.rn.f32.s64", r, x)
	case from == ir.F32 && to == ir.I32:
		e.ins("cvt.rzi.s32.f32", r, x)
	case from == ir.F32 && to == ir.I64:
		e.ins("cvt.rzi.s64.f32", r, x)
	case from == ir.F32 && (to == ir.BF16 || to == ir.F16):
		e.ins("cvt.rn."+to.String()+".f32", r, x)
	case from == ir.BF16 && to == ir.F32:
		e.needVersion(featureVersion["cvt.f32.bf16"])
		e.ins("cvt.f32.bf16", r, x)
	case from == ir.F16 && to == ir.F32:
		e.ins("cvt.f32.f16", r, x)
	case from == ir.E4M3 && to == ir.F32:
		return e.e4m3ToF32(x, r)
	case from == ir.I1 && to.IsInt():
		e.ins("selp."+bitsSuffix(to), r, ptx.Imm(1), ptx.Imm(0), x)
	default:
		return nil, fmt.Errorf("no conversion from %s to %s", from, to)
	}
	return r, nil
}

// e4m3ToF32 decodes an e4m3 byte (in the low bits of a 32-bit register) exactly.
// sm_89 and later convert in hardware; sm_80 rebuilds the float from its fields:
// normal values shift into f32 position and rebias by 2^120 in one exact multiply,
// subnormals come out of the same formula because f32 keeps them normal.
func (e *emitter) e4m3ToF32(x ptx.Operand, r ptx.Reg) (ptx.Operand, error) {
	if e.f.target.FP8Convert {
		v := featureVersion["cvt.e4m3"]
		if e.f.target.Name == "sm_89" {
			v = featureVersion["cvt.e4m3.sm_89"]
		}
		e.needVersion(v)
		b16 := e.reg(ir.BF16)
		e.ins("cvt.u16.u32", b16, x)
		pair := e.reg(ir.I32)
		e.ins("cvt.rn.f16x2.e4m3x2", pair, b16)
		lo := e.reg(ir.F16)
		e.ins("cvt.u16.u32", lo, pair)
		e.ins("cvt.f32.f16", r, lo)
		return r, nil
	}
	// |x| bits 0..6 placed at f32 bits 20..26; value = bits * 2^(127-7) * 2^-127...
	mag := e.reg(ir.I32)
	e.ins("and.b32", mag, x, ptx.Imm(0x7f))
	shifted := e.reg(ir.I32)
	e.ins("shl.b32", shifted, mag, ptx.Imm(20))
	sign := e.reg(ir.I32)
	e.ins("and.b32", sign, x, ptx.Imm(0x80))
	e.ins("shl.b32", sign, sign, ptx.Imm(24))
	bits := e.reg(ir.I32)
	e.ins("or.b32", bits, shifted, sign)
	f := e.reg(ir.F32)
	e.ins("mov.b32", f, bits)
	// Scale by 2^(127-7) to rebias the exponent; exact for every finite e4m3.
	e.ins("mul.rn.f32", r, f, ptx.F32(float32(math.Ldexp(1, 120))))
	// 0x7f and 0xff are NaN.
	isNaN := e.reg(ir.I1)
	e.ins("setp.eq.s32", isNaN, mag, ptx.Imm(0x7f))
	e.ins("selp.f32", r, ptx.F32(float32(math.NaN())), r, isNaN)
	return r, nil
}

func (e *emitter) pushScope() {
	e.cache = append(e.cache, map[string]ptx.Operand{})
	e.coordScopes = append(e.coordScopes, map[[5]int]*coords{})
}

// forgetThreadCoords drops the cached coordinates and lane offsets that depend
// only on the thread, after a loop: recomputing them later costs a few integer
// instructions, while keeping them live across the loop cost the 64-head decode
// (128 registers) a spill.
func (e *emitter) forgetThreadCoords() {
	for _, m := range e.coordScopes {
		clear(m)
	}
	for _, m := range e.cache {
		for k := range m {
			if strings.HasPrefix(k, "lane:") {
				delete(m, k)
			}
		}
	}
}

func (e *emitter) popScope() {
	e.cache = e.cache[:len(e.cache)-1]
	e.coordScopes = e.coordScopes[:len(e.coordScopes)-1]
}

func (e *emitter) cached(key string) (ptx.Operand, bool) {
	for i := len(e.cache) - 1; i >= 0; i-- {
		if x, ok := e.cache[i][key]; ok {
			return x, true
		}
	}
	return nil, false
}

func operandKey(xs []ptx.Operand) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = ptx.OperandString(x)
	}
	return strings.Join(s, ",")
}

// at recomputes the element of v at the given coordinates (i32 registers or
// immediates, one per dimension of v). Results are cached for the open scope.
func (e *emitter) at(v *ir.Value, idx []ptx.Operand) (ptx.Operand, error) {
	if v.Type.Kind != ir.Tile {
		return e.scalar(v), nil
	}
	key := v.Name + "@" + operandKey(idx)
	if x, ok := e.cached(key); ok {
		return x, nil
	}
	if e.stagedDone[v] {
		x, err := e.sharedElem(v, idx)
		if err == nil {
			e.cache[len(e.cache)-1][key] = x
		}
		return x, err
	}
	x, err := e.atUncached(v, idx)
	if err != nil {
		return nil, err
	}
	e.cache[len(e.cache)-1][key] = x
	return x, nil
}

func (e *emitter) atUncached(v *ir.Value, idx []ptx.Operand) (ptx.Operand, error) {
	l := e.layout(v)
	o := v.Def
	switch {
	case l.kind == lShared:
		return e.sharedElem(v, idx)
	case l.kind != lExpr:
		return nil, fmt.Errorf("%s (%v) cannot be read at arbitrary coordinates", v, l)
	case o == nil:
		return nil, fmt.Errorf("%s has no defining op", v)
	}
	switch o.Kind {
	case ir.OpIota:
		return idx[0], nil
	case ir.OpBroadcast:
		x := o.Args[0]
		if x.Type.Kind != ir.Tile {
			return e.scalar(x), nil
		}
		return e.at(x, []ptx.Operand{idx[1-o.Int]})
	case ir.OpColumn:
		return e.at(o.Args[0], []ptx.Operand{idx[0], ptx.Imm(o.Int)})
	case ir.OpSlice:
		i, err := e.binary(ir.OpAdd, ir.I32, e.scalar(o.Args[1]), idx[0])
		if err != nil {
			return nil, err
		}
		return e.at(o.Args[0], []ptx.Operand{i})
	case ir.OpLoad:
		m := memOperands(o)
		off, err := e.at(m.offs, idx)
		if err != nil {
			return nil, err
		}
		args := []ptx.Operand{e.scalar(m.ptr), off, nil}
		if m.mask != nil {
			if args[2], err = e.at(m.mask, idx); err != nil {
				return nil, err
			}
		}
		return e.loadElem(o, args)
	}
	args := make([]ptx.Operand, len(o.Args))
	for i, a := range o.Args {
		var err error
		if args[i], err = e.at(a, idx); err != nil {
			return nil, err
		}
	}
	return e.elem(o, args)
}

// loop emits a counted loop. Carried values live in registers allocated here; the
// body's yields are copied into them before the back edge.
func (e *emitter) loop(o *ir.Op) error {
	body := o.Body
	iv := e.reg(ir.I32)
	lo, hi := e.scalar(o.Args[0]), e.scalar(o.Args[1])
	e.ins("mov.u32", iv, lo)
	e.v[body.Args[0]] = &vals{scalar: iv}
	carried := make([]*vals, len(body.Yield))
	for i, in := range o.Args[2:] {
		arg := body.Args[i+1]
		c, err := e.materialize(in, e.layout(arg))
		if err != nil {
			return fmt.Errorf("loop-carried value %s: %v", arg, err)
		}
		carried[i] = c
		e.v[arg] = c
	}
	// Tiles the body slices (the CTA's candidate indices) are written before the
	// loop and read first thing in it: make them visible once, here, instead of
	// with a barrier in every iteration.
	inBody := map[*ir.Value]bool{}
	for _, bo := range body.Ops {
		for _, r := range bo.Results {
			inBody[r] = true
		}
	}
	for _, bo := range body.Ops {
		if x := bo.Args; bo.Kind == ir.OpSlice && !inBody[x[0]] {
			if _, ok := e.f.sharedHome(x[0]); ok {
				e.ready(x[0])
			}
		}
	}
	// The body ends with every shared access complete (flushAll), so after the loop
	// the hazards are those at entry: a loop that runs no iteration leaves them as
	// they were.
	entry := e.hazards()
	top, end := e.label(), e.label()
	li, lok := lo.(ptx.Imm)
	hiImm, hok := hi.(ptx.Imm)
	if !(lok && hok && li < hiImm) {
		p := e.reg(ir.I1)
		e.ins("setp.ge.s32", p, iv, hi)
		e.insIf(p, false, "bra.uni", ptx.Sym(end))
	}
	e.body = append(e.body, &ptx.Label{Name: top})
	e.pushScope()
	if err := e.block(body); err != nil {
		return err
	}
	for i, y := range body.Yield {
		if err := e.copyInto(carried[i], y, e.layout(body.Args[i+1])); err != nil {
			return err
		}
	}
	if e.writesShared(body) {
		e.comment("all warps are done with this iteration's shared tiles")
		e.flushAll()
	}
	e.popScope()
	e.ins("add.s32", iv, iv, ptx.Imm(o.Int))
	p := e.reg(ir.I1)
	e.ins("setp.lt.s32", p, iv, e.inReg(hi, ir.I32))
	e.insIf(p, false, "bra.uni", ptx.Sym(top))
	e.body = append(e.body, &ptx.Label{Name: end})
	e.restoreHazards(entry)
	e.forgetThreadCoords()
	for i, r := range o.Results {
		e.v[r] = carried[i]
	}
	return nil
}

// writesShared reports whether a loop body writes shared memory (loads, staged
// tiles, reduction scratch), so the next iteration needs a barrier first.
func (e *emitter) writesShared(b *ir.Block) bool {
	found := false
	walkOps(b, func(o *ir.Op) {
		for _, r := range o.Results {
			if _, ok := e.f.sharedHome(r); ok && o.Kind != ir.OpTrans {
				found = true
			}
			if _, ok := e.f.scratch[r]; ok {
				found = true
			}
		}
	})
	return found
}

// materialize gives v fresh registers in layout l (for loop-carried values).
func (e *emitter) materialize(v *ir.Value, l layout) (*vals, error) {
	out := &vals{}
	elem := v.Type.Elem
	mov := "mov." + bitsSuffix(elem)
	switch l.kind {
	case lScalar:
		r := e.reg(elem)
		src := e.scalar(v)
		if elem == ir.I1 {
			e.ins("and.pred", r, e.inReg(src, ir.I1), e.inReg(src, ir.I1))
		} else {
			e.ins(mov, r, src)
		}
		out.scalar = r
		return out, nil
	case lAcc:
		mt, nt := e.rowsOf(v.Type.Shape[0], l).n, e.colsOf(v.Type.Shape[1], l).n
		out.acc = make([][][4]ptx.Operand, mt)
		for mi := range out.acc {
			out.acc[mi] = make([][4]ptx.Operand, nt)
			for ni := range out.acc[mi] {
				for c := 0; c < 4; c++ {
					x, err := e.accElem(v, l, mi, ni, c)
					if err != nil {
						return nil, err
					}
					r := e.reg(elem)
					e.ins(mov, r, x)
					out.acc[mi][ni][c] = r
				}
			}
		}
		return out, nil
	case lRows, lCols:
		shape := accShapeOf(v, l)
		n := e.rowsOf(shape[0], l).n
		if l.kind == lCols {
			n = e.colsOf(shape[1], l).n
		}
		out.vec = make([][2]ptx.Operand, n)
		for i := range out.vec {
			for h := 0; h < 2; h++ {
				x, err := e.vecElem(v, l, i, h)
				if err != nil {
					return nil, err
				}
				r := e.reg(elem)
				e.ins(mov, r, x)
				out.vec[i][h] = r
			}
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot carry a value in %v", l)
}

// copyInto moves y's elements into the carried registers dst.
func (e *emitter) copyInto(dst *vals, y *ir.Value, l layout) error {
	mov := "mov." + bitsSuffix(y.Type.Elem)
	switch l.kind {
	case lScalar:
		src := e.scalar(y)
		if src == dst.scalar {
			return nil
		}
		if y.Type.Elem == ir.I1 {
			s := e.inReg(src, ir.I1)
			e.ins("and.pred", dst.scalar, s, s)
		} else {
			e.ins(mov, dst.scalar, src)
		}
	case lAcc:
		for mi := range dst.acc {
			for ni := range dst.acc[mi] {
				for c := 0; c < 4; c++ {
					x, err := e.accElem(y, l, mi, ni, c)
					if err != nil {
						return err
					}
					if x != dst.acc[mi][ni][c] {
						e.ins(mov, dst.acc[mi][ni][c], x)
					}
				}
			}
		}
	case lRows, lCols:
		for i := range dst.vec {
			for h := 0; h < 2; h++ {
				x, err := e.vecElem(y, l, i, h)
				if err != nil {
					return err
				}
				if x != dst.vec[i][h] {
					e.ins(mov, dst.vec[i][h], x)
				}
			}
		}
	}
	return nil
}

// carriedRegs is the most registers per thread that loop-carried fragments
// (accumulators and their row statistics) hold in any loop, plus 32 when score
// tiles are replicated across warps (each warp then holds whole tiles and their
// B fragments; measured: the default decode needs about 200 registers so).
func (f *fn) carriedRegs() int {
	most, extra := 0, 0
	for _, l := range f.layouts {
		if l.rep > 1 {
			extra = 32
			break
		}
	}
	walkOps(f.k.Body, func(o *ir.Op) {
		if o.Kind != ir.OpFor {
			return
		}
		n := 0
		for _, a := range o.Body.Args[1:] {
			l := f.layouts[a]
			switch l.kind {
			case lAcc:
				n += a.Type.Shape[0] / granuleM / l.wm * a.Type.Shape[1] / granuleN / l.wn * 4
			case lRows:
				n += a.Type.Shape[0] / granuleM / l.wm * 2
			case lCols:
				n += a.Type.Shape[0] / granuleN / l.wn * 2
			}
		}
		most = max(most, n)
	})
	return most + extra
}

// hazardState is a copy of the emitter's shared-memory hazard tracking.
type hazardState struct {
	outstanding                     []*ir.Value
	waited, plainPending, readSince map[*ir.Value]bool
}

func (e *emitter) hazards() hazardState {
	return hazardState{append([]*ir.Value(nil), e.outstanding...), maps.Clone(e.waited), maps.Clone(e.plainPending), maps.Clone(e.readSince)}
}

func (e *emitter) restoreHazards(h hazardState) {
	e.outstanding, e.waited, e.plainPending, e.readSince = h.outstanding, h.waited, h.plainPending, h.readSince
}
