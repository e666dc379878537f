package lower

import (
	"fmt"
	"math/bits"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
)

// divisor returns a power of two that the integer value v (every element of it) is
// known to be a multiple of. It drives the width of vector copies: a gather whose
// row offsets are multiples of 8 bf16 elements can move 16 bytes per cp.async.
func (f *fn) divisor(v *ir.Value) int64 {
	const limit = 1 << 16
	if v.Def == nil {
		for _, p := range f.k.Params {
			if p.Value == v && p.Div > 1 {
				return int64(p.Div)
			}
		}
		return 1
	}
	o := v.Def
	switch o.Kind {
	case ir.OpConst:
		if o.Int == 0 {
			return limit
		}
		return min(int64(1)<<bits.TrailingZeros64(uint64(o.Int)), limit)
	case ir.OpMul:
		return min(f.divisor(o.Args[0])*f.divisor(o.Args[1]), limit)
	case ir.OpAdd, ir.OpSub, ir.OpMin, ir.OpMax:
		return min(f.divisor(o.Args[0]), f.divisor(o.Args[1]))
	case ir.OpCast, ir.OpBroadcast:
		return f.divisor(o.Args[0])
	case ir.OpDiv:
		if c := o.Args[1].Def; c != nil && c.Kind == ir.OpConst && c.Int > 0 {
			if d := f.divisor(o.Args[0]); d%c.Int == 0 {
				return d / c.Int
			}
		}
	case ir.OpShl:
		if c := o.Args[1].Def; c != nil && c.Kind == ir.OpConst && c.Int >= 0 && c.Int < 16 {
			return min(f.divisor(o.Args[0])<<c.Int, limit)
		}
	case ir.OpSelect:
		return min(f.divisor(o.Args[1]), f.divisor(o.Args[2]))
	}
	return 1
}

// ptrAlign is the byte alignment known for a pointer value.
func (f *fn) ptrAlign(p *ir.Value) int64 {
	for p.Def != nil && p.Def.Kind == ir.OpBitcast {
		p = p.Def.Args[0]
	}
	for _, kp := range f.k.Params {
		if kp.Value == p && kp.Div > 1 {
			return int64(kp.Div)
		}
	}
	return 1
}

// chunkBytes picks the cp.async size for a rank-2 load: the widest of 16, 8 and 4
// bytes that every row start is known to be aligned to.
func (f *fn) chunkBytes(m memOps) int {
	es := int64(m.val.Type.Elem.Size())
	align := gcd64(f.ptrAlign(m.ptr), gcd64(f.divisor(m.offs)*es, f.divisor(m.col0)*es))
	for _, w := range []int64{16, 8, 4} {
		if align%w == 0 {
			return int(w)
		}
	}
	return int(align)
}

func gcd64(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

func log2(n int) int { return bits.TrailingZeros(uint(n)) }

// toI64 widens an index to 64 bits: all global address arithmetic is 64-bit.
func (e *emitter) toI64(x ptx.Operand, elem ir.Elem) ptx.Operand {
	if elem == ir.I64 {
		return x
	}
	if c, ok := x.(ptx.Imm); ok {
		return c
	}
	r := e.reg(ir.I64)
	e.ins("cvt.s64.s32", r, x)
	return r
}

// elemAddr returns base + off*size as a 64-bit register.
func (e *emitter) elemAddr(base, off ptx.Operand, size int) ptx.Operand {
	if c, ok := off.(ptx.Imm); ok {
		if c == 0 {
			return base
		}
		r := e.reg(ir.I64)
		e.ins("add.s64", r, base, ptx.Imm(int64(c)*int64(size)))
		return r
	}
	scaled := off
	if size > 1 {
		s := e.reg(ir.I64)
		e.ins("shl.b64", s, off, ptx.Imm(log2(size)))
		scaled = s
	}
	r := e.reg(ir.I64)
	e.ins("add.s64", r, base, scaled)
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
	e.ins("add.s64", r, a, b)
	return r
}

// memSuffix is the type of a load or store of one element of elem.
func memSuffix(elem ir.Elem) string {
	switch elem {
	case ir.U8, ir.E4M3:
		return "u8"
	case ir.BF16, ir.F16:
		return "b16"
	case ir.I32:
		return "s32"
	case ir.I64:
		return "s64"
	case ir.F32:
		return "f32"
	}
	return "b32"
}

func (e *emitter) readOnly(p *ir.Value) bool {
	for p.Def != nil && p.Def.Kind == ir.OpBitcast {
		p = p.Def.Args[0]
	}
	for i, kp := range e.f.k.Params {
		if kp.Value == p {
			return !e.written[i]
		}
	}
	return false
}

// loadElem loads one element: args are the pointer, the element offset and an
// optional mask. A masked-off element reads as zero and touches no memory.
func (e *emitter) loadElem(o *ir.Op, args []ptx.Operand) (ptx.Operand, error) {
	m := memOperands(o)
	elem := m.val.Type.Elem
	addr := e.elemAddr(args[0], e.toI64(args[1], m.offs.Type.Elem), elem.Size())
	r := e.reg(elem)
	op := "ld.global."
	if e.readOnly(m.ptr) {
		op = "ld.global.nc."
	}
	var guard ptx.Operand
	if len(args) > 2 && args[2] != nil {
		if c, ok := args[2].(ptx.Imm); ok && c == 0 {
			e.ins("mov."+bitsSuffix(elem), r, ptx.Imm(0))
			return r, nil
		} else if !ok {
			guard = args[2]
			e.ins("mov."+bitsSuffix(elem), r, zeroOf(elem))
		}
	}
	e.insIf(guard, false, op+memSuffix(elem), r, ptx.Addr{Base: addr})
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

// waitAllWarps is the CTA size from which the first wait for a gather waits for
// every outstanding one: one barrier then covers them all, where per-tile waits
// cost a barrier each (seven per K tile). At 16 warps the barriers cost more than
// the dequantization they let overlap with later gathers (H200, H=64: T=256 159.4
// -> 157.9 us, K=2176 132.1 -> 131.3); at 4 warps they do not (H8/H16 +0.5-1%).
const waitAllWarps = 16

// ready makes v's shared bytes readable by every thread: waiting for its cp.async
// group if still outstanding, then a barrier if any thread wrote them since the
// last one.
func (e *emitter) ready(v *ir.Value) {
	v = storageOf(v)
	for j, w := range e.outstanding {
		if w == v {
			if e.f.k.Warps >= waitAllWarps {
				j = len(e.outstanding) - 1
			}
			e.ins("cp.async.wait_group", ptx.Imm(len(e.outstanding)-j-1))
			for _, done := range e.outstanding[:j+1] {
				e.waited[done] = true
			}
			e.outstanding = append([]*ir.Value(nil), e.outstanding[j+1:]...)
			break
		}
	}
	if e.waited[v] || e.plainPending[v] {
		e.barrier()
	}
}

// flushAll makes every shared write visible and orders every access before the
// code that follows (end of a loop iteration).
func (e *emitter) flushAll() {
	if len(e.outstanding) > 0 {
		e.ins("cp.async.wait_group", ptx.Imm(0))
		e.outstanding = nil
	}
	e.barrier()
}

// barrier emits bar.sync 0: every earlier shared access of the CTA is done, and
// every write that its thread has waited for is visible.
func (e *emitter) barrier() {
	e.ins("bar.sync", ptx.Imm(0))
	clear(e.waited)
	clear(e.plainPending)
	clear(e.readSince)
}

// storageOf is the value that owns v's shared bytes (a transpose is a view).
func storageOf(v *ir.Value) *ir.Value {
	for v.Def != nil && v.Def.Kind == ir.OpTrans {
		v = v.Def.Args[0]
	}
	return v
}

// beforeWrite is called before writing v's shared array: if the bytes were used by
// another array that some thread read since the last barrier, wait for those reads.
func (e *emitter) beforeWrite(v *ir.Value) {
	for _, a := range e.f.aliases[v] {
		if e.readSince[a] {
			e.comment("%s reuses the bytes of %s", v, a)
			e.barrier()
			return
		}
	}
}

func (e *emitter) noteRead(v *ir.Value) { e.readSince[storageOf(v)] = true }

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
			e.ins("setp.lt.u32", live, rc.run, ptx.Imm(total))
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
	e.ins("add.s32", rc.run, e.tid, ptx.Imm(i*e.nthreads))
	if perRow == 1 {
		// One run per row (a rank-1 tile, element by element): the row is the run.
		e.ins("mov.u32", rc.row, rc.run)
	} else {
		e.divRemU32(ir.OpDiv, rc.row, rc.run, perRow)
		rc.idx = e.reg(ir.I32)
		e.divRemU32(ir.OpRem, rc.idx, rc.run, perRow)
	}
	if (i+1)*e.nthreads > rows*perRow {
		e.ins("min.u32", rc.row, rc.row, ptx.Imm(rows-1))
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
	m := memOperands(o)
	v := m.val
	l := e.layout(v)
	es := v.Type.Elem.Size()
	R, C := v.Type.Shape[0], v.Type.Shape[1]
	vw := e.f.chunkBytes(m)
	if vw < 4 {
		return e.loadSharedElems(o)
	}
	base := e.scalar(m.ptr)
	col0 := e.toI64(e.scalar(m.col0), m.col0.Type.Elem)
	var bound ptx.Operand
	if m.bound != nil {
		bound = e.scalar(m.bound)
	} else if C*es%vw != 0 {
		bound = ptx.Imm(C)
	}
	cpr := (C*es + vw - 1) / vw
	e.comment("%s: %dx%d %s -> shared[%d], %d-byte cp.async chunks, %d per thread", v, R, C, v.Type.Elem, l.offset, vw, (R*cpr+e.nthreads-1)/e.nthreads)
	kind := "ca"
	if vw == 16 {
		kind = "cg"
	}
	e.beforeWrite(v)
	err := e.forRuns(R, cpr, func(row, cc, live ptx.Operand) error {
		rowOff, err := e.at(m.offs, []ptx.Operand{row})
		if err != nil {
			return err
		}
		var ok ptx.Operand
		if m.mask != nil {
			if ok, err = e.at(m.mask, []ptx.Operand{row}); err != nil {
				return err
			}
		}
		colElem := e.reg(ir.I32)
		e.ins("mul.lo.s32", colElem, cc, ptx.Imm(vw/es))
		var size ptx.Operand = ptx.Imm(vw)
		if bound != nil {
			left := e.reg(ir.I32)
			e.ins("sub.s32", left, e.inReg(bound, ir.I32), colElem)
			if es > 1 {
				e.ins("shl.b32", left, left, ptx.Imm(log2(es)))
			}
			e.ins("min.s32", left, left, ptx.Imm(vw))
			e.ins("max.s32", left, left, ptx.Imm(0))
			size = left
		}
		if ok != nil {
			s := e.reg(ir.I32)
			e.ins("selp.b32", s, size, ptx.Imm(0), e.inReg(ok, ir.I1))
			size = s
		}
		off := e.add64(e.add64(e.toI64(rowOff, m.offs.Type.Elem), col0), e.toI64(colElem, ir.I32))
		src := e.elemAddr(base, off, es)
		if !isImm(size) {
			any := e.reg(ir.I1)
			e.ins("setp.gt.s32", any, size, ptx.Imm(0))
			safe := e.reg(ir.I64)
			e.ins("selp.b64", safe, src, base, any)
			src = safe
		}
		dst := e.reg(ir.I32)
		e.ins("mad.lo.s32", dst, row, ptx.Imm(l.pitch), e.smem)
		e.ins("mad.lo.s32", dst, cc, ptx.Imm(vw), dst)
		e.insIf(live, false, "cp.async."+kind+".shared.global", ptx.Addr{Base: dst, Off: int64(l.offset)}, ptx.Addr{Base: src}, ptx.Imm(vw), size)
		return nil
	})
	if err != nil {
		return err
	}
	e.ins("cp.async.commit_group")
	e.outstanding = append(e.outstanding, v)
	return nil
}

// loadSharedElems is the fallback for tiles whose rows are not 4-byte aligned:
// element loads into registers, then shared stores.
func (e *emitter) loadSharedElems(o *ir.Op) error {
	m := memOperands(o)
	v := m.val
	l := e.layout(v)
	elem := v.Type.Elem
	es := elem.Size()
	R, C := v.Type.Shape[0], v.Type.Shape[1]
	e.comment("%s: %dx%d %s -> shared[%d], rows only %d-byte aligned: element copies", v, R, C, elem, l.offset, e.f.chunkBytes(m))
	base := e.scalar(m.ptr)
	col0 := e.toI64(e.scalar(m.col0), m.col0.Type.Elem)
	e.beforeWrite(v)
	err := e.forRuns(R, C, func(row, col, live ptx.Operand) error {
		rowOff, err := e.at(m.offs, []ptx.Operand{row})
		if err != nil {
			return err
		}
		ok := e.reg(ir.I1)
		e.ins("setp.lt.s32", ok, col, ptx.Imm(C))
		if m.bound != nil {
			b := e.reg(ir.I1)
			e.ins("setp.lt.s32", b, col, e.scalar(m.bound))
			e.ins("and.pred", ok, ok, b)
		}
		if m.mask != nil {
			mk, err := e.at(m.mask, []ptx.Operand{row})
			if err != nil {
				return err
			}
			e.ins("and.pred", ok, ok, e.inReg(mk, ir.I1))
		}
		off := e.add64(e.add64(e.toI64(rowOff, m.offs.Type.Elem), col0), e.toI64(col, ir.I32))
		x := e.reg(elem)
		e.ins("mov."+bitsSuffix(elem), x, ptx.Imm(0))
		e.insIf(ok, false, "ld.global."+memSuffix(elem), x, ptx.Addr{Base: e.elemAddr(base, off, es)})
		dst := e.reg(ir.I32)
		e.ins("mad.lo.s32", dst, row, ptx.Imm(l.pitch), e.smem)
		e.ins("mad.lo.s32", dst, col, ptx.Imm(es), dst)
		e.insIf(live, false, "st.shared."+memSuffix(elem), ptx.Addr{Base: dst, Off: int64(l.offset)}, x)
		return nil
	})
	if err != nil {
		return err
	}
	e.plainPending[v] = true
	return nil
}

// sharedElem reads one element of a shared tile.
func (e *emitter) sharedElem(v *ir.Value, idx []ptx.Operand) (ptx.Operand, error) {
	e.ready(v)
	l, _ := e.f.sharedHome(v)
	e.noteRead(v)
	if len(idx) == 1 {
		a := e.reg(ir.I32)
		e.ins("mad.lo.s32", a, e.inReg(idx[0], ir.I32), ptx.Imm(l.pitch), e.smem)
		x := e.reg(v.Type.Elem)
		e.ins("ld.shared."+memSuffix(v.Type.Elem), x, ptx.Addr{Base: a, Off: int64(l.offset)})
		return x, nil
	}
	r, c := idx[0], idx[1]
	if l.trans {
		r, c = c, r
	}
	es := v.Type.Elem.Size()
	addr := e.reg(ir.I32)
	e.ins("mad.lo.s32", addr, e.inReg(r, ir.I32), ptx.Imm(l.pitch), e.smem)
	e.ins("mad.lo.s32", addr, e.inReg(c, ir.I32), ptx.Imm(es), addr)
	x := e.reg(v.Type.Elem)
	e.ins("ld.shared."+memSuffix(v.Type.Elem), x, ptx.Addr{Base: addr, Off: int64(l.offset)})
	return x, nil
}

// store writes a tile (or scalar) through a pointer. Each element is written by
// the one thread that holds it; row masks and column bounds become predicates.
func (e *emitter) store(o *ir.Op) error {
	m := memOperands(o)
	v := m.val
	l := e.layout(v)
	elem := v.Type.Elem
	base := e.scalar(m.ptr)
	st := "st.global." + memSuffix(elem)
	switch {
	case l.kind == lAcc:
		rows, cols := e.rowsOf(v.Type.Shape[0], l), e.colsOf(v.Type.Shape[1], l)
		col0 := e.toI64(e.scalar(m.col0), m.col0.Type.Elem)
		// A thread's two elements of a fragment row are adjacent columns 2t, 2t+1 (from
		// an even column base): one paired store when the pair is aligned in memory and
		// a column bound, if any, is an even constant (so it never splits a pair).
		pair := int64(2 * elem.Size())
		paired := (elem.Size() == 2 || elem.Size() == 4) &&
			gcd64(e.f.ptrAlign(m.ptr), gcd64(e.f.divisor(m.offs)*int64(elem.Size()), e.f.divisor(m.col0)*int64(elem.Size())))%pair == 0
		var bound ptx.Operand
		if m.bound != nil {
			bound = e.scalar(m.bound)
			if b, ok := bound.(ptx.Imm); !ok || b%2 != 0 {
				paired = false
			}
		}
		// inBounds is rowOK and, under a column bound, col < bound.
		inBounds := func(rowOK, col ptx.Operand) ptx.Operand {
			if bound == nil {
				return rowOK
			}
			p := e.reg(ir.I1)
			e.ins("setp.lt.s32", p, col, bound)
			return e.andPred(p, rowOK)
		}
		e.comment("store %s from mma fragments, paired: %v", v, paired)
		for mi := 0; mi < rows.n; mi++ {
			for h := 0; h < 2; h++ {
				row := rows.idx[mi][h]
				// A constant column offset goes into the instructions' immediate, and
				// the (row, column) addresses are kept for the enclosing scope: the
				// column slices of one output (mla_decode's eight) then share them
				// instead of each forming its own 64-bit addresses, which ptxas would
				// otherwise compute all at once and spill at 128 registers.
				var immOff int64
				c0 := col0
				if c, ok := col0.(ptx.Imm); ok {
					immOff, c0 = int64(c)*int64(elem.Size()), ptx.Imm(0)
				}
				outer := e.cache[len(e.cache)-1]
				addrKey := fmt.Sprintf("frag-store %s %s %s %s ", m.ptr.Name, m.offs.Name, operandKey([]ptx.Operand{c0}), operandKey([]ptx.Operand{row}))
				e.pushScope()
				rowBase, haveBase := e.cached(addrKey + "row")
				if !haveBase {
					rowOff, err := e.at(m.offs, []ptx.Operand{row})
					if err != nil {
						return err
					}
					rowBase = e.elemAddr(base, e.add64(e.toI64(rowOff, m.offs.Type.Elem), c0), elem.Size())
					outer[addrKey+"row"] = rowBase
				}
				colAddr := func(ni, j int) ptx.Operand {
					key := fmt.Sprintf("%scol %d %d", addrKey, ni, j)
					if a, ok := e.cached(key); ok {
						return a
					}
					a := e.elemAddr(rowBase, e.toI64(cols.idx[ni][j], ir.I32), elem.Size())
					outer[key] = a
					return a
				}
				var rowOK ptx.Operand
				if m.mask != nil {
					var err error
					if rowOK, err = e.at(m.mask, []ptx.Operand{row}); err != nil {
						return err
					}
				}
				// Of the warps holding identical copies, one writes.
				rowOK = e.andPred(rowOK, e.firstCopy(l.copies()))
				for ni := 0; ni < cols.n; ni++ {
					if paired {
						// Columns 2t and 2t+1: one 2-element store, in bounds together.
						lo, err := e.accElem(v, l, mi, ni, 2*h)
						if err != nil {
							return err
						}
						hi, err := e.accElem(v, l, mi, ni, 2*h+1)
						if err != nil {
							return err
						}
						addr := ptx.Addr{Base: colAddr(ni, 0), Off: immOff}
						ok := inBounds(rowOK, cols.idx[ni][0])
						if elem.Size() == 4 {
							e.insIf(guardOf(ok), false, "st.global.v2."+memSuffix(elem), addr, ptx.Vec{e.inReg(lo, elem), e.inReg(hi, elem)})
						} else {
							w := e.reg(ir.I32)
							e.ins("mov.b32", w, ptx.Vec{e.inReg(lo, elem), e.inReg(hi, elem)})
							e.insIf(guardOf(ok), false, "st.global.b32", addr, w)
						}
						continue
					}
					for j := 0; j < 2; j++ {
						col := cols.idx[ni][j]
						ok := inBounds(rowOK, col)
						x, err := e.accElem(v, l, mi, ni, 2*h+j)
						if err != nil {
							return err
						}
						e.insIf(guardOf(ok), false, st, ptx.Addr{Base: colAddr(ni, j), Off: immOff}, e.inReg(x, elem))
					}
				}
				e.popScope()
			}
		}
		return nil
	case l.kind == lRows && m.col0 == nil:
		// Every quad lane and every column-warp holds the row; one writes it.
		rows := e.rowsOf(v.Type.Shape[0], l)
		writer := e.reg(ir.I1)
		e.ins("setp.eq.s32", writer, e.t, ptx.Imm(0))
		if first := e.firstCopy(l.rowGroupWarps()); first != nil {
			e.ins("and.pred", writer, writer, first)
		}
		for mi := 0; mi < rows.n; mi++ {
			for h := 0; h < 2; h++ {
				row := rows.idx[mi][h]
				if err := e.storeElem(o, m, row, writer, func() (ptx.Operand, error) { return e.vecElem(v, l, mi, h) }); err != nil {
					return err
				}
			}
		}
		return nil
	case (l.kind == lExpr || l.kind == lShared) && m.col0 != nil:
		return e.storeTile(m)
	case (l.kind == lExpr || l.kind == lScalar) && m.col0 == nil:
		n := 1
		if v.Type.Kind == ir.Tile {
			n = v.Type.Shape[0]
		}
		// Element i by thread i mod the CTA size; threads past the end compute element
		// n-1 (every address they form is one the tile uses) and store nothing.
		return e.forRuns(n, 1, func(idx, _, live ptx.Operand) error {
			return e.storeElem(o, m, idx, live, func() (ptx.Operand, error) { return e.at(v, []ptx.Operand{idx}) })
		})
	}
	return fmt.Errorf("cannot store %s from %v", v, l)
}

func guardOf(p ptx.Operand) ptx.Operand {
	if p == nil {
		return nil
	}
	if _, ok := p.(ptx.Reg); ok {
		return p
	}
	return nil
}

// storeElem stores element idx of a rank-1 (or scalar) store under guard.
func (e *emitter) storeElem(o *ir.Op, m memOps, idx, guard ptx.Operand, val func() (ptx.Operand, error)) error {
	e.pushScope()
	defer e.popScope()
	off, err := e.at(m.offs, []ptx.Operand{idx})
	if err != nil {
		return err
	}
	ok := guard
	if m.mask != nil {
		mk, err := e.at(m.mask, []ptx.Operand{idx})
		if err != nil {
			return err
		}
		if guard == nil {
			ok = mk
		} else {
			p := e.reg(ir.I1)
			e.ins("and.pred", p, e.inReg(mk, ir.I1), guard)
			ok = p
		}
	}
	x, err := val()
	if err != nil {
		return err
	}
	elem := m.val.Type.Elem
	addr := e.elemAddr(e.scalar(m.ptr), e.toI64(off, m.offs.Type.Elem), elem.Size())
	e.insIf(guardOf(ok), false, "st.global."+memSuffix(elem), ptx.Addr{Base: addr}, e.inReg(x, elem))
	return nil
}

// storeTile writes a rank-2 tile held in shared memory or recomputed per element:
// the CTA takes runs of 16 bytes of a row round-robin (like staging), and a run
// goes out as one 16-byte store when every row start is known to be 16-byte
// aligned and no column bound can cut it; otherwise element by element.
func (e *emitter) storeTile(m memOps) error {
	v := m.val
	elem := v.Type.Elem
	es := elem.Size()
	R, C := v.Type.Shape[0], v.Type.Shape[1]
	vec := 16 / es
	if C%vec != 0 || es > 4 {
		vec = 1
	}
	aligned := gcd64(e.f.ptrAlign(m.ptr), gcd64(e.f.divisor(m.offs)*int64(es), e.f.divisor(m.col0)*int64(es)))%16 == 0
	whole := vec > 1 && aligned && m.bound == nil
	base := e.scalar(m.ptr)
	col0g := e.toI64(e.scalar(m.col0), m.col0.Type.Elem)
	e.comment("store %s: %dx%d %s, runs of %d, whole 16-byte stores: %v", v, R, C, elem, vec, whole)
	return e.forRuns(R, C/vec, func(row, runIdx, live ptx.Operand) error {
		col := runIdx
		if vec > 1 {
			col = e.reg(ir.I32)
			e.ins("mul.lo.s32", col, runIdx, ptx.Imm(vec))
		}
		rowOff, err := e.at(m.offs, []ptx.Operand{row})
		if err != nil {
			return err
		}
		ok := live
		if m.mask != nil {
			mk, err := e.at(m.mask, []ptx.Operand{row})
			if err != nil {
				return err
			}
			ok = e.andPred(ok, mk)
		}
		run, err := e.atRun(v, row, col, vec)
		if err != nil {
			return err
		}
		rowAddr := e.elemAddr(base, e.add64(e.toI64(rowOff, m.offs.Type.Elem), col0g), es)
		if whole {
			var words ptx.Vec
			switch es {
			case 2:
				for j := 0; j < vec; j += 2 {
					words = append(words, run.pair(e, j/2))
				}
			case 4:
				for j := 0; j < vec; j++ {
					words = append(words, e.inReg(run.elem(e, j), elem))
				}
			default:
				for j := 0; j < vec; j += 4 {
					w := e.reg(ir.I32)
					e.ins("and.b32", w, e.inReg(run.elem(e, j), elem), ptx.Imm(255))
					for k := 1; k < 4; k++ {
						b := e.reg(ir.I32)
						e.ins("and.b32", b, e.inReg(run.elem(e, j+k), elem), ptx.Imm(255))
						e.ins("shl.b32", b, b, ptx.Imm(8*k))
						e.ins("or.b32", w, w, b)
					}
					words = append(words, w)
				}
			}
			addr := e.elemAddr(rowAddr, e.toI64(col, ir.I32), es)
			e.insIf(guardOf(ok), false, "st.global.v4.b32", ptx.Addr{Base: addr}, words)
		} else {
			for j := 0; j < vec; j++ {
				cj := ptx.Operand(col)
				if j > 0 {
					c := e.reg(ir.I32)
					e.ins("add.s32", c, col, ptx.Imm(j))
					cj = c
				}
				okj := ok
				if m.bound != nil {
					p := e.reg(ir.I1)
					e.ins("setp.lt.s32", p, cj, e.scalar(m.bound))
					okj = e.andPred(okj, p)
				}
				addr := e.elemAddr(rowAddr, e.toI64(cj, ir.I32), es)
				e.insIf(guardOf(okj), false, "st.global."+memSuffix(elem), ptx.Addr{Base: addr}, e.inReg(run.elem(e, j), elem))
			}
		}
		return nil
	})
}

// andPred returns a && b for predicates, either of which may be absent (nil).
func (e *emitter) andPred(a, b ptx.Operand) ptx.Operand {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	p := e.reg(ir.I1)
	e.ins("and.pred", p, e.inReg(a, ir.I1), e.inReg(b, ir.I1))
	return p
}

// firstCopy is the predicate "this warp is the first of each group of n warps
// holding the same values" (nil when n is 1).
func (e *emitter) firstCopy(n int) ptx.Operand {
	if n <= 1 {
		return nil
	}
	// Computed where it is used (once per scope), not hoisted to the prologue: a
	// predicate live across the whole kernel costs ptxas a saved register, and
	// at the register budget that was a spill.
	key := fmt.Sprintf("first-of-%d", n)
	if p, ok := e.cached(key); ok {
		return p
	}
	r := e.reg(ir.I32)
	e.divRemU32(ir.OpRem, r, e.warp, n)
	p := e.reg(ir.I1)
	e.ins("setp.eq.s32", p, r, ptx.Imm(0))
	e.cache[len(e.cache)-1][key] = p
	return p
}
