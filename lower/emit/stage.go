package emit

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

// stage writes a recomputed or fragment tile into its shared home (see fn.stage).
func (e *emitter) stage(v *ir.Value) error {
	h, _ := e.d.SharedHome(v)
	e.beforeWrite(v)
	var err error
	switch l := e.layout(v); {
	case l.Kind == decision.Acc:
		err = e.stageFragments(v, l, h)
	case l.Kind == decision.Rows:
		err = e.stageRows(v, l, h)
	case l.Kind == decision.Expr && v.Type.Rank() == 1:
		err = e.stageVector(v, h)
	case l.Kind == decision.Expr:
		// The stores wait until the next tile's loads are issued (deferStage).
		stores, err := e.stageComputed(v, h)
		if err != nil {
			return err
		}
		e.deferStage(v, stores)
		return nil
	default:
		err = fmt.Errorf("cannot stage %s from %v", v, e.layout(v))
	}
	e.sync(decision.SyncWrote, v)
	return err
}

// sharedAddr returns the address of element (row, col) of an array at h, es bytes
// per element. In a swizzled array an access must not cross a 16-byte chunk: the
// runs and copies are at most 16 bytes, aligned to their size.
func (e *emitter) sharedAddr(base ptx.Operand, h decision.Layout, row, col ptx.Operand, es int) ptx.Addr {
	a := e.reg(ir.I32)
	e.add(ptx.MadLoS32(a, e.inReg(row, ir.I32), ptx.Imm(h.Pitch), base))
	if !h.Swizzle {
		e.add(ptx.MadLoS32(a, e.inReg(col, ir.I32), ptx.Imm(es), a))
		return ptx.Addr{Base: a, Off: int64(h.Offset)}
	}
	bits := e.swizzleBits(row)
	c := e.reg(ir.I32)
	e.add(ptx.MulLoS32(c, e.inReg(col, ir.I32), ptx.Imm(es)))
	e.add(ptx.XorB32(c, c, bits))
	e.add(ptx.AddS32(a, a, c))
	return ptx.Addr{Base: a, Off: int64(h.Offset)}
}

// swizzleBits is the XOR a swizzled tile's row applies to its byte columns,
// (row & 7) << 4.
func (e *emitter) swizzleBits(row ptx.Operand) ptx.Operand {
	b := e.reg(ir.I32)
	e.add(ptx.ShlB32(b, e.inReg(row, ir.I32), ptx.Imm(4)))
	e.add(ptx.AndB32(b, b, ptx.Imm(0x70)))
	return b
}

// stageFragments stores each thread's accumulator fragments: the two adjacent
// columns of a fragment row go out as one 32-bit (bf16 pair) or 64-bit (f32 pair)
// store.
func (e *emitter) stageFragments(v *ir.Value, l, h decision.Layout) error {
	elem := v.Type.Elem
	es := elem.Size()
	rows, cols := e.rowsOf(v.Type.Shape[0], l), e.colsOf(v.Type.Shape[1], l)
	e.comment("stage %s from mma fragments -> shared[%d]", v, h.Offset)
	for mi := 0; mi < rows.n; mi++ {
		for ni := 0; ni < cols.n; ni++ {
			for half := 0; half < 2; half++ {
				x0, err := e.accElem(v, l, mi, ni, 2*half)
				if err != nil {
					return err
				}
				x1, err := e.accElem(v, l, mi, ni, 2*half+1)
				if err != nil {
					return err
				}
				addr := e.sharedAddr(e.smemOf(v), h, rows.idx[mi][half], cols.idx[ni][0], es)
				// Of the warps holding identical copies, one writes.
				first := e.firstCopy(l.Copies())
				switch es {
				case 2:
					p := e.reg(ir.I32)
					e.add(ptx.MovB32(p, ptx.Vec{e.inReg(x0, elem), e.inReg(x1, elem)}))
					e.addIf(first, false, ptx.StSharedB32(addr, p))
				case 4:
					e.addIf(first, false, ptx.StSharedV2(bitsSuffix(elem), addr, ptx.Vec{e.inReg(x0, elem), e.inReg(x1, elem)}))
				default:
					return fmt.Errorf("cannot stage %s fragments", elem)
				}
			}
		}
	}
	return nil
}

// stageComputed has the CTA compute every element of a recomputed tile (a
// dequantization, say) and store it: threads take runs of the budget's length
// round-robin (16 bytes, one vector store, where the row length allows).
func (e *emitter) stageComputed(v *ir.Value, h decision.Layout) ([]func(), error) {
	elem := v.Type.Elem
	es := elem.Size()
	R, C := v.Type.Shape[0], v.Type.Shape[1]
	vec, ok := e.d.Budget.StageRun[v]
	if !ok {
		return nil, fmt.Errorf("%s: no staging run decided (budget pass)", v)
	}
	e.comment("stage %s: %dx%d %s computed by the CTA -> shared[%d], %d elements per run", v, R, C, elem, h.Offset, vec)
	var stores []func()
	err := e.forRuns(R, C/vec, func(row, runIdx, live ptx.Operand) error {
		// The run coordinates are shared by every tile with the same split: never
		// written in place.
		col0 := runIdx
		if vec > 1 {
			col0 = e.reg(ir.I32)
			e.add(ptx.MulLoS32(col0, runIdx, ptx.Imm(vec)))
		}
		run, err := e.atRun(v, row, col0, vec)
		if err != nil {
			return err
		}
		addr := e.sharedAddr(e.smemOf(v), h, row, col0, es)
		var st *ptx.Instr
		switch {
		case vec == 1:
			st = ptx.StShared(memSuffix(elem), addr, e.inReg(run.elem(e, 0), elem))
		case es == 2:
			var packed ptx.Vec
			for j := 0; j < vec; j += 2 {
				packed = append(packed, run.pair(e, j/2))
			}
			st = ptx.StSharedV4B32(addr, packed)
		default:
			xs := make(ptx.Vec, vec)
			for j := range xs {
				xs[j] = e.inReg(run.elem(e, j), elem)
			}
			st = ptx.StSharedV4(bitsSuffix(elem), addr, xs)
		}
		stores = append(stores, func() { e.addIf(live, false, st) })
		return nil
	})
	return stores, err
}

// pendingStage is a computed tile whose values are in registers and whose shared
// stores are not yet emitted.
type pendingStage struct {
	v      *ir.Value
	stores []func()
}

// deferStage holds v's stores back until the next computed tile's loads and
// arithmetic are emitted (block flushes them before any op that touches shared
// memory or synchronizes), and emits the previous tile's now. ptxas keeps every ld.shared after an
// earlier st.shared it cannot prove disjoint, so storing each run as soon as it was
// computed left the next run's shared loads waiting behind it: the dequantization
// of a K tile ran as 14 serial load latencies.
func (e *emitter) deferStage(v *ir.Value, stores []func()) {
	e.flushStage()
	e.pending = &pendingStage{v: v, stores: stores}
}

// flushStage emits the pending tile's stores (before any op that touches shared
// memory, synchronizes or ends a block).
func (e *emitter) flushStage() {
	p := e.pending
	if p == nil {
		return
	}
	e.pending = nil
	e.beforeWrite(p.v)
	for _, st := range p.stores {
		st()
	}
	e.sync(decision.SyncWrote, p.v)
}

// emitsNothing reports whether o touches no shared memory and leaves no sync
// point where it stands: a recomputed value (evaluated at its uses) that is not
// staged, or a scalar (its operands are scalars too, so it reads no tile). A
// pending tile's stores may stay pending across it.
func (e *emitter) emitsNothing(o *ir.Op) bool {
	if len(o.Results) != 1 || o.Kind == ir.OpFor {
		return false
	}
	r := o.Result()
	_, staged := e.d.Staged[r]
	switch e.layout(r).Kind {
	case decision.Scalar:
		return true
	case decision.Expr:
		return o.Kind != ir.OpLoad && !staged
	}
	return false
}

// readsPending reports whether evaluating v may read the pending tile's shared
// home (v's recomputed chain reaches it).
func (e *emitter) readsPending(v *ir.Value) bool {
	if e.pending == nil {
		return false
	}
	seen := map[*ir.Value]bool{}
	var walk func(x *ir.Value) bool
	walk = func(x *ir.Value) bool {
		if x == e.pending.v {
			return true
		}
		if seen[x] || x.Def == nil || e.layout(x).Kind != decision.Expr {
			return false
		}
		seen[x] = true
		for _, a := range x.Def.Args {
			if walk(a) {
				return true
			}
		}
		return false
	}
	return walk(v)
}

// run is n adjacent elements of one row of a tile, as evaluated for staging. The
// elements may exist individually, as packed pairs (two 16-bit values in a b32) or
// as raw 32-bit words of 8-bit values; each form is made from another on demand.
type run struct {
	ty     ir.Elem       // element type
	elems  []ptx.Operand // per element, or nil
	pairs  []ptx.Operand // b32 per two 16-bit elements, or nil
	words  []ptx.Operand // b32 per four 8-bit elements, or nil
	halves []ptx.Operand // b16 per two 8-bit elements, or nil (a fragment pair's raw bytes)
}

func (r *run) elem(e *emitter, j int) ptx.Operand {
	if r.elems == nil {
		r.elems = make([]ptx.Operand, r.n())
	}
	if r.elems[j] != nil {
		return r.elems[j]
	}
	switch {
	case r.pairs != nil:
		lo, hi := e.reg(r.ty), e.reg(r.ty)
		e.add(ptx.MovB32(ptx.Vec{lo, hi}, r.pairs[j/2]))
		r.elems[j&^1], r.elems[j|1] = lo, hi
	case r.words != nil:
		w := r.words[j/4]
		for k := 0; k < 4; k++ {
			x := e.reg(ir.I32)
			e.add(ptx.ShrU32(x, w, ptx.Imm(8*k)))
			e.add(ptx.AndB32(x, x, ptx.Imm(255)))
			r.elems[j&^3+k] = x
		}
	case r.halves != nil:
		w := e.reg(ir.I32) // the pair twice: bytes 0 and 1 are the elements
		e.add(ptx.MovB32(w, ptx.Vec{r.halves[j/2], r.halves[j/2]}))
		for k := 0; k < 2; k++ {
			x := e.reg(ir.I32)
			e.add(ptx.ShrU32(x, w, ptx.Imm(8*k)))
			e.add(ptx.AndB32(x, x, ptx.Imm(255)))
			r.elems[j&^1+k] = x
		}
	}
	return r.elems[j]
}

func (r *run) n() int {
	switch {
	case r.elems != nil:
		return len(r.elems)
	case r.pairs != nil:
		return 2 * len(r.pairs)
	case r.halves != nil:
		return 2 * len(r.halves)
	}
	return 4 * len(r.words)
}

// pair returns elements 2i and 2i+1 packed in a b32 (low element in the low half).
func (r *run) pair(e *emitter, i int) ptx.Operand {
	if r.pairs != nil && r.pairs[i] != nil {
		return r.pairs[i]
	}
	p := e.reg(ir.I32)
	e.add(ptx.MovB32(p, ptx.Vec{e.inReg(r.elem(e, 2*i), r.ty), e.inReg(r.elem(e, 2*i+1), r.ty)}))
	return p
}

// atRun evaluates n adjacent elements (row, col0 .. col0+n-1) of v, using vector
// loads and paired conversions where the chain allows: 16-byte shared loads,
// cvt.rn.f16x2.e4m3x2 two bytes at a time, cvt.rn.bf16x2.f32 two floats at a time.
// Anything else is evaluated element by element.
func (e *emitter) atRun(v *ir.Value, row, col0 ptx.Operand, n int) (*run, error) {
	key := "run:" + v.Name + "@" + operandKey([]ptx.Operand{row, col0}) + fmt.Sprint("/", n)
	if x, ok := e.runCache[key]; ok {
		return x, nil
	}
	r, err := e.atRunUncached(v, row, col0, n)
	if err == nil {
		e.runCache[key] = r
	}
	return r, err
}

func (e *emitter) atRunUncached(v *ir.Value, row, col0 ptx.Operand, n int) (*run, error) {
	elem := v.Type.Elem
	es := elem.Size()
	r := &run{ty: elem}
	l := e.layout(v)
	o := v.Def
	if l.Kind == decision.Shared && !l.Trans && n == 2 && es == 1 {
		// Two bytes: the raw e4m3 pair of an mma fragment register (emit_dot's
		// computedPair).
		e.ready(v)
		e.noteRead(v)
		h := e.reg(ir.BF16)
		e.add(ptx.LdSharedB16(h, e.sharedAddr(e.smemOf(v), l, row, col0, es)))
		r.halves = []ptx.Operand{h}
		return r, nil
	}
	if l.Kind == decision.Shared && !l.Trans && (n*es == 4 || n*es == 8 || n*es == 16) && es <= 4 {
		e.ready(v)
		e.noteRead(v)
		addr := e.sharedAddr(e.smemOf(v), l, row, col0, es)
		words := make(ptx.Vec, n*es/4)
		for i := range words {
			words[i] = e.reg(ir.I32)
		}
		e.add(ldSharedWords(words, addr))
		switch es {
		case 1:
			r.words = words
		case 2:
			r.pairs = words
		default:
			r.elems = words
		}
		return r, nil
	}
	if o != nil && l.Kind == decision.Expr {
		switch {
		case o.Kind == ir.OpCast && o.Args[0].Type.Elem == ir.E4M3 && elem == ir.F32 && e.d.Target.FP8Convert && n%2 == 0:
			src, err := e.atRun(o.Args[0], row, col0, n)
			if err != nil {
				return nil, err
			}
			if src.halves != nil {
				r.elems = make([]ptx.Operand, n)
				for k, h := range src.halves {
					e.f16PairToF32(h, r.elems[2*k:2*k+2])
				}
				return r, nil
			}
			if src.words != nil {
				r.elems = make([]ptx.Operand, n)
				for w, word := range src.words {
					halves := [2]ptx.Reg{e.reg(ir.BF16), e.reg(ir.BF16)}
					e.add(ptx.MovB32(ptx.Vec{halves[0], halves[1]}, word))
					for k, h := range halves {
						e.f16PairToF32(h, r.elems[4*w+2*k:4*w+2*k+2])
					}
				}
				return r, nil
			}
		case o.Kind == ir.OpCast && o.Args[0].Type.Elem == ir.F32 && elem == ir.BF16 && n%2 == 0:
			src, err := e.atRun(o.Args[0], row, col0, n)
			if err != nil {
				return nil, err
			}
			r.pairs = make([]ptx.Operand, n/2)
			for i := range r.pairs {
				p := e.reg(ir.I32)
				e.add(ptx.CvtRnBf16x2F32(p, e.inReg(src.elem(e, 2*i+1), ir.F32), e.inReg(src.elem(e, 2*i), ir.F32)))
				r.pairs[i] = p
			}
			return r, nil
		case o.Kind.IsElementwise():
			args := make([]func(j int) (ptx.Operand, error), len(o.Args))
			for k, a := range o.Args {
				a := a
				switch {
				case a.Type.Kind != ir.Tile:
					x := e.scalar(a)
					args[k] = func(int) (ptx.Operand, error) { return x, nil }
				case a.Def != nil && a.Def.Kind == ir.OpBroadcast && a.Def.Int == 1 && e.layout(a).Kind == decision.Expr:
					// A row vector broadcast along the row: one value for the run.
					x, err := e.at(a, []ptx.Operand{row, col0})
					if err != nil {
						return nil, err
					}
					args[k] = func(int) (ptx.Operand, error) { return x, nil }
				default:
					sub, err := e.atRun(a, row, col0, n)
					if err != nil {
						return nil, err
					}
					args[k] = func(j int) (ptx.Operand, error) { return sub.elem(e, j), nil }
				}
			}
			r.elems = make([]ptx.Operand, n)
			for j := 0; j < n; j++ {
				in := make([]ptx.Operand, len(args))
				for k := range args {
					var err error
					if in[k], err = args[k](j); err != nil {
						return nil, err
					}
				}
				x, err := e.elem(o, in)
				if err != nil {
					return nil, err
				}
				r.elems[j] = x
			}
			return r, nil
		}
	}
	r.elems = make([]ptx.Operand, n)
	for j := 0; j < n; j++ {
		col := col0
		if j > 0 {
			c := e.reg(ir.I32)
			e.add(ptx.AddS32(c, col0, ptx.Imm(j)))
			col = c
		}
		x, err := e.at(v, []ptx.Operand{row, col})
		if err != nil {
			return nil, err
		}
		r.elems[j] = x
	}
	return r, nil
}

// f16PairToF32 converts two e4m3 bytes (a b16) to two f32 in out: cvt.rn.f16x2.e4m3x2
// is exact, and so is f16 to f32.
func (e *emitter) f16PairToF32(h ptx.Operand, out []ptx.Operand) {
	f16x2 := e.reg(ir.I32)
	e.add(ptx.CvtRnF16x2E4m3x2(f16x2, h))
	lo, hi := e.reg(ir.F16), e.reg(ir.F16)
	e.add(ptx.MovB32(ptx.Vec{lo, hi}, f16x2))
	for m, x := range []ptx.Reg{lo, hi} {
		f := e.reg(ir.F32)
		e.add(ptx.CvtF32F16(f, x))
		out[m] = f
	}
}

// stageVector computes a rank-1 tile once, element i by thread i (and i + the
// CTA size, ...), into shared memory; later uses read it from there.
func (e *emitter) stageVector(v *ir.Value, h decision.Layout) error {
	elem := v.Type.Elem
	n := v.Type.Shape[0]
	e.comment("stage %s: %d x %s computed once -> shared[%d]", v, n, elem, h.Offset)
	err := e.forRuns(n, 1, func(idx, _, live ptx.Operand) error {
		x, err := e.atUncached(v, []ptx.Operand{idx})
		if err != nil {
			return err
		}
		a := e.reg(ir.I32)
		e.add(ptx.MadLoS32(a, idx, ptx.Imm(h.Pitch), e.smem))
		e.addIf(live, false, ptx.StShared(memSuffix(elem), ptx.Addr{Base: a, Off: int64(h.Offset)}, e.inReg(x, elem)))
		return nil
	})
	if err != nil {
		return err
	}
	e.stagedDone[v] = true
	return nil
}
