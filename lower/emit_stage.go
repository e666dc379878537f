package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
)

// stage writes a recomputed or fragment tile into its shared home (see fn.stage).
func (e *emitter) stage(v *ir.Value) error {
	h := e.f.staged[v]
	e.beforeWrite(v)
	var err error
	switch l := e.layout(v); l.kind {
	case lAcc:
		err = e.stageFragments(v, l, h)
	case lExpr:
		err = e.stageComputed(v, h)
	default:
		err = fmt.Errorf("cannot stage %s from %v", v, l)
	}
	e.pendingWrites = true
	return err
}

// sharedAddr returns the address of element (row, col) of an array at h.
func (e *emitter) sharedAddr(h layout, row, col ptx.Operand, es int) ptx.Addr {
	a := e.reg(ir.I32)
	e.ins("mad.lo.s32", a, e.inReg(row, ir.I32), ptx.Imm(h.pitch), e.smem)
	e.ins("mad.lo.s32", a, e.inReg(col, ir.I32), ptx.Imm(es), a)
	return ptx.Addr{Base: a, Off: int64(h.offset)}
}

// stageFragments stores each thread's accumulator fragments: the two adjacent
// columns of a fragment row go out as one 32-bit (bf16 pair) or 64-bit (f32 pair)
// store.
func (e *emitter) stageFragments(v *ir.Value, l, h layout) error {
	elem := v.Type.Elem
	es := elem.Size()
	rows, cols := e.rowsOf(v.Type.Shape[0], l), e.colsOf(v.Type.Shape[1], l)
	e.comment("stage %s from mma fragments -> shared[%d]", v, h.offset)
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
				addr := e.sharedAddr(h, rows.idx[mi][half], cols.idx[ni][0], es)
				switch es {
				case 2:
					p := e.reg(ir.I32)
					e.ins("mov.b32", p, ptx.Vec{e.inReg(x0, elem), e.inReg(x1, elem)})
					e.ins("st.shared.b32", addr, p)
				case 4:
					e.ins("st.shared.v2."+bitsSuffix(elem), addr, ptx.Vec{e.inReg(x0, elem), e.inReg(x1, elem)})
				default:
					return fmt.Errorf("cannot stage %s fragments", elem)
				}
			}
		}
	}
	return nil
}

// stageComputed has the CTA compute every element of a recomputed tile (a
// dequantization, say) and store it: threads take runs of 16 bytes round-robin, so
// each thread writes whole 16-byte vectors when the row length allows.
func (e *emitter) stageComputed(v *ir.Value, h layout) error {
	elem := v.Type.Elem
	es := elem.Size()
	R, C := v.Type.Shape[0], v.Type.Shape[1]
	vec := 16 / es
	if C%vec != 0 || (es != 2 && es != 4) {
		vec = 1
	}
	cpr := C / vec
	total := R * cpr
	per := (total + e.nthreads - 1) / e.nthreads
	e.comment("stage %s: %dx%d %s computed by the CTA -> shared[%d], %d elements per run", v, R, C, elem, h.offset, vec)
	for i := 0; i < per; i++ {
		chunk := e.reg(ir.I32)
		e.ins("add.s32", chunk, e.tid, ptx.Imm(i*e.nthreads))
		row := e.reg(ir.I32)
		e.ins("div.u32", row, chunk, ptx.Imm(cpr))
		var live ptx.Operand
		if (i+1)*e.nthreads > total {
			live = e.reg(ir.I1)
			e.ins("setp.lt.u32", live, chunk, ptx.Imm(total))
			e.ins("min.u32", row, row, ptx.Imm(R-1))
		}
		col0 := e.reg(ir.I32)
		e.ins("rem.u32", col0, chunk, ptx.Imm(cpr))
		if vec > 1 {
			e.ins("mul.lo.s32", col0, col0, ptx.Imm(vec))
		}
		e.pushScope()
		xs := make([]ptx.Operand, vec)
		for j := 0; j < vec; j++ {
			col := ptx.Operand(col0)
			if j > 0 {
				c := e.reg(ir.I32)
				e.ins("add.s32", c, col0, ptx.Imm(j))
				col = c
			}
			x, err := e.at(v, []ptx.Operand{row, col})
			if err != nil {
				return err
			}
			xs[j] = e.inReg(x, elem)
		}
		addr := e.sharedAddr(h, row, col0, es)
		switch {
		case vec == 1:
			e.insIf(live, false, "st.shared."+memSuffix(elem), addr, xs[0])
		case es == 2:
			var packed ptx.Vec
			for j := 0; j < vec; j += 2 {
				p := e.reg(ir.I32)
				e.ins("mov.b32", p, ptx.Vec{xs[j], xs[j+1]})
				packed = append(packed, p)
			}
			e.insIf(live, false, "st.shared.v4.b32", addr, packed)
		default:
			e.insIf(live, false, "st.shared.v4."+bitsSuffix(elem), addr, ptx.Vec(xs))
		}
		e.popScope()
	}
	return nil
}
