package emit

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

// toI64 widens an index to 64 bits: all global address arithmetic is 64-bit.
func (e *emitter) toI64(x ptx.Operand, elem ir.Elem) ptx.Operand {
	if elem == ir.I64 {
		return x
	}
	if c, ok := x.(ptx.Imm); ok {
		return c
	}
	r := e.reg(ir.I64)
	e.add(ptx.CvtS64S32(r, x))
	return r
}

// elemAddr returns base + off*size as a 64-bit register.
func (e *emitter) elemAddr(base, off ptx.Operand, size int) ptx.Operand {
	if c, ok := off.(ptx.Imm); ok {
		if c == 0 {
			return base
		}
		r := e.reg(ir.I64)
		e.add(ptx.AddS64(r, base, ptx.Imm(int64(c)*int64(size))))
		return r
	}
	scaled := off
	if size > 1 {
		s := e.reg(ir.I64)
		e.add(ptx.ShlB64(s, off, ptx.Imm(log2(size))))
		scaled = s
	}
	r := e.reg(ir.I64)
	e.add(ptx.AddS64(r, base, scaled))
	return r
}

func (e *emitter) add64(a, b ptx.Operand) ptx.Operand {
	if c, ok := b.(ptx.Imm); ok && c == 0 {
		return a
	}
	if c, ok := a.(ptx.Imm); ok && c == 0 {
		return b
	}
	if isImm(a) {
		a, b = b, a
	}
	if isImm(a) {
		return ptx.Imm(int64(a.(ptx.Imm)) + int64(b.(ptx.Imm)))
	}
	r := e.reg(ir.I64)
	e.add(ptx.AddS64(r, a, b))
	return r
}

// readOnly: every parameter p may be is one no store writes.
func (e *emitter) readOnly(p *ir.Value) bool {
	ps := ir.PointerParams(e.d.Kernel, p)
	for _, i := range ps {
		if e.written[i] {
			return false
		}
	}
	return ps != nil
}

// loadElem loads one element: args are the pointer, the element offset and an
// optional mask. A masked-off element reads as zero and touches no memory.
func (e *emitter) loadElem(o *ir.Op, args []ptx.Operand) (ptx.Operand, error) {
	m := ir.MemOperands(o)
	elem := m.Val.Type.Elem
	addr := e.elemAddr(args[0], e.toI64(args[1], m.Offs.Type.Elem), elem.Size())
	r := e.reg(elem)
	ld := ptx.LdGlobal
	if e.readOnly(m.Ptr) {
		ld = ptx.LdGlobalNc
	}
	var guard ptx.Operand
	if len(args) > 2 && args[2] != nil {
		if c, ok := args[2].(ptx.Imm); ok && c == 0 {
			e.add(ptx.Mov(bitsSuffix(elem), r, zeroOf(elem)))
			return r, nil
		} else if !ok {
			guard = args[2]
			e.add(ptx.Mov(bitsSuffix(elem), r, zeroOf(elem)))
		}
	}
	e.addIf(guard, false, ld(memSuffix(elem), r, ptx.Addr{Base: addr}))
	return r, nil
}

func zeroOf(elem ir.Elem) ptx.Operand {
	if elem == ir.F32 {
		return ptx.F32(0)
	}
	return ptx.Imm(0)
}

// Shared-memory writes become visible to the other threads in two steps: a
// cp.async's data once its issuing thread waits for its group, and any write once
// a barrier follows. Every load to shared memory commits its own cp.async group,
// so a read of one tile waits only for the groups up to that tile's
// (cp.async.wait_group N), and the gathers issued after it stay in flight.

// forRuns spreads a [rows x perRow] grid of runs over the CTA's threads round
// robin (run i to thread i mod the CTA size) and emits body for each of this
// thread's runs with the run's row and its index within the row. live is nil when
// every thread has a run, else the predicate "this thread's run exists"; threads
// past the end get the last row, so every address they form is one the tile uses.
//
// The run coordinates are computed once per scope (runCoordsOf), and the body
// evaluates in the enclosing scope: tiles with the same row split (the seven e4m3
// slices of a gathered K tile) then share one register for each row offset and
// mask instead of recomputing them per tile.
func (e *emitter) forRuns(rows, perRow int, body func(row, idx, live ptx.Operand) error) error {
	total := rows * perRow
	for i := 0; i < (total+e.nthreads-1)/e.nthreads; i++ {
		rc := e.runCoordsOf(i, rows, perRow)
		var live ptx.Operand
		if (i+1)*e.nthreads > total {
			live = e.reg(ir.I1)
			e.add(ptx.SetpLtU32(live, rc.run, ptx.Imm(total)))
		}
		err := body(rc.row, rc.idx, live)
		clear(e.runCache)
		if err != nil {
			return err
		}
	}
	return nil
}

// runCoords are this thread's i-th run of a [rows x perRow] grid: the run number,
// its row (clamped to the last row for threads past the end) and its index in the row.
type runCoords struct{ run, row, idx ptx.Operand }

// runCoordsOf computes a run's coordinates at first use in the open scope (a loop
// iteration, typically) and reuses them for the scope's later tiles. They are not
// hoisted to the prologue: kept live across a loop they cost registers, and
// recomputing them is three instructions.
func (e *emitter) runCoordsOf(i, rows, perRow int) *runCoords {
	key := fmt.Sprintf("run %d/%dx%d ", i, rows, perRow)
	if run, ok := e.cached(key + "run"); ok {
		row, _ := e.cached(key + "row")
		idx, _ := e.cached(key + "idx")
		return &runCoords{run: run, row: row, idx: idx}
	}
	rc := &runCoords{run: e.reg(ir.I32), row: e.reg(ir.I32), idx: ptx.Imm(0)}
	e.add(ptx.AddS32(rc.run, e.tid, ptx.Imm(i*e.nthreads)))
	if perRow == 1 {
		// One run per row (a rank-1 tile, element by element): the row is the run.
		e.add(ptx.MovU32(rc.row, rc.run))
	} else {
		e.divRemU32(ir.OpDiv, rc.row, rc.run, perRow)
		rc.idx = e.reg(ir.I32)
		e.divRemU32(ir.OpRem, rc.idx, rc.run, perRow)
	}
	if (i+1)*e.nthreads > rows*perRow {
		e.add(ptx.MinU32(rc.row, rc.row, ptx.Imm(rows-1)))
	}
	scope := e.cache[len(e.cache)-1]
	scope[key+"run"], scope[key+"row"], scope[key+"idx"] = rc.run, rc.row, rc.idx
	return rc
}

// loadShared copies a rank-2 tile into its shared-memory home. Threads take 16-byte
// (or 8/4-byte) chunks round-robin; a chunk's source row comes from the rows tile
// (dense or gathered), and the row mask and column bound shrink the copied bytes,
// down to zero for masked rows, so cp.async zero-fills the rest. A masked chunk's
// source address is replaced by the tile base so no thread forms a wild address.
func (e *emitter) loadShared(o *ir.Op) error {
	m := ir.MemOperands(o)
	v := m.Val
	l := e.layout(v)
	es := v.Type.Elem.Size()
	R, C := v.Type.Shape[0], v.Type.Shape[1]
	vw, ok := e.d.Budget.CopyBytes[o]
	if !ok {
		return fmt.Errorf("%s: no copy width decided (budget pass)", o)
	}
	if vw < 4 {
		return e.loadSharedElems(o)
	}
	base := e.scalar(m.Ptr)
	col0 := e.toI64(e.scalar(m.Col0), m.Col0.Type.Elem)
	var bound ptx.Operand
	if m.Bound != nil {
		bound = e.scalar(m.Bound)
	} else if C*es%vw != 0 {
		bound = ptx.Imm(C)
	}
	cpr := (C*es + vw - 1) / vw
	e.comment("%s: %dx%d %s -> shared[%d], %d-byte cp.async chunks, %d per thread", v, R, C, v.Type.Elem, l.Offset, vw, (R*cpr+e.nthreads-1)/e.nthreads)
	cpAsync := ptx.CpAsyncCaSharedGlobal
	if vw == 16 {
		cpAsync = ptx.CpAsyncCgSharedGlobal
	}
	slot := e.smemOf(v) // a handoff ring's slot, or smem
	if e.inStage() {
		slot = e.issuing.base // the stage checked the ring's bytes before its first write
	} else {
		e.beforeWrite(v)
	}
	err := e.forRuns(R, cpr, func(row, cc, live ptx.Operand) error {
		rowOff, err := e.at(m.Offs, []ptx.Operand{row})
		if err != nil {
			return err
		}
		var ok ptx.Operand
		if m.Mask != nil {
			if ok, err = e.at(m.Mask, []ptx.Operand{row}); err != nil {
				return err
			}
		}
		colElem := e.reg(ir.I32)
		e.add(ptx.MulLoS32(colElem, cc, ptx.Imm(vw/es)))
		var size ptx.Operand = ptx.Imm(vw)
		if bound != nil {
			left := e.reg(ir.I32)
			e.add(ptx.SubS32(left, e.inReg(bound, ir.I32), colElem))
			if es > 1 {
				e.add(ptx.ShlB32(left, left, ptx.Imm(log2(es))))
			}
			e.add(ptx.MinS32(left, left, ptx.Imm(vw)))
			e.add(ptx.MaxS32(left, left, ptx.Imm(0)))
			size = left
		}
		if ok != nil {
			s := e.reg(ir.I32)
			e.add(ptx.SelpB32(s, size, ptx.Imm(0), e.inReg(ok, ir.I1)))
			size = s
		}
		off := e.add64(e.add64(e.toI64(rowOff, m.Offs.Type.Elem), col0), e.toI64(colElem, ir.I32))
		src := e.elemAddr(base, off, es)
		if !isImm(size) {
			any := e.reg(ir.I1)
			e.add(ptx.SetpGtS32(any, size, ptx.Imm(0)))
			safe := e.reg(ir.I64)
			e.add(ptx.SelpB64(safe, src, base, any))
			src = safe
		}
		var dst ptx.Addr
		if l.Swizzle {
			dst = e.sharedAddr(slot, l, row, cc, vw)
		} else {
			a := e.reg(ir.I32)
			e.add(ptx.MadLoS32(a, row, ptx.Imm(l.Pitch), slot))
			e.add(ptx.MadLoS32(a, cc, ptx.Imm(vw), a))
			dst = ptx.Addr{Base: a, Off: int64(l.Offset)}
		}
		e.asyncCopy(func() {
			e.addIf(live, false, cpAsync(dst, ptx.Addr{Base: src}, ptx.Imm(vw), size))
		})
		return nil
	})
	if err != nil {
		return err
	}
	if e.inStage() {
		return nil // one group per pipeline stage
	}
	e.add(ptx.CpAsyncCommitGroup())
	e.sync(decision.SyncCommit, v)
	return nil
}

// loadSharedElems is the fallback for tiles whose rows are not 4-byte aligned:
// element loads into registers, then shared stores.
func (e *emitter) loadSharedElems(o *ir.Op) error {
	m := ir.MemOperands(o)
	v := m.Val
	l := e.layout(v)
	elem := v.Type.Elem
	es := elem.Size()
	R, C := v.Type.Shape[0], v.Type.Shape[1]
	e.comment("%s: %dx%d %s -> shared[%d], rows only %d-byte aligned: element copies", v, R, C, elem, l.Offset, e.d.Budget.CopyBytes[o])
	base := e.scalar(m.Ptr)
	col0 := e.toI64(e.scalar(m.Col0), m.Col0.Type.Elem)
	e.beforeWrite(v)
	err := e.forRuns(R, C, func(row, col, live ptx.Operand) error {
		rowOff, err := e.at(m.Offs, []ptx.Operand{row})
		if err != nil {
			return err
		}
		ok := e.reg(ir.I1)
		e.add(ptx.SetpLtS32(ok, col, ptx.Imm(C)))
		if m.Bound != nil {
			b := e.reg(ir.I1)
			e.add(ptx.SetpLtS32(b, col, e.scalar(m.Bound)))
			e.add(ptx.AndPred(ok, ok, b))
		}
		if m.Mask != nil {
			mk, err := e.at(m.Mask, []ptx.Operand{row})
			if err != nil {
				return err
			}
			e.add(ptx.AndPred(ok, ok, e.inReg(mk, ir.I1)))
		}
		off := e.add64(e.add64(e.toI64(rowOff, m.Offs.Type.Elem), col0), e.toI64(col, ir.I32))
		x := e.reg(elem)
		e.add(ptx.Mov(bitsSuffix(elem), x, zeroOf(elem)))
		e.addIf(ok, false, ptx.LdGlobal(memSuffix(elem), x, ptx.Addr{Base: e.elemAddr(base, off, es)}))
		var dst ptx.Addr
		if l.Swizzle {
			dst = e.sharedAddr(e.smemOf(v), l, row, col, es)
		} else {
			a := e.reg(ir.I32)
			e.add(ptx.MadLoS32(a, row, ptx.Imm(l.Pitch), e.smemOf(v)))
			e.add(ptx.MadLoS32(a, col, ptx.Imm(es), a))
			dst = ptx.Addr{Base: a, Off: int64(l.Offset)}
		}
		e.addIf(live, false, ptx.StShared(memSuffix(elem), dst, x))
		return nil
	})
	if err != nil {
		return err
	}
	e.sync(decision.SyncWrote, v)
	return nil
}

// ldSharedWords loads the 32-bit words w from shared memory: one word by a scalar
// load, two or four by a vector load (Validate refuses another count).
func ldSharedWords(w ptx.Vec, addr ptx.Addr) *ptx.Instr {
	switch len(w) {
	case 1:
		return ptx.LdSharedB32(w[0], addr)
	case 2:
		return ptx.LdSharedV2B32(w, addr)
	}
	return ptx.LdSharedV4B32(w, addr)
}

// narrowRowByte reads byte column c of a shared tile of unsigned bytes whose rows
// are at most 16 bytes (the fp8ds records' scale bytes) from the whole row, loaded
// once per row in the open scope with one vector load: the decode reads all seven
// scales of a record, which were seven ld.shared.u8, each a load latency.
func (e *emitter) narrowRowByte(v *ir.Value, l decision.Layout, row, c ptx.Operand) (ptx.Operand, bool) {
	col, isConst := c.(ptx.Imm)
	rowBytes := v.Type.Shape[1]
	words := (rowBytes + 3) / 4
	if words == 3 {
		words = 4
	}
	if !isConst || l.Swizzle || memSuffix(v.Type.Elem) != "u8" || rowBytes > 16 || l.Pitch%(4*words) != 0 || l.Offset%(4*words) != 0 || l.Pitch < 4*words {
		return nil, false
	}
	key := "row words:" + v.Name + "@" + operandKey([]ptx.Operand{row})
	var w ptx.Vec
	if x, ok := e.cached(key); ok {
		w = x.(ptx.Vec)
	} else {
		addr := e.reg(ir.I32)
		e.add(ptx.MadLoS32(addr, e.inReg(row, ir.I32), ptx.Imm(l.Pitch), e.smemOf(v)))
		w = make(ptx.Vec, words)
		for i := range w {
			w[i] = e.reg(ir.I32)
		}
		e.add(ldSharedWords(w, ptx.Addr{Base: addr, Off: int64(l.Offset)}))
		e.cache[len(e.cache)-1][key] = w
	}
	x := e.reg(ir.I32)
	// Byte col%4 of its word, zero-extended (selector nibbles 4 pick b = 0).
	e.add(ptx.PrmtB32(x, w[int(col)/4], ptx.Imm(0), ptx.Imm(0x4440|int64(col)%4)))
	return x, true
}

// sharedElem reads one element of a shared tile.
func (e *emitter) sharedElem(v *ir.Value, idx []ptx.Operand) (ptx.Operand, error) {
	e.ready(v)
	l, _ := e.d.SharedHome(v)
	e.noteRead(v)
	if len(idx) == 1 {
		a := e.reg(ir.I32)
		e.add(ptx.MadLoS32(a, e.inReg(idx[0], ir.I32), ptx.Imm(l.Pitch), e.smemOf(v)))
		if v.Type.Elem == ir.I1 { // stored as a 32-bit 0 or 1 (stageRows)
			w, x := e.reg(ir.I32), e.reg(ir.I1)
			e.add(ptx.LdSharedB32(w, ptx.Addr{Base: a, Off: int64(l.Offset)}))
			e.add(ptx.SetpNeS32(x, w, ptx.Imm(0)))
			return x, nil
		}
		x := e.reg(v.Type.Elem)
		e.add(ptx.LdShared(memSuffix(v.Type.Elem), x, ptx.Addr{Base: a, Off: int64(l.Offset)}))
		return x, nil
	}
	r, c := idx[0], idx[1]
	if l.Trans {
		r, c = c, r
	}
	if x, ok := e.narrowRowByte(v, l, r, c); ok {
		return x, nil
	}
	addr := e.sharedAddr(e.smemOf(v), l, r, c, v.Type.Elem.Size())
	x := e.reg(v.Type.Elem)
	e.add(ptx.LdShared(memSuffix(v.Type.Elem), x, addr))
	return x, nil
}
