// Package emit writes a kernel's PTX from what the lowering's passes decided
// (decision.Set), leaving sync points for the sync pass; it decides nothing the
// records say (DESIGN.md, the emit pass).
package emit

import (
	"fmt"
	"strconv"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

// Register files. PTX registers are virtual: each value gets fresh ones and ptxas
// allocates the machine registers.
var regFiles = []struct {
	prefix string
	typ    ptx.Type
}{{"%p", "pred"}, {"%h", "b16"}, {"%r", "b32"}, {"%rd", "b64"}, {"%f", "f32"}}

// vals holds the registers of a materialized value.
type vals struct {
	scalar ptx.Operand
	acc    [][][4]ptx.Operand // [mi][ni][c] for this warp's m16n8 tiles
	vec    [][2]ptx.Operand   // Rows: [mi][row half]; Cols: [ni][column parity]
	elems  []ptx.Operand      // Threads: element tid + k x threads in elems[k]
}

// threadView is how the code being emitted numbers its threads, and what it has
// cached that depends on the numbering. A role region renumbers the threads as
// the role's own, so entering one swaps the whole view and leaving it restores
// the view outside (roles.go).
type threadView struct {
	tid, warp ptx.Operand
	nthreads  int
	// cache maps (value, coordinates) to a recomputed element, per open scope.
	cache []map[string]ptx.Operand
	// coordScopes caches fragment coordinates per open scope, like cache.
	coordScopes []map[[5]int]*coords
}

type emitter struct {
	// threadView is the numbering in force: the CTA's, or the open role region's.
	threadView
	uses map[*ir.Value]int // each value's uses in the kernel (ir.UseCounts)
	d    *decision.Set
	// points are the sync points left in the body (syncpoint.go), for the sync pass.
	points  map[*ptx.Comment]decision.SyncEvent
	body    []ptx.Stmt
	nregs   map[string]int
	v       map[*ir.Value]*vals
	written []bool
	// stagedDone marks rank-1 tiles already computed into shared memory.
	stagedDone map[*ir.Value]bool
	// runCache holds vector evaluations (see atRun) for the current staging run.
	runCache map[string]*run
	// pending is a staged tile whose stores wait for the next tile's loads.
	pending *pendingStage
	version int
	labels  int
	params  map[*ir.Value]ptx.Operand
	lane    ptx.Operand
	g, t    ptx.Operand
	smem    ptx.Operand
	// ring maps each tile of the pipelined loop being emitted to the base of
	// the slot this iteration reads (smem + slot x slot bytes).
	ring map[*ir.Value]ptx.Operand
	// issuing is the pipeline stage being issued (nil outside one; loop.go).
	issuing *stageScope
	// region is the open role region (nil: every warp runs the code;
	// roles.go).
	region *roleRegion
	// held are the A fragments of the dots that hold them across a loop (holdA),
	// loaded before the loop is entered.
	held map[*ir.Op][][][4]ptx.Operand
}

// smemOf is the base register of v's shared bytes: the slot this iteration reads
// for a pipelined tile, smem for any other array.
func (e *emitter) smemOf(v *ir.Value) ptx.Operand {
	if b, ok := e.ring[ir.StorageOf(v)]; ok {
		return b
	}
	return e.smem
}

// SyncPoints maps each sync point the emitter left in a kernel's body (a marked
// comment) to what happens there, for the sync pass.
type SyncPoints = map[*ptx.Comment]decision.SyncEvent

// Kernel writes the PTX of the kernel d holds, as d's records decide it, with a
// sync point wherever shared memory is committed, written or read: the sync
// pass (lower/sync.go) replaces them with the waits and barriers they need.
func Kernel(d *decision.Set) (*ptx.Kernel, SyncPoints, error) {
	e := &emitter{d: d, points: SyncPoints{}, nregs: map[string]int{}, v: map[*ir.Value]*vals{},
		params: map[*ir.Value]ptx.Operand{}, ring: map[*ir.Value]ptx.Operand{}, runCache: map[string]*run{}, stagedDone: map[*ir.Value]bool{}, version: d.Target.MinVersion,
		held: map[*ir.Op][][][4]ptx.Operand{}}
	e.threadView = threadView{nthreads: 32 * d.Kernel.Warps, cache: []map[string]ptx.Operand{{}}, coordScopes: []map[[5]int]*coords{{}}}
	e.uses = ir.UseCounts(d.Kernel)
	fnc := &ptx.Func{Name: d.Kernel.Name, ReqNTid: e.nthreads}
	out := &ptx.Kernel{Name: d.Kernel.Name, Grid: d.Kernel.Grid, GridParam: d.Kernel.GridParam, Block: e.nthreads}
	for _, p := range d.Kernel.Params {
		name := "param_" + p.Value.Name
		kp := ptx.KParam{Name: p.Value.Name, Align: p.Div, Bytes: p.Bytes, PerRow: p.PerRow, PerPart: p.PerPart, Run: p.Run}
		for _, d := range p.Strides {
			kp.Strides = append(kp.Strides, ptx.StrideDim{Stride: d.Stride, Count: d.Count, CountParam: d.CountParam, CountDiv: d.CountDiv})
		}
		t := p.Value.Type
		pt := elemType(t.Elem).param
		kp.Kind = elemType(t.Elem).paramKind
		if t.Kind == ir.Ptr {
			pt, kp.Kind, kp.Elem = "u64", "ptr", t.Elem.String()
		}
		fnc.Params = append(fnc.Params, ptx.Param{Name: name, Type: pt})
		out.Params = append(out.Params, kp)
	}
	markWritten(d.Kernel, out)
	for _, p := range out.Params {
		e.written = append(e.written, p.Written)
	}
	e.prologue(fnc)
	if err := e.block(d.Kernel.Body); err != nil {
		return nil, nil, err
	}
	e.placeOn("")
	e.add(ptx.Ret())
	for _, rf := range regFiles {
		if n := e.nregs[rf.prefix]; n > 0 {
			fnc.Regs = append(fnc.Regs, ptx.RegDecl{Type: rf.typ, Prefix: rf.prefix, Count: n})
		}
	}
	if d.SmemBytes > 0 {
		fnc.Shared = []ptx.SharedDecl{{Name: "smem", Align: 128, Extern: true}}
	}
	fnc.Body = e.body
	fnc.MaxNReg = d.Budget.MaxNReg
	out.SharedBytes = d.SmemBytes
	out.Programmatic = d.Follows && d.Target.GridDependency
	out.Module = &ptx.Module{Version: versionString(e.version), Target: d.Target.Name, AddressSize: 64, Funcs: []*ptx.Func{fnc}}
	return out, e.points, nil
}

// markWritten flags pointer parameters that a store writes through.
func markWritten(k *ir.Kernel, out *ptx.Kernel) {
	ir.WalkOps(k.Body, func(o *ir.Op) {
		if o.Kind != ir.OpStore {
			return
		}
		for _, i := range ir.PointerParams(k, o.Args[0]) {
			out.Params[i].Written = true
		}
	})
}

func (e *emitter) reg(elem ir.Elem) ptx.Reg {
	p := regPrefix(elem)
	n := e.nregs[p]
	e.nregs[p] = n + 1
	return ptx.Reg(p + strconv.Itoa(n))
}

// add appends an instruction built by a ptx constructor (ptx/instrs_gen.go: one per
// opcode, or one per family taking the type suffix, ptx.Mov(bitsSuffix(elem), d, a)),
// raising the module's PTX version to what it needs on the target (ptx.Forms).
func (e *emitter) add(in *ptx.Instr) {
	e.needFor(in.Op)
	e.body = append(e.body, in)
}

// addIf is add guarded by the predicate guard (negated with neg); nil guards nothing.
func (e *emitter) addIf(guard ptx.Operand, neg bool, in *ptx.Instr) {
	if guard != nil {
		in.Guard, in.GuardNeg = string(guard.(ptx.Reg)), neg
	}
	e.add(in)
}

func (e *emitter) comment(format string, args ...any) {
	e.body = append(e.body, &ptx.Comment{Text: fmt.Sprintf(format, args...)})
}

func (e *emitter) label() string {
	e.labels++
	return fmt.Sprintf("$L%d", e.labels)
}

// needFor raises the module's PTX version to the one op needs on the target.
func (e *emitter) needFor(op string) {
	if v, ok := ptx.MinVersion(op, e.d.Target.Name); ok && v > e.version {
		e.version = v
	}
}

func (e *emitter) prologue(fnc *ptx.Func) {
	if e.d.Target.GridDependency {
		// Programmatic dependent launch: a kernel with a successor lets it launch
		// now (its CTAs then wait below, resident, instead of after the launch gap);
		// a kernel with a predecessor waits for it to finish and its writes to be
		// visible before anything else, so it may safely be launched early.
		if e.d.Precedes {
			e.add(ptx.GriddepcontrolLaunchDependents())
		}
		if e.d.Follows {
			e.add(ptx.GriddepcontrolWait())
		}
	}
	for i, p := range e.d.Kernel.Params {
		t := p.Value.Type
		name := ptx.Sym(fnc.Params[i].Name)
		if e.uses[p.Value] == 0 {
			continue // read by the launcher only (mla_decode's rows set the grid)
		}
		switch {
		case t.Kind == ir.Ptr:
			raw := e.reg(ir.I64)
			e.add(ptx.LdParamU64(raw, ptx.Addr{Base: name}))
			r := e.reg(ir.I64)
			e.add(ptx.CvtaToGlobalU64(r, raw))
			e.params[p.Value] = r
		default:
			r := e.reg(t.Elem)
			e.add(ptx.LdParam(fnc.Params[i].Type, r, ptx.Addr{Base: name}))
			e.params[p.Value] = r
		}
		e.v[p.Value] = &vals{scalar: e.params[p.Value]}
	}
	e.tid = e.reg(ir.I32)
	e.add(ptx.MovU32(e.tid, ptx.Reg("%tid.x")))
	e.lane = e.reg(ir.I32)
	e.add(ptx.AndB32(e.lane, e.tid, ptx.Imm(31)))
	e.warp = e.reg(ir.I32)
	e.add(ptx.ShrU32(e.warp, e.tid, ptx.Imm(5)))
	e.g = e.reg(ir.I32)
	e.add(ptx.ShrU32(e.g, e.lane, ptx.Imm(2)))
	e.t = e.reg(ir.I32)
	e.add(ptx.AndB32(e.t, e.lane, ptx.Imm(3)))
	if e.d.SmemBytes > 0 {
		e.smem = e.reg(ir.I32)
		e.add(ptx.MovU32(e.smem, ptx.Sym("smem")))
	}
}

func (e *emitter) block(b *ir.Block) error {
	for i := 0; i < len(b.Ops); {
		o := b.Ops[i]
		if e.skipsOp(o) {
			i++
			continue
		}
		if r, moves := e.regionFor(o); moves {
			e.placeOn(r)
		}
		if g := e.d.Schedule.DotGroups[o]; g != nil {
			e.flushStage()
			if err := e.dotGroup(g); err != nil {
				return err
			}
			i += len(g)
			continue
		}
		if !(e.stagesComputed(o) && !e.readsPending(o.Result())) && !e.emitsNothing(o) {
			e.flushStage()
		}
		if err := e.op(o); err != nil {
			return ir.ErrorAt(o, err)
		}
		i++
	}
	e.flushStage()
	return nil
}

// stagesComputed reports whether o's result is a recomputed tile staged in
// shared memory (stageComputed), whose stores deferStage holds back.
func (e *emitter) stagesComputed(o *ir.Op) bool {
	if len(o.Results) != 1 || o.Kind == ir.OpFor {
		return false
	}
	r := o.Result()
	_, staged := e.d.Staged[r]
	return staged && e.layout(r).Kind == decision.Expr && r.Type.Rank() == 2
}

func (e *emitter) layout(v *ir.Value) decision.Layout { return e.d.Placed(v) }

func (e *emitter) op(o *ir.Op) error {
	if err := e.opCompute(o); err != nil {
		return err
	}
	for _, r := range o.Results {
		if e.d.Pipeline.ByIndex[r] != nil {
			continue // issued ahead into its ring (issueIndices)
		}
		if _, ok := e.d.Staged[r]; ok {
			if err := e.stage(r); err != nil {
				return err
			}
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
	switch l.Kind {
	case decision.Scalar:
		args := make([]ptx.Operand, len(o.Args))
		for i, a := range o.Args {
			args[i] = e.scalar(a)
		}
		x, err := e.elem(o, args)
		if err != nil {
			return err
		}
		e.v[r] = &vals{scalar: x}
	case decision.Expr, decision.Shared:
		// Recomputed per use, or stored by the cp.asyncs issued here.
		if o.Kind == ir.OpLoad && l.Kind == decision.Shared {
			if p := e.d.PipeTile(r); p != nil && !p.Handoff {
				return nil // issued ahead into its ring (issueTiles)
			}
			return e.loadShared(o)
		}
	case decision.Acc:
		if o.Kind == ir.OpDot {
			return e.dot(o)
		}
		if o.Kind == ir.OpBroadcast {
			return nil // read through to the row or column vector
		}
		return e.accElementwise(o)
	case decision.Rows, decision.Cols:
		if o.Kind == ir.OpReduce {
			return e.reduce(o)
		}
		return e.vecElementwise(o)
	case decision.Threads:
		return e.threadElementwise(o)
	}
	return nil
}

func (e *emitter) scalar(v *ir.Value) ptx.Operand {
	if x, ok := e.v[v]; ok && x.scalar != nil {
		return x.scalar
	}
	panic(fmt.Sprintf("lower: scalar %s used before emission", v))
}

// versionString renders 78 as "7.8".
func versionString(v int) string { return fmt.Sprintf("%d.%d", v/10, v%10) }
