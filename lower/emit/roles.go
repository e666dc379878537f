package emit

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

// roleRegion is the role whose warps run the code being emitted: the ops of one
// role between a warp-uniform branch that the other warps take and its label.
// Inside it the thread and warp numbers are the role's own (tid - 32 x first,
// warp - first) and the thread count the role's, so every lowering that splits
// work over threads or warps splits it over the role's.
type roleRegion struct {
	name string
	end  string
	// outside is the thread view around the region, restored when it ends.
	outside threadView
	// concurrent marks a role's copy of a split loop: it runs alongside the other
	// roles' copies (the sync pass must know) and emits only its role's ops.
	concurrent bool
	// pins counts the loops being emitted in the region (inRegion): until they
	// end, the region stays open whatever role their ops are on.
	pins int
}

// regionPin is why inRegion holds a region open.
type regionPin int

const (
	pinLoop      regionPin = iota // a loop placed on the role: its whole body runs there
	pinSplitCopy                  // a role's copy of a split loop (concurrent)
)

// inRegion emits with role r's region open and held open: placeOn inside is a
// no-op, so a loop's body cannot leave its role's region half way.
func (e *emitter) inRegion(r string, pin regionPin, emit func() error) error {
	e.moveTo(r, pin == pinSplitCopy)
	reg := e.region
	reg.pins++
	defer func() { reg.pins-- }()
	return emit()
}

// regionFor is the role whose region op o is emitted in: scalar arithmetic
// outside every region (so every warp holds it; a constant is an immediate and
// stays where it is), recomputed values wherever
// they are used (they emit nothing here), everything else on its op's role.
func (e *emitter) regionFor(o *ir.Op) (string, bool) {
	if len(o.Results) == 1 && o.Kind != ir.OpFor {
		switch l := e.layout(o.Result()); {
		case l.Kind == decision.Scalar && o.Kind == ir.OpConst:
			return e.roleName(), false // an immediate: no instruction for a warp to hold
		case l.Kind == decision.Scalar:
			return "", true
		case e.emitsNothing(o):
			return e.roleName(), false
		}
	}
	return o.Role, true
}

// roleName is the open region's role ("" outside any).
func (e *emitter) roleName() string {
	if e.region == nil {
		return ""
	}
	return e.region.name
}

// placeOn makes role r's region the open one (closing another, opening r's;
// "" = every warp). Inside a loop placed on a role the region stays open.
func (e *emitter) placeOn(r string) { e.moveTo(r, false) }

// moveTo is placeOn, opening r's region as a split loop's concurrent copy when
// concurrent is set.
func (e *emitter) moveTo(r string, concurrent bool) {
	if reg := e.region; reg != nil && reg.pins > 0 || r == e.roleName() {
		return
	}
	if e.region != nil {
		e.leaveRole()
	}
	if r != "" {
		e.enterRole(r, concurrent)
	}
}

// enterRole opens role r's region: the other warps branch past it.
func (e *emitter) enterRole(r string, concurrent bool) {
	e.flushStage()
	role, _ := e.d.Kernel.Role(r)
	e.syncRole(decision.SyncRoleEnter, r, concurrent)
	end := e.label()
	rel := e.warp
	if role.First > 0 {
		w := e.reg(ir.I32)
		e.add(ptx.SubS32(w, e.warp, ptx.Imm(role.First)))
		rel = w
	}
	out := e.reg(ir.I1)
	// Unsigned: a warp below the role's first wraps to a large number.
	e.add(ptx.SetpGeU32(out, rel, ptx.Imm(role.Warps)))
	e.addIf(out, false, ptx.BraUni(ptx.Sym(end)))
	reg := &roleRegion{name: r, end: end, outside: e.threadView, concurrent: concurrent}
	tid := e.tid
	if role.First > 0 {
		t := e.reg(ir.I32)
		e.add(ptx.SubS32(t, e.tid, ptx.Imm(32*role.First)))
		tid = t
	}
	// Cached coordinates and recomputed elements depend on the thread numbers:
	// the region computes its own.
	e.threadView = threadView{tid: tid, warp: rel, nthreads: 32 * role.Warps,
		cache: []map[string]ptx.Operand{{}}, coordScopes: []map[[5]int]*coords{{}}}
	e.region = reg
}

// leaveRole closes the open region.
func (e *emitter) leaveRole() {
	e.flushStage()
	reg := e.region
	e.threadView = reg.outside
	e.region = nil
	e.body = append(e.body, &ptx.Label{Name: reg.end})
	e.syncRole(decision.SyncRoleExit, reg.name, reg.concurrent)
}

// splitLoop emits a loop split by roles as one loop per role, each in its role's
// region, running concurrently: a role's copy runs the body's ops of that role
// and its scalar arithmetic (every copy evaluates that for itself), carries the
// values that role computes, and takes and hands back the ring's slots. A role's
// registers are then live in its own copy only (what setmaxnreg needs), and no
// warp waits for another role except on a slot. After the copies every warp
// rejoins at a CTA barrier.
func (e *emitter) splitLoop(o *ir.Op) error {
	// Every warp is here for the last time before the roles part: settle what
	// the code before wrote, once, rather than in the roles' regions.
	e.sync(decision.SyncSettle, nil)
	ring := e.d.Roles.Handoffs[o]
	results := make([]*vals, len(o.Results))
	// Scalars of no role are carried in the same registers by every copy: each
	// thread runs one copy, so each ends with the value its copy computed, and
	// all copies compute the same.
	for i, in := range o.Args[2:] {
		if arg := o.Body.Args[i+1]; e.d.ValueRole(arg) == "" {
			c, err := e.materialize(in, e.layout(arg))
			if err != nil {
				return fmt.Errorf("loop-carried value %s: %v", arg, err)
			}
			results[i] = c
		}
	}
	for _, r := range rolesOf(o) {
		if err := e.inRegion(r, pinSplitCopy, func() error { return e.roleLoop(o, r, ring, results) }); err != nil {
			return err
		}
	}
	e.placeOn("")
	e.comment("the roles rejoin")
	e.flushAll()
	e.forgetThreadCoords()
	for i, r := range o.Results {
		if results[i] == nil {
			return fmt.Errorf("loop split by roles: no role carries %s", o.Body.Args[1+i])
		}
		e.v[r] = results[i]
	}
	return nil
}

// roleLoop is role r's copy of a split loop (splitLoop): its results are the
// values r carries (set in results).
func (e *emitter) roleLoop(o *ir.Op, r string, ring *decision.LoopPipeline, results []*vals) error {
	body := o.Body
	iv := e.reg(ir.I32)
	lo, hi := e.scalar(o.Args[0]), e.scalar(o.Args[1])
	e.add(ptx.MovU32(iv, lo))
	e.v[body.Args[0]] = &vals{scalar: iv}
	var mine []int // the carried values this copy computes: r's, and those of no role
	carried := make([]*vals, len(body.Yield))
	for i, in := range o.Args[2:] {
		arg := body.Args[i+1]
		switch e.d.ValueRole(arg) {
		case "":
			carried[i] = results[i]
			e.v[arg] = results[i]
			mine = append(mine, i)
			continue
		case r:
		default:
			continue
		}
		c, err := e.materialize(in, e.layout(arg))
		if err != nil {
			return fmt.Errorf("loop-carried value %s: %v", arg, err)
		}
		carried[i] = c
		e.v[arg] = c
		mine = append(mine, i)
	}
	e.sync(decision.SyncLoopEnter, nil)
	var slot ptx.Reg
	if ring != nil {
		e.comment("handoff ring: %s fills %d slots of %d bytes for %s", ring.Producer, ring.Stages, e.d.SlotBytes[ring], ring.Consumer)
		slot = e.reg(ir.I32)
		e.add(ptx.MovU32(slot, ptx.Imm(0)))
	}
	top, end := e.loopHead(iv, lo, hi)
	e.pushScope()
	var full, empty ptx.Reg
	if ring != nil {
		full, empty = e.takeSlot(ring, r, slot, iv, lo, o.Int)
	}
	if err := e.block(body); err != nil {
		return err
	}
	for _, i := range mine {
		if err := e.copyInto(carried[i], body.Yield[i], e.layout(body.Args[i+1])); err != nil {
			return err
		}
	}
	if e.writesShared(body, func(o *ir.Op) bool { return o.Role == r }) {
		e.comment("%s is done with this iteration's shared tiles", r)
		e.flushAll()
	}
	if ring != nil {
		e.giveSlot(ring, r, full, empty, iv, hi, o.Int)
	}
	e.popScope()
	if ring != nil {
		e.nextSlot(ring, slot)
	}
	e.loopTail(iv, hi, o.Int, top, end)
	for _, i := range mine {
		results[i] = carried[i]
	}
	return nil
}

// takeSlot starts role r's iteration on the ring: it points the ring's tiles at
// the slot and waits until the slot may be used: the producer until the consumer
// released what it filled stages iterations ago (from the stages-th iteration
// on), the consumer until the producer filled it. It returns the slot's full and
// empty barrier ids.
func (e *emitter) takeSlot(p *decision.LoopPipeline, r string, slot ptx.Reg, iv, lo ptx.Operand, step int64) (full, empty ptx.Reg) {
	cur := e.reg(ir.I32)
	e.add(ptx.MadLoS32(cur, slot, ptx.Imm(e.d.SlotBytes[p]), e.smem))
	for _, t := range p.Tiles {
		e.ring[t] = cur
	}
	full, empty = e.reg(ir.I32), e.reg(ir.I32)
	base := e.d.HandoffBarrierBase()
	e.add(ptx.AddS32(full, slot, ptx.Imm(base)))
	e.add(ptx.AddS32(empty, slot, ptx.Imm(base+p.Stages)))
	n := e.d.HandoffThreads(p)
	switch r {
	case p.Producer:
		e.comment("handoff: wait until %s released this slot (iterations from the %dth)", p.Consumer, p.Stages)
		refill := e.reg(ir.I1)
		first := e.reg(ir.I32)
		e.add(ptx.AddS32(first, e.inReg(lo, ir.I32), ptx.Imm(int64(p.Stages)*step)))
		e.add(ptx.SetpGeS32(refill, iv, first))
		e.addIf(refill, false, ptx.BarSync(empty, n))
	case p.Consumer:
		e.comment("handoff: wait until %s filled this slot", p.Producer)
		e.add(ptx.BarSync(full, n))
	default:
		return
	}
	e.syncRole(decision.SyncAcquire, r, false)
	return
}

// giveSlot ends role r's iteration on the ring: the producer publishes the slot
// it filled, the consumer gives it back unless no later iteration refills it (so
// every arrival has its sync).
func (e *emitter) giveSlot(p *decision.LoopPipeline, r string, full, empty ptx.Reg, iv, hi ptx.Operand, step int64) {
	n := e.d.HandoffThreads(p)
	switch r {
	case p.Producer:
		e.syncRole(decision.SyncRelease, r, false)
		e.add(ptx.BarArrive(full, n))
	case p.Consumer:
		e.syncRole(decision.SyncRelease, r, false)
		more := e.reg(ir.I1)
		next := e.reg(ir.I32)
		e.add(ptx.AddS32(next, iv, ptx.Imm(int64(p.Stages)*step)))
		e.add(ptx.SetpLtS32(more, next, e.inReg(hi, ir.I32)))
		e.addIf(more, false, ptx.BarArrive(empty, n))
	}
}

// rolesOf lists the roles a split loop's body uses, in order of first appearance.
func rolesOf(o *ir.Op) []string {
	var out []string
	seen := map[string]bool{}
	for _, bo := range o.Body.Ops {
		if r := bo.Role; r != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// skipsOp reports whether the role copy being emitted (the open region, when
// concurrent) leaves o to another role's copy (scalar arithmetic every copy
// evaluates for itself).
func (e *emitter) skipsOp(o *ir.Op) bool {
	reg := e.region
	if reg == nil || !reg.concurrent || o.Role == "" || o.Role == reg.name {
		return false
	}
	return !(len(o.Results) == 1 && o.Kind != ir.OpFor && e.layout(o.Result()).Kind == decision.Scalar)
}
