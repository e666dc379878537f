package lower

import (
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
)

// roleRegion is the role whose warps run the code being emitted: the ops of one
// role between a warp-uniform branch that the other warps take and its label.
// Inside it the thread and warp numbers are the role's own (tid - 32 x first,
// warp - first) and the thread count the role's, so every lowering that splits
// work over threads or warps splits it over the role's.
type roleRegion struct {
	name        string
	end         string
	tid, warp   ptx.Operand // the CTA's, restored when the region ends
	nthreads    int
	cache       []map[string]ptx.Operand
	coordScopes []map[[5]int]*coords
}

// splitIteration is the state of the split loop iteration being emitted: its
// ring and the barriers that hand its slot over.
type splitIteration struct {
	ring        *loopPipeline // nil: the loop hands nothing over
	iv, lo, hi  ptx.Operand
	step        int64
	full, empty ptx.Reg // this slot's barrier ids
	acquired    map[string]bool
}

// regionFor is the role whose region op o is emitted in: scalar arithmetic
// outside every region (so every warp holds it), recomputed values wherever
// they are used (they emit nothing here), everything else on its op's role.
func (e *emitter) regionFor(o *ir.Op) (string, bool) {
	if len(o.Results) == 1 && o.Kind != ir.OpFor {
		switch l := e.layout(o.Result()); {
		case l.kind == lScalar:
			return "", true
		case e.emitsNothing(o):
			return e.roleName(), false
		}
	}
	return o.Role, true
}

func (e *emitter) roleName() string {
	if e.region == nil {
		return ""
	}
	return e.region.name
}

// placeOn makes role r's region the open one (closing another, opening r's;
// "" = every warp). Inside a loop placed on a role the region stays open.
func (e *emitter) placeOn(r string) {
	if e.roleLocked > 0 || r == e.roleName() {
		return
	}
	if e.region != nil {
		e.leaveRole()
	}
	if r != "" {
		e.enterRole(r)
	}
}

// enterRole opens role r's region: the other warps branch past it.
func (e *emitter) enterRole(r string) {
	e.flushStage()
	role, _ := e.f.k.Role(r)
	e.syncRole(syncRoleEnter, r)
	end := e.label()
	rel := e.warp
	if role.First > 0 {
		w := e.reg(ir.I32)
		e.ins("sub.s32", w, e.warp, ptx.Imm(role.First))
		rel = w
	}
	out := e.reg(ir.I1)
	// Unsigned: a warp below the role's first wraps to a large number.
	e.ins("setp.ge.u32", out, rel, ptx.Imm(role.Warps))
	e.insIf(out, false, "bra.uni", ptx.Sym(end))
	reg := &roleRegion{name: r, end: end, tid: e.tid, warp: e.warp, nthreads: e.nthreads, cache: e.cache, coordScopes: e.coordScopes}
	if role.First > 0 {
		t := e.reg(ir.I32)
		e.ins("sub.s32", t, e.tid, ptx.Imm(32*role.First))
		e.tid = t
	}
	e.warp = rel
	e.nthreads = 32 * role.Warps
	// Cached coordinates and recomputed elements depend on the thread numbers:
	// the region computes its own.
	e.cache = []map[string]ptx.Operand{{}}
	e.coordScopes = []map[[5]int]*coords{{}}
	e.region = reg
	if it := e.split; it != nil && it.ring != nil && !it.acquired[r] {
		it.acquired[r] = true
		e.acquireSlot(r)
	}
}

// leaveRole closes the open region.
func (e *emitter) leaveRole() {
	e.flushStage()
	reg := e.region
	e.tid, e.warp, e.nthreads, e.cache, e.coordScopes = reg.tid, reg.warp, reg.nthreads, reg.cache, reg.coordScopes
	e.region = nil
	e.body = append(e.body, &ptx.Label{Name: reg.end})
	e.syncRole(syncRoleExit, reg.name)
}

// handoffThreads is the thread count of a ring's barriers: both roles'.
func (e *emitter) handoffThreads(p *loopPipeline) ptx.Imm {
	return ptx.Imm(32 * (e.f.roleWarps(p.producer) + e.f.roleWarps(p.consumer)))
}

// acquireSlot waits, at role r's first region of a split iteration, until the
// slot may be used: the producer until the consumer released what it filled
// stages iterations ago (from the stages-th iteration on), the consumer until the
// producer filled it.
func (e *emitter) acquireSlot(r string) {
	it := e.split
	p := it.ring
	n := e.handoffThreads(p)
	switch r {
	case p.producer:
		e.comment("handoff: wait until %s released this slot (iterations from the %dth)", p.consumer, p.stages)
		refill := e.reg(ir.I1)
		first := e.reg(ir.I32)
		e.ins("add.s32", first, e.inReg(it.lo, ir.I32), ptx.Imm(int64(p.stages)*it.step))
		e.ins("setp.ge.s32", refill, it.iv, first)
		e.insIf(refill, false, "bar.sync", it.empty, n)
	case p.consumer:
		e.comment("handoff: wait until %s filled this slot", p.producer)
		e.ins("bar.sync", it.full, n)
	default:
		return
	}
	e.syncRole(syncAcquire, r)
}

// releaseSlot ends role r's part of a split iteration: the producer publishes
// the slot it filled, the consumer gives it back unless no later iteration
// refills it (so every arrival has its sync).
func (e *emitter) releaseSlot(r string) {
	it := e.split
	p := it.ring
	n := e.handoffThreads(p)
	switch r {
	case p.producer:
		e.syncRole(syncRelease, r)
		e.ins("bar.arrive", it.full, n)
	case p.consumer:
		e.syncRole(syncRelease, r)
		more := e.reg(ir.I1)
		next := e.reg(ir.I32)
		e.ins("add.s32", next, it.iv, ptx.Imm(int64(p.stages)*it.step))
		e.ins("setp.lt.s32", more, next, e.inReg(it.hi, ir.I32))
		e.insIf(more, false, "bar.arrive", it.empty, n)
	}
}

// rolesOf lists the roles a split loop's body and carried values use, in order
// of first appearance.
func rolesOf(f *fn, o *ir.Op) []string {
	var out []string
	seen := map[string]bool{}
	add := func(r string) {
		if r != "" && !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	for _, bo := range o.Body.Ops {
		add(bo.Role)
	}
	for _, a := range o.Body.Args[1:] {
		add(f.valueRole(a))
	}
	return out
}

// roleWritesShared reports whether role r's ops in a loop body write shared
// memory (so its part of the iteration ends with the role's barrier).
func (e *emitter) roleWritesShared(b *ir.Block, r string) bool {
	found := false
	walkOps(b, func(o *ir.Op) {
		if o.Role != r {
			return
		}
		for _, res := range o.Results {
			if _, ok := e.f.sharedHome(res); ok && o.Kind != ir.OpTrans {
				found = true
			}
			if _, ok := e.f.scratch[res]; ok {
				found = true
			}
		}
	})
	return found
}

// splitSlot points the ring's tiles at this iteration's slot and computes the
// slot's barrier ids, for every warp (before any region).
func (e *emitter) splitSlot(ring *loopPipeline, slot ptx.Reg) {
	cur := e.reg(ir.I32)
	e.ins("mad.lo.s32", cur, slot, ptx.Imm(ring.slotBytes), e.smem)
	for _, t := range ring.tiles {
		e.ring[t] = cur
	}
	it := e.split
	it.full, it.empty = e.reg(ir.I32), e.reg(ir.I32)
	base := e.f.handoffBarrierBase()
	e.ins("add.s32", it.full, slot, ptx.Imm(base))
	e.ins("add.s32", it.empty, slot, ptx.Imm(base+ring.stages))
}

// endSplitIteration ends each role's part of a split iteration in its region:
// its carried values, its barrier if it wrote shared memory (its tiles are
// rewritten next iteration), its release of the ring slot; then the carried
// values of no role (scalars) on every warp.
func (e *emitter) endSplitIteration(o *ir.Op, carried []*vals) error {
	body := o.Body
	for _, r := range rolesOf(e.f, o) {
		e.placeOn(r)
		for i, y := range body.Yield {
			if a := body.Args[i+1]; e.f.valueRole(a) == r {
				if err := e.copyInto(carried[i], y, e.layout(a)); err != nil {
					return err
				}
			}
		}
		if e.roleWritesShared(body, r) {
			e.flushAll()
		}
		if e.split.ring != nil {
			e.releaseSlot(r)
		}
	}
	e.placeOn("")
	for i, y := range body.Yield {
		if a := body.Args[i+1]; e.f.valueRole(a) == "" {
			if err := e.copyInto(carried[i], y, e.layout(a)); err != nil {
				return err
			}
		}
	}
	return nil
}
