package lower

import (
	"encoding/binary"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
)

// pickKernel walks 4 tiles of 16 rows in one pipelined loop, tiles 0-1 from
// list a and 2-3 from list b: each list is a buffer of rows (xa, xb) and the rows'
// indices (ia, ib, 32 each). The loop's indices are preloaded as one vector
// selected per position from the two lists, its rows read through a pointer
// selected per tile, and each CTA's scale through a pointer selected by its id;
// y is the scaled sum of the 4 tiles.
func pickKernel(width int) *ir.Builder {
	b := ir.NewBuilder("pick")
	b.SetGrid(2, 1, 1)
	b.SetWarps(4)
	ia := b.Param("ia", ir.PtrTo(ir.I32), 4, 32*4)
	ib := b.Param("ib", ir.PtrTo(ir.I32), 4, 32*4)
	xa := b.Param("xa", ir.PtrTo(ir.F32), 16, 0)
	xb := b.Param("xb", ir.PtrTo(ir.F32), 16, 0)
	y := b.Param("y", ir.PtrTo(ir.F32), 16, 0)
	pos := b.Iota(64)
	fromB := b.Cmp(ir.CmpGE, pos, b.I32(32))
	inA := b.Load1(ia, pos, b.Cmp(ir.CmpLT, pos, b.I32(32)))
	inB := b.Load1(ib, b.Sub(pos, b.I32(32)), fromB)
	ids := b.Select(fromB, inB, inA)
	b.Name(ids, "ids")
	pid := b.ProgramID(0)
	scale := b.Load1(b.Select(b.Cmp(ir.CmpGE, pid, b.I32(1)), xb, xa), b.I32(0), nil)
	acc := b.ConstFloat(0, ir.TileOf(ir.F32, 16, width))
	acc = b.ForStages(b.I32(0), b.I32(4), 1, 2, []*ir.Value{acc}, func(j *ir.Value, st []*ir.Value) []*ir.Value {
		rows := b.Slice(ids, b.Mul(j, b.I32(16)), 16)
		x := b.Select(b.Cmp(ir.CmpGE, j, b.I32(2)), xb, xa)
		t := b.Load2(x, b.Mul(b.Cast(rows, ir.I64), b.I64(int64(width))), b.I64(0), width, nil, nil)
		return []*ir.Value{b.Add(st[0], t)}
	})[0]
	out := b.Add(b.Mul(b.Cast(pid, ir.I64), b.I64(16*int64(width))), b.Mul(b.Cast(b.Iota(16), ir.I64), b.I64(int64(width))))
	b.Store2(y, out, b.I64(0), nil, nil, b.Mul(acc, scale))
	return b
}

// TestPointerSelect: loads through pointers selected per tile and per CTA read the
// buffer the condition names (emulator against a float32 reference, summed in
// the kernel's order), keep the parameters' alignment (16-byte cp.async) and
// read-only loads (ld.global.nc), and a vector read only through slices is
// computed once into shared memory, its two source loads with no home of their
// own.
func TestPointerSelect(t *testing.T) {
	const width, rowsA, rowsB = 32, 40, 24
	seed := uint64(7)
	rng := rand.New(rand.NewPCG(seed, 1))
	xa := randomRows(rng, rowsA*width, 2)
	xb := randomRows(rng, rowsB*width, 2)
	idx := func(n, rows int) []byte {
		raw := make([]byte, 4*n)
		for i := range n {
			binary.LittleEndian.PutUint32(raw[4*i:], uint32(rng.IntN(rows)))
		}
		return raw
	}
	ia, ib := idx(32, rowsA), idx(32, rowsB)
	bufs := f32Buffers(map[string][]float32{"xa": xa, "xb": xb, "y": make([]float32, 2*16*width)})
	bufs["ia"], bufs["ib"] = ia, ib
	got, pk := runUserKernelBytes(t, pickKernel(width), "sm_90", bufs, nil)
	want := make([]float64, len(got))
	for cta := range 2 {
		scale := map[bool]float32{false: xa[0], true: xb[0]}[cta >= 1]
		for r := range 16 {
			for c := range width {
				var sum float32
				for j := range 4 {
					list, x := ia, xa
					if j >= 2 {
						list, x = ib, xb
					}
					row := binary.LittleEndian.Uint32(list[4*((j%2)*16+r):])
					sum += x[int(row)*width+c]
				}
				want[(cta*16+r)*width+c] = float64(sum * scale)
			}
		}
	}
	compare(t, "pick", seed, got, want, 0, 0)
	text := pk.Module.Print()
	for _, s := range []string{"selp.b64", "cp.async.cg.shared.global", "ld.global.nc.f32", "// stage %ids: 64 x i32 computed once", "// pipeline: 2 stages"} {
		if !strings.Contains(text, s) {
			t.Errorf("PTX lacks %q", s)
		}
	}
	if n := strings.Count(text, "// stage "); n != 1 {
		t.Errorf("%d staged values, want 1 (the selected indices, not the loads they come from)", n)
	}
}
