package emit

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

// stageRows writes a rows vector to its rank-1 shared home (stageRowViews), for
// a consumer split over other row groups, one writer per row (rowWriter), as a
// rows vector is stored to global memory.
func (e *emitter) stageRows(v *ir.Value, l, h decision.Layout) error {
	if v.Type.Elem.Size() != 4 && v.Type.Elem != ir.I1 {
		return fmt.Errorf("cannot stage a rows vector of %s", v.Type.Elem)
	}
	rows := e.rowsOf(v.Type.Shape[0], l)
	e.comment("stage %s: rows of %d row groups -> shared[%d], for a tile split over other row groups", v, l.WM, h.Offset)
	writer := e.rowWriter(l)
	for i := 0; i < rows.n; i++ {
		for half := 0; half < 2; half++ {
			x, err := e.vecElem(v, l, i, half)
			if err != nil {
				return err
			}
			a := e.reg(ir.I32)
			e.add(ptx.MadLoS32(a, rows.idx[i][half], ptx.Imm(h.Pitch), e.smem))
			val, ty := e.inReg(x, v.Type.Elem), memSuffix(v.Type.Elem)
			if v.Type.Elem == ir.I1 { // a predicate goes out as a 32-bit 0 or 1
				w := e.reg(ir.I32)
				e.add(ptx.SelpB32(w, ptx.Imm(1), ptx.Imm(0), val))
				val, ty = w, "b32"
			}
			e.addIf(writer, false, ptx.StShared(ty, ptx.Addr{Base: a, Off: int64(h.Offset)}, val))
		}
	}
	e.stagedDone[v] = true
	return nil
}

// rowWriter is the predicate of the one thread that writes each row of a rows
// vector in l: every lane of a quad and every warp of a row group holds the same
// value; the quad's first lane in the row group's first warp writes it.
func (e *emitter) rowWriter(l decision.Layout) ptx.Operand {
	writer := e.reg(ir.I1)
	e.add(ptx.SetpEqS32(writer, e.t, ptx.Imm(0)))
	if first := e.firstCopy(l.RowGroupWarps()); first != nil {
		e.add(ptx.AndPred(writer, writer, first))
	}
	return writer
}

// rowFromShared is row row's value of a staged rows vector (stageRows): one
// ld.shared per row, cached for the open scope like a recomputed element.
func (e *emitter) rowFromShared(v *ir.Value, row ptx.Operand) (ptx.Operand, error) {
	if !e.stagedDone[v] {
		return nil, fmt.Errorf("%s (%v) is read by a tile split over other row groups before it is written to shared memory", v, e.layout(v))
	}
	return e.at(v, []ptx.Operand{row})
}
