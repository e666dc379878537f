package emit

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

// store writes a tile (or scalar) through a pointer. Each element is written by
// the one thread that holds it; row masks and column bounds become predicates.
func (e *emitter) store(o *ir.Op) error {
	m := ir.MemOperands(o)
	v := m.Val
	l := e.layout(v)
	elem := v.Type.Elem
	base := e.scalar(m.Ptr)
	switch {
	case l.Kind == decision.Acc:
		rows, cols := e.rowsOf(v.Type.Shape[0], l), e.colsOf(v.Type.Shape[1], l)
		col0 := e.toI64(e.scalar(m.Col0), m.Col0.Type.Elem)
		// A thread's two elements of a fragment row, columns 2t and 2t+1, go out in
		// one store where the budget pass says so.
		w, ok := e.d.Budget.StoreBytes[o]
		if !ok {
			return fmt.Errorf("%s: no store width decided (budget pass)", o)
		}
		paired := w == 2*elem.Size()
		var bound ptx.Operand
		if m.Bound != nil {
			bound = e.scalar(m.Bound)
		}
		// inBounds is rowOK and, under a column bound, col < bound.
		inBounds := func(rowOK, col ptx.Operand) ptx.Operand {
			if bound == nil {
				return rowOK
			}
			p := e.reg(ir.I1)
			e.add(ptx.SetpLtS32(p, col, bound))
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
				addrKey := fmt.Sprintf("frag-store %s %s %s %s ", m.Ptr.Name, m.Offs.Name, operandKey([]ptx.Operand{c0}), operandKey([]ptx.Operand{row}))
				e.pushScope()
				rowBase, haveBase := e.cached(addrKey + "row")
				if !haveBase {
					rowOff, err := e.at(m.Offs, []ptx.Operand{row})
					if err != nil {
						return err
					}
					rowBase = e.elemAddr(base, e.add64(e.toI64(rowOff, m.Offs.Type.Elem), c0), elem.Size())
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
				if m.Mask != nil {
					var err error
					if rowOK, err = e.at(m.Mask, []ptx.Operand{row}); err != nil {
						return err
					}
				}
				// Of the warps holding identical copies, one writes.
				rowOK = e.andPred(rowOK, e.firstCopy(l.Copies()))
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
							e.addIf(guardOf(ok), false, ptx.StGlobalV2(memSuffix(elem), addr, ptx.Vec{e.inReg(lo, elem), e.inReg(hi, elem)}))
						} else {
							w := e.reg(ir.I32)
							e.add(ptx.MovB32(w, ptx.Vec{e.inReg(lo, elem), e.inReg(hi, elem)}))
							e.addIf(guardOf(ok), false, ptx.StGlobalB32(addr, w))
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
						e.addIf(guardOf(ok), false, ptx.StGlobal(memSuffix(elem), ptx.Addr{Base: colAddr(ni, j), Off: immOff}, e.inReg(x, elem)))
					}
				}
				e.popScope()
			}
		}
		return nil
	case l.Kind == decision.Rows && m.Col0 == nil:
		rows := e.rowsOf(v.Type.Shape[0], l)
		writer := e.rowWriter(l)
		for mi := 0; mi < rows.n; mi++ {
			for h := 0; h < 2; h++ {
				row := rows.idx[mi][h]
				if err := e.storeElem(o, m, row, writer, func() (ptx.Operand, error) { return e.vecElem(v, l, mi, h) }); err != nil {
					return err
				}
			}
		}
		return nil
	case l.Kind == decision.Threads && m.Col0 == nil:
		// Element tid + k x threads by its thread; threads past the end store nothing.
		n := v.Type.Shape[0]
		for k := 0; k < e.threadElems(n); k++ {
			rc := e.runCoordsOf(k, n, 1)
			var live ptx.Operand
			if (k+1)*e.nthreads > n {
				live = e.reg(ir.I1)
				e.add(ptx.SetpLtU32(live, rc.run, ptx.Imm(n)))
			}
			if err := e.storeElem(o, m, rc.row, live, func() (ptx.Operand, error) { return e.threadElem(v, k, n) }); err != nil {
				return err
			}
		}
		return nil
	case l.Kind == decision.Cols && m.Col0 == nil:
		// Every row lane (g) and every row group holds the column; lane g = 0 of
		// the first row group's warps writes it.
		cols := e.colsOf(v.Type.Shape[0], l)
		writer := e.reg(ir.I1)
		e.add(ptx.SetpEqS32(writer, e.g, ptx.Imm(0)))
		if l.WM*l.Copies() > 1 {
			first := e.reg(ir.I1)
			e.add(ptx.SetpLtU32(first, e.warp, ptx.Imm(l.WN)))
			e.add(ptx.AndPred(writer, writer, first))
		}
		for ni := 0; ni < cols.n; ni++ {
			for h := 0; h < 2; h++ {
				if err := e.storeElem(o, m, cols.idx[ni][h], writer, func() (ptx.Operand, error) { return e.vecElem(v, l, ni, h) }); err != nil {
					return err
				}
			}
		}
		return nil
	case (l.Kind == decision.Expr || l.Kind == decision.Shared) && m.Col0 != nil:
		return e.storeTile(o)
	case (l.Kind == decision.Expr || l.Kind == decision.Scalar) && m.Col0 == nil:
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
func (e *emitter) storeElem(o *ir.Op, m ir.MemOps, idx, guard ptx.Operand, val func() (ptx.Operand, error)) error {
	e.pushScope()
	defer e.popScope()
	off, err := e.at(m.Offs, []ptx.Operand{idx})
	if err != nil {
		return err
	}
	ok := guard
	if m.Mask != nil {
		mk, err := e.at(m.Mask, []ptx.Operand{idx})
		if err != nil {
			return err
		}
		ok = e.andPred(mk, guard)
	}
	x, err := val()
	if err != nil {
		return err
	}
	elem := m.Val.Type.Elem
	addr := e.elemAddr(e.scalar(m.Ptr), e.toI64(off, m.Offs.Type.Elem), elem.Size())
	e.addIf(guardOf(ok), false, ptx.StGlobal(memSuffix(elem), ptx.Addr{Base: addr}, e.inReg(x, elem)))
	return nil
}

// storeTile writes a rank-2 tile held in shared memory or recomputed per element:
// the CTA takes runs of 16 bytes of a row round-robin (like staging), and a run
// goes out as one 16-byte store where the budget pass says so; otherwise element by
// element.
func (e *emitter) storeTile(o *ir.Op) error {
	m := ir.MemOperands(o)
	v := m.Val
	elem := v.Type.Elem
	es := elem.Size()
	R, C := v.Type.Shape[0], v.Type.Shape[1]
	vec := 16 / es
	if C%vec != 0 || es > 4 {
		vec = 1
	}
	w, ok := e.d.Budget.StoreBytes[o]
	if !ok {
		return fmt.Errorf("%s: no store width decided (budget pass)", o)
	}
	whole := vec > 1 && w == 16
	base := e.scalar(m.Ptr)
	col0g := e.toI64(e.scalar(m.Col0), m.Col0.Type.Elem)
	e.comment("store %s: %dx%d %s, runs of %d, whole 16-byte stores: %v", v, R, C, elem, vec, whole)
	return e.forRuns(R, C/vec, func(row, runIdx, live ptx.Operand) error {
		col := runIdx
		if vec > 1 {
			col = e.reg(ir.I32)
			e.add(ptx.MulLoS32(col, runIdx, ptx.Imm(vec)))
		}
		rowOff, err := e.at(m.Offs, []ptx.Operand{row})
		if err != nil {
			return err
		}
		ok := live
		if m.Mask != nil {
			mk, err := e.at(m.Mask, []ptx.Operand{row})
			if err != nil {
				return err
			}
			ok = e.andPred(ok, mk)
		}
		run, err := e.atRun(v, row, col, vec)
		if err != nil {
			return err
		}
		rowAddr := e.elemAddr(base, e.add64(e.toI64(rowOff, m.Offs.Type.Elem), col0g), es)
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
					e.add(ptx.AndB32(w, e.inReg(run.elem(e, j), elem), ptx.Imm(255)))
					for k := 1; k < 4; k++ {
						b := e.reg(ir.I32)
						e.add(ptx.AndB32(b, e.inReg(run.elem(e, j+k), elem), ptx.Imm(255)))
						e.add(ptx.ShlB32(b, b, ptx.Imm(8*k)))
						e.add(ptx.OrB32(w, w, b))
					}
					words = append(words, w)
				}
			}
			addr := e.elemAddr(rowAddr, e.toI64(col, ir.I32), es)
			e.addIf(guardOf(ok), false, ptx.StGlobalV4B32(ptx.Addr{Base: addr}, words))
		} else {
			for j := 0; j < vec; j++ {
				cj := ptx.Operand(col)
				if j > 0 {
					c := e.reg(ir.I32)
					e.add(ptx.AddS32(c, col, ptx.Imm(j)))
					cj = c
				}
				okj := ok
				if m.Bound != nil {
					p := e.reg(ir.I1)
					e.add(ptx.SetpLtS32(p, cj, e.scalar(m.Bound)))
					okj = e.andPred(okj, p)
				}
				addr := e.elemAddr(rowAddr, e.toI64(cj, ir.I32), es)
				e.addIf(guardOf(okj), false, ptx.StGlobal(memSuffix(elem), ptx.Addr{Base: addr}, e.inReg(run.elem(e, j), elem)))
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
	e.add(ptx.AndPred(p, e.inReg(a, ir.I1), e.inReg(b, ir.I1)))
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
	e.add(ptx.SetpEqS32(p, r, ptx.Imm(0)))
	e.cache[len(e.cache)-1][key] = p
	return p
}
