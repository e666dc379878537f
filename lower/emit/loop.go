package emit

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

// loop emits a counted loop. Carried values live in registers allocated here; the
// body's yields are copied into them before the back edge.
func (e *emitter) loop(o *ir.Op) error {
	if ir.SplitByRoles(o) {
		return e.splitLoop(o)
	}
	if o.Role != "" {
		// The loop runs on its role: so does its whole body, in the region open.
		return e.inRegion(o.Role, pinLoop, func() error { return e.countedLoop(o) })
	}
	return e.countedLoop(o)
}

// countedLoop emits a loop not split by roles (one on a role runs in its held
// region, inRegion).
func (e *emitter) countedLoop(o *ir.Op) error {
	body := o.Body
	// A loop of no role runs its head and back edge on every warp: a role's region
	// opens and closes inside its body (placeOn is a no-op inside a pinned region).
	e.placeOn("")
	iv := e.reg(ir.I32)
	lo, hi := e.scalar(o.Args[0]), e.scalar(o.Args[1])
	e.add(ptx.MovU32(iv, lo))
	e.v[body.Args[0]] = &vals{scalar: iv}
	carried := make([]*vals, len(body.Yield))
	for i, in := range o.Args[2:] {
		arg := body.Args[i+1]
		e.placeOn(e.d.ValueRole(arg))
		c, err := e.materialize(in, e.layout(arg))
		if err != nil {
			return fmt.Errorf("loop-carried value %s: %v", arg, err)
		}
		carried[i] = c
		e.v[arg] = c
	}
	e.placeOn("")
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
			if _, ok := e.d.SharedHome(x[0]); ok {
				e.ready(x[0])
			}
		}
	}
	// Dots of the body that hold their loop-invariant A in registers load it here,
	// once.
	for _, d := range e.d.HeldA[o] {
		if err := e.holdA(d); err != nil {
			return err
		}
	}
	// The body ends with every shared access complete (flushAll), so after the loop
	// the hazards are those at entry: a loop that runs no iteration leaves them as
	// they were.
	e.sync(decision.SyncLoopEnter, nil)
	pl := e.d.Pipeline.Pipelines[o]
	var slots ringSlots
	if pl != nil {
		var err error
		if slots, err = e.pipelinePrologue(pl, lo, hi); err != nil {
			return err
		}
	}
	top, end := e.loopHead(iv, lo, hi)
	e.pushScope()
	if pl != nil {
		if err := e.pipelineIteration(pl, iv, slots, hi); err != nil {
			return err
		}
	}
	if err := e.block(body); err != nil {
		return err
	}
	for i, y := range body.Yield {
		e.placeOn(e.d.ValueRole(body.Args[i+1]))
		if err := e.copyInto(carried[i], y, e.layout(body.Args[i+1])); err != nil {
			return err
		}
	}
	// A body that ends on a role closes its region before the back edge, which
	// every warp takes (left open, the other warps left the loop at the region's
	// branch, and the code after it lost its coordinate scopes).
	e.placeOn("")
	switch {
	case pl != nil:
		// The next iteration's barrier orders this one's shared accesses; only
		// the body's own cp.async groups (loads not pipelined) are waited for.
		e.sync(decision.SyncPipeDrain, nil)
	case e.writesShared(body, nil):
		e.comment("all warps are done with this iteration's shared tiles")
		e.flushAll()
	}
	e.popScope()
	if pl != nil {
		if len(pl.Tiles) > 0 {
			e.nextSlot(pl, slots.tile)
		}
		if pl.Ahead > 0 {
			e.stepSlot(slots.index, pl.IndexSlots())
			for _, x := range pl.Indices {
				delete(e.ring, x)
			}
		}
	}
	e.loopTail(iv, hi, o.Int, top, end)
	e.forgetThreadCoords()
	for i, r := range o.Results {
		e.v[r] = carried[i]
	}
	return nil
}

// loopHead starts a counted loop at iv = lo: it skips to end when the loop runs
// no iteration (unless the bounds are constants that say it runs one) and places
// the top label.
func (e *emitter) loopHead(iv ptx.Reg, lo, hi ptx.Operand) (top, end string) {
	top, end = e.label(), e.label()
	li, lok := lo.(ptx.Imm)
	hiImm, hok := hi.(ptx.Imm)
	if !(lok && hok && li < hiImm) {
		p := e.reg(ir.I1)
		e.add(ptx.SetpGeS32(p, iv, hi))
		e.addIf(p, false, ptx.BraUni(ptx.Sym(end)))
	}
	e.body = append(e.body, &ptx.Label{Name: top})
	return top, end
}

// loopTail steps iv, branches back to top while iv < hi, and places end.
func (e *emitter) loopTail(iv ptx.Reg, hi ptx.Operand, step int64, top, end string) {
	e.add(ptx.AddS32(iv, iv, ptx.Imm(step)))
	p := e.reg(ir.I1)
	e.add(ptx.SetpLtS32(p, iv, e.inReg(hi, ir.I32)))
	e.addIf(p, false, ptx.BraUni(ptx.Sym(top)))
	e.body = append(e.body, &ptx.Label{Name: end})
	e.sync(decision.SyncLoopExit, nil)
}

// nextSlot moves a ring's slot register on (mod its stages) and forgets this
// iteration's slot bases.
func (e *emitter) nextSlot(r *decision.LoopPipeline, slot ptx.Reg) {
	e.stepSlot(slot, r.Stages)
	for _, t := range r.Tiles {
		delete(e.ring, t)
	}
}

// stepSlot moves a slot register on, mod n.
func (e *emitter) stepSlot(slot ptx.Reg, n int) {
	p := e.reg(ir.I1)
	e.add(ptx.AddS32(slot, slot, ptx.Imm(1)))
	e.add(ptx.SetpEqS32(p, slot, ptx.Imm(n)))
	e.add(ptx.SelpB32(slot, ptx.Imm(0), slot, p))
}

// slotPlus is slot + d mod n, for 0 <= d < n.
func (e *emitter) slotPlus(slot ptx.Operand, d, n int) ptx.Operand {
	if d == 0 {
		return slot
	}
	w, wrapped, p := e.reg(ir.I32), e.reg(ir.I32), e.reg(ir.I1)
	e.add(ptx.AddS32(w, slot, ptx.Imm(d)))
	e.add(ptx.SubS32(wrapped, w, ptx.Imm(n)))
	e.add(ptx.SetpGeS32(p, w, ptx.Imm(n)))
	e.add(ptx.SelpB32(w, wrapped, w, p))
	return w
}

// writesShared reports whether a loop body writes shared memory (loads, staged
// tiles, reduction scratch), so the next iteration needs a barrier first; only
// the ops keep accepts (nil: all) count.
func (e *emitter) writesShared(b *ir.Block, keep func(*ir.Op) bool) bool {
	found := false
	ir.WalkOps(b, func(o *ir.Op) {
		if keep != nil && !keep(o) {
			return
		}
		for _, r := range o.Results {
			if _, ok := e.d.SharedHome(r); ok && o.Kind != ir.OpTrans {
				found = true
			}
			if _, ok := e.d.Scratch[r]; ok {
				found = true
			}
		}
	})
	return found
}

// materialize gives v fresh registers in layout l (for loop-carried values).
func (e *emitter) materialize(v *ir.Value, l decision.Layout) (*vals, error) {
	out := &vals{}
	elem := v.Type.Elem
	movType := bitsSuffix(elem)
	switch l.Kind {
	case decision.Scalar:
		r := e.reg(elem)
		src := e.scalar(v)
		if elem == ir.I1 {
			e.add(ptx.AndPred(r, e.inReg(src, ir.I1), e.inReg(src, ir.I1)))
		} else {
			e.add(ptx.Mov(movType, r, src))
		}
		out.scalar = r
		return out, nil
	case decision.Acc:
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
					e.movElem(r, x, elem)
					out.acc[mi][ni][c] = r
				}
			}
		}
		return out, nil
	case decision.Rows, decision.Cols:
		shape := accShapeOf(v, l)
		n := e.rowsOf(shape[0], l).n
		if l.Kind == decision.Cols {
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
				e.movElem(r, x, elem)
				out.vec[i][h] = r
			}
		}
		return out, nil
	case decision.Threads:
		n := v.Type.Shape[0]
		out.elems = make([]ptx.Operand, e.threadElems(n))
		for k := range out.elems {
			x, err := e.threadElem(v, k, n)
			if err != nil {
				return nil, err
			}
			r := e.reg(elem)
			e.movElem(r, x, elem)
			out.elems[k] = r
		}
		return out, nil
	}
	return nil, fmt.Errorf("cannot carry a value in %v", l)
}

// movElem copies x into the register dst (predicates have no mov: and with itself).
func (e *emitter) movElem(dst, x ptx.Operand, elem ir.Elem) {
	if elem == ir.I1 {
		p := e.inReg(x, ir.I1)
		e.add(ptx.AndPred(dst, p, p))
		return
	}
	e.add(ptx.Mov(bitsSuffix(elem), dst, x))
}

// threadElems is the number of elements of a rank-1 Threads tile of n elements
// each thread holds.
func (e *emitter) threadElems(n int) int { return (n + e.nthreads - 1) / e.nthreads }

// threadElem returns this thread's k-th element (element tid + k x threads,
// clamped to the last) of v, used by an op on a rank-1 Threads tile of n elements.
func (e *emitter) threadElem(v *ir.Value, k, n int) (ptx.Operand, error) {
	if x, ok := e.v[v]; ok && x.elems != nil {
		return x.elems[k], nil
	}
	if v.Type.Kind != ir.Tile {
		return e.scalar(v), nil
	}
	return e.at(v, []ptx.Operand{e.runCoordsOf(k, n, 1).row})
}

// threadElementwise computes an elementwise op whose result is held per thread.
func (e *emitter) threadElementwise(o *ir.Op) error {
	r := o.Result()
	n := r.Type.Shape[0]
	out := &vals{elems: make([]ptx.Operand, e.threadElems(n))}
	for k := range out.elems {
		args := make([]ptx.Operand, len(o.Args))
		for i, a := range o.Args {
			var err error
			if args[i], err = e.threadElem(a, k, n); err != nil {
				return err
			}
		}
		x, err := e.elem(o, args)
		if err != nil {
			return err
		}
		out.elems[k] = e.inReg(x, r.Type.Elem)
	}
	e.v[r] = out
	return nil
}

// copyInto moves y's elements into the carried registers dst.
func (e *emitter) copyInto(dst *vals, y *ir.Value, l decision.Layout) error {
	movType := bitsSuffix(y.Type.Elem)
	switch l.Kind {
	case decision.Scalar:
		src := e.scalar(y)
		if src == dst.scalar {
			return nil
		}
		if y.Type.Elem == ir.I1 {
			s := e.inReg(src, ir.I1)
			e.add(ptx.AndPred(dst.scalar, s, s))
		} else {
			e.add(ptx.Mov(movType, dst.scalar, src))
		}
	case decision.Acc:
		for mi := range dst.acc {
			for ni := range dst.acc[mi] {
				for c := 0; c < 4; c++ {
					x, err := e.accElem(y, l, mi, ni, c)
					if err != nil {
						return err
					}
					if x != dst.acc[mi][ni][c] {
						e.movElem(dst.acc[mi][ni][c], x, y.Type.Elem)
					}
				}
			}
		}
	case decision.Threads:
		for k := range dst.elems {
			x, err := e.threadElem(y, k, y.Type.Shape[0])
			if err != nil {
				return err
			}
			if x != dst.elems[k] {
				e.movElem(dst.elems[k], x, y.Type.Elem)
			}
		}
	case decision.Rows, decision.Cols:
		for i := range dst.vec {
			for h := 0; h < 2; h++ {
				x, err := e.vecElem(y, l, i, h)
				if err != nil {
					return err
				}
				if x != dst.vec[i][h] {
					e.movElem(dst.vec[i][h], x, y.Type.Elem)
				}
			}
		}
	}
	return nil
}

// ringSlots are the slot registers of a pipelined loop: the slot of its tiles'
// ring this iteration reads (mod Stages) and, with index tiles, the slot of their
// rings this iteration's body reads (mod IndexSlots).
type ringSlots struct{ tile, index ptx.Reg }

// pipelinePrologue issues what precedes iteration 0: groups 0..stages-2+ahead, group
// g holding index tile g and tile g-ahead (decision.LoopPipeline.Ahead; without
// index tiles, tile g). Before each tile it waits for the group that brought the
// tile's indices and makes them visible.
func (e *emitter) pipelinePrologue(pl *decision.LoopPipeline, lo, hi ptx.Operand) (ringSlots, error) {
	if len(pl.Tiles) > 0 {
		e.comment("pipeline: %d stages, ring of %d x %d bytes", pl.Stages, pl.Stages, e.d.SlotBytes[pl])
	} else {
		e.comment("one stage: its loads' index tiles issued ahead")
	}
	for _, v := range pl.Reads {
		e.ready(v)
	}
	for _, t := range pl.Tiles {
		e.beforeWrite(t)
	}
	for _, x := range pl.Indices {
		e.comment("index tile %s: %d iterations ahead of its tiles, ring of %d x %d bytes", x, pl.Ahead, pl.IndexSlots(), e.d.IndexSlotBytes[x])
		e.beforeWrite(x)
		e.stagedDone[x] = true // every read is of its ring
	}
	iter := func(k int) ptx.Operand {
		ivs := e.reg(ir.I32)
		e.add(ptx.AddS32(ivs, e.inReg(lo, ir.I32), ptx.Imm(int64(k)*pl.Loop.Int)))
		return ivs
	}
	for g := 0; g < pl.Stages-1+pl.Ahead; g++ {
		if t := g - pl.Ahead; t >= 0 {
			if pl.Ahead > 0 {
				e.pipeTop(pl.Ahead - 1) // tile t's indices landed, visible to every thread
			}
			ivs := iter(t)
			base := e.smem
			if t > 0 {
				r := e.reg(ir.I32)
				e.add(ptx.AddS32(r, e.smem, ptx.Imm(t*e.d.SlotBytes[pl])))
				base = r
			}
			e.pointIndices(pl, ptx.Imm(t))
			if err := e.issueTiles(pl, ivs, hi, base); err != nil {
				return ringSlots{}, err
			}
		}
		if pl.Ahead > 0 {
			if err := e.issueIndices(pl, iter(g), hi, ptx.Imm(g)); err != nil {
				return ringSlots{}, err
			}
			e.add(ptx.CpAsyncCommitGroup())
		}
	}
	var slots ringSlots
	if len(pl.Tiles) > 0 {
		slots.tile = e.reg(ir.I32)
		e.add(ptx.MovU32(slots.tile, ptx.Imm(0)))
	}
	if pl.Ahead > 0 {
		slots.index = e.reg(ir.I32)
		e.add(ptx.MovU32(slots.index, ptx.Imm(0)))
	}
	return slots, nil
}

// pipelineIteration starts an iteration of a pipelined loop: it waits for the
// stage it reads (the sync pass writes cp.async.wait_group InFlight and the
// barrier), points the ring's tiles (and index tiles) at that slot, and issues
// iteration iv + (stages-1) x step into the slot the previous iteration read, with
// the index tiles of iteration iv + (stages-1+ahead) x step, as one group.
func (e *emitter) pipelineIteration(pl *decision.LoopPipeline, iv ptx.Operand, slots ringSlots, hi ptx.Operand) error {
	e.pipeTop(pl.InFlight())
	if len(pl.Tiles) == 0 {
		// One stage: this iteration's own loads read the indices issued for it.
		return e.issueAheadIndices(pl, iv, slots, hi)
	}
	cur := e.reg(ir.I32)
	e.add(ptx.MadLoS32(cur, slots.tile, ptx.Imm(e.d.SlotBytes[pl]), e.smem))
	for _, t := range pl.Tiles {
		e.ring[t] = cur
	}
	w := e.slotPlus(slots.tile, pl.Stages-1, pl.Stages)
	next := e.reg(ir.I32)
	e.add(ptx.MadLoS32(next, w, ptx.Imm(e.d.SlotBytes[pl]), e.smem))
	ivNext := e.reg(ir.I32)
	e.add(ptx.AddS32(ivNext, iv, ptx.Imm(int64(pl.Stages-1)*pl.Loop.Int)))
	if pl.Ahead == 0 {
		return e.issueTiles(pl, ivNext, hi, next)
	}
	e.pointIndices(pl, e.slotPlus(slots.index, pl.Stages-1, pl.IndexSlots()))
	if err := e.issueTiles(pl, ivNext, hi, next); err != nil {
		return err
	}
	return e.issueAheadIndices(pl, iv, slots, hi)
}

// issueAheadIndices issues the index tiles of iteration iv + (stages-1+ahead) x step
// and commits the iteration's group, then points the index tiles at the slot this
// iteration's body reads.
func (e *emitter) issueAheadIndices(pl *decision.LoopPipeline, iv ptx.Operand, slots ringSlots, hi ptx.Operand) error {
	n := pl.IndexSlots()
	ivIdx := e.reg(ir.I32)
	e.add(ptx.AddS32(ivIdx, iv, ptx.Imm(int64(pl.Stages-1+pl.Ahead)*pl.Loop.Int)))
	// Index tile iv+stages-1+ahead takes the slot of iteration iv-1's, which the
	// barrier above ordered after that body's reads.
	if err := e.issueIndices(pl, ivIdx, hi, e.slotPlus(slots.index, n-1, n)); err != nil {
		return err
	}
	e.add(ptx.CpAsyncCommitGroup())
	e.pointIndices(pl, slots.index) // the body reads its own iteration's indices
	return nil
}

// pointIndices points the index tiles at their rings' slot slot.
func (e *emitter) pointIndices(pl *decision.LoopPipeline, slot ptx.Operand) {
	for _, x := range pl.Indices {
		b := e.reg(ir.I32)
		e.add(ptx.MadLoS32(b, e.inReg(slot, ir.I32), ptx.Imm(e.d.IndexSlotBytes[x]), e.smem))
		e.ring[x] = b
	}
}

// issueTiles issues the pipelined loads of the iteration whose induction variable
// is ivx into the slot at base, when that iteration exists. The loads' scalar
// operands are evaluated again with ivx; their recomputed operands follow, in a
// scope of their own. Without index tiles it commits the stage's cp.async group
// either way (empty past the end), so every iteration has the same number of
// groups in flight; with them the caller commits.
func (e *emitter) issueTiles(pl *decision.LoopPipeline, ivx, hi, base ptx.Operand) error {
	err := e.guardedStage(pl, ivx, hi, pl.Deps, func() error {
		return e.openStage(base, func(s *stageScope) error {
			for _, t := range pl.Tiles {
				if err := e.loadShared(t.Def); err != nil {
					return ir.ErrorAt(t.Def, err)
				}
			}
			for _, cp := range s.copies {
				cp()
			}
			return nil
		})
	})
	if err == nil && pl.Ahead == 0 {
		e.add(ptx.CpAsyncCommitGroup())
	}
	return err
}

// issueIndices issues the index tiles of the iteration whose induction variable is
// ivx into their rings' slot slot, when that iteration exists: one 4-byte cp.async
// per element, zero-filled where the load's mask is off.
func (e *emitter) issueIndices(pl *decision.LoopPipeline, ivx, hi, slot ptx.Operand) error {
	return e.guardedStage(pl, ivx, hi, pl.IndexDeps, func() error {
		for _, x := range pl.Indices {
			if err := e.copyIndexTile(x, e.inReg(slot, ir.I32)); err != nil {
				return ir.ErrorAt(x.Def, err)
			}
		}
		return nil
	})
}

// guardedStage emits issue for the iteration whose induction variable is ivx,
// skipped past the loop's end, with deps evaluated again for it in a scope of
// their own.
func (e *emitter) guardedStage(pl *decision.LoopPipeline, ivx, hi ptx.Operand, deps []*ir.Op, issue func() error) error {
	ivArg := pl.Loop.Body.Args[0]
	skip := e.label()
	p := e.reg(ir.I1)
	e.add(ptx.SetpGeS32(p, ivx, e.inReg(hi, ir.I32)))
	e.addIf(p, false, ptx.BraUni(ptx.Sym(skip)))
	saved := e.v[ivArg]
	e.v[ivArg] = &vals{scalar: ivx}
	e.pushScope()
	err := func() error {
		for _, d := range deps {
			if err := e.opCompute(d); err != nil {
				return ir.ErrorAt(d, err)
			}
		}
		return issue()
	}()
	e.popScope()
	for _, d := range deps {
		for _, r := range d.Results {
			delete(e.v, r)
		}
	}
	if saved != nil {
		e.v[ivArg] = saved
	} else {
		delete(e.v, ivArg)
	}
	if err != nil {
		return err
	}
	e.body = append(e.body, &ptx.Label{Name: skip})
	return nil
}

// copyIndexTile copies the rank-1 index tile x (a load of 4-byte elements) into
// slot slot of its ring: element i by thread i (and i + the CTA size, ...).
func (e *emitter) copyIndexTile(x *ir.Value, slot ptx.Operand) error {
	m := ir.MemOperands(x.Def)
	h, _ := e.d.SharedHome(x)
	n := x.Type.Shape[0]
	base := e.scalar(m.Ptr)
	e.comment("index tile %s: %d x %s -> its ring's slot, 4-byte cp.async", x, n, x.Type.Elem)
	return e.forRuns(n, 1, func(i, _, live ptx.Operand) error {
		off, err := e.at(m.Offs, []ptx.Operand{i})
		if err != nil {
			return err
		}
		src := e.elemAddr(base, e.toI64(off, m.Offs.Type.Elem), 4)
		var size ptx.Operand = ptx.Imm(4)
		if m.Mask != nil {
			ok, err := e.at(m.Mask, []ptx.Operand{i})
			if err != nil {
				return err
			}
			s, safe := e.reg(ir.I32), e.reg(ir.I64)
			e.add(ptx.SelpB32(s, ptx.Imm(4), ptx.Imm(0), e.inReg(ok, ir.I1)))
			e.add(ptx.SelpB64(safe, src, base, e.inReg(ok, ir.I1)))
			size, src = s, safe
		}
		b := e.reg(ir.I32)
		e.add(ptx.MadLoS32(b, slot, ptx.Imm(e.d.IndexSlotBytes[x]), e.smem))
		a := e.reg(ir.I32)
		e.add(ptx.MadLoS32(a, i, ptx.Imm(h.Pitch), b))
		e.addIf(live, false, ptx.CpAsyncCaSharedGlobal(ptx.Addr{Base: a, Off: int64(h.Offset)}, ptx.Addr{Base: src}, ptx.Imm(4), size))
		return nil
	})
}

// stageScope is a pipeline stage being issued (issueTiles). Its loads ask it
// (inStage, asyncCopy) instead of being told by mode fields: they write the
// slot it fills, whose bytes the stage checked before its first write, leave the
// commit to it (one group per stage), and hand it their cp.asyncs to issue once
// every copy's address is formed: the index reads behind the addresses are
// shared loads that ptxas keeps behind any earlier cp.async (a shared write), so
// issued tile by tile they ran one latency each.
type stageScope struct {
	base   ptx.Operand // the slot the stage fills
	copies []func()    // the held cp.asyncs, in program order
}

// openStage emits issue inside a pipeline stage filling the slot at base.
func (e *emitter) openStage(base ptx.Operand, issue func(s *stageScope) error) error {
	s := &stageScope{base: base}
	e.issuing = s
	defer func() { e.issuing = nil }()
	return issue(s)
}

// inStage reports whether a pipeline stage is being issued.
func (e *emitter) inStage() bool { return e.issuing != nil }

// asyncCopy issues cp, a cp.async, or inside a pipeline stage holds it for the
// stage to issue.
func (e *emitter) asyncCopy(cp func()) {
	if s := e.issuing; s != nil {
		s.copies = append(s.copies, cp)
		return
	}
	cp()
}
