// Package testkernels holds small kernels that tests of several packages launch (the
// emulator's and the GPU runtime's), so that both run the same one.
package testkernels

import (
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// RowsFill is a kernel whose grid's y is its rows argument (capacity 8), lowered for
// sm_80: CTA t writes t+1 to out[t], so the rows of a call are exactly the elements
// written.
func RowsFill() (*ptx.Kernel, error) {
	b := ir.NewBuilder("rows_fill")
	b.SetGrid(1, 8, 1)
	b.BindGrid(1, b.Param("rows", ir.ScalarOf(ir.I32), 1, 0))
	out := b.ParamRows("out", ir.PtrTo(ir.F32), 4, 4)
	row := b.ProgramID(1)
	b.Store1(out, b.Cast(row, ir.I64), nil, b.Cast(b.Add(row, b.I32(1)), ir.F32))
	k, err := b.Finish()
	if err != nil {
		return nil, err
	}
	res, err := lower.Compile(k, target.MustLookup("sm_80"), lower.Options{})
	if err != nil {
		return nil, err
	}
	return res.Kernel, nil
}
