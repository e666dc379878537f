package emit

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

// coords are the coordinates this thread holds along one dimension of an Acc tile:
// idx[i][h] for its i-th m16 (or n8) tile; h picks row g or g+8 (or column 2t or 2t+1).
type coords struct {
	n    int
	base ptx.Operand // first row (column) of this warp's share
	idx  [][2]ptx.Operand
}

// rowsOf returns the row coordinates of a tile with rows rows split over l's warps.
// Coordinates are computed at first use in the open scope and reused by the code
// that scope dominates (forgotten after a loop: see forgetThreadCoords).
func (e *emitter) rowsOf(rows int, l decision.Layout) *coords {
	return e.coordsOf(true, rows, l)
}

// colsOf returns the column coordinates.
func (e *emitter) colsOf(cols int, l decision.Layout) *coords {
	return e.coordsOf(false, cols, l)
}

func (e *emitter) coordsOf(isRow bool, extent int, l decision.Layout) *coords {
	key := [5]int{0, extent, l.WM, l.WN, l.Copies()}
	perm := !isRow && l.Perm
	switch {
	case perm:
		key[0] = 2
	case !isRow:
		key[0] = 1
	}
	for i := len(e.coordScopes) - 1; i >= 0; i-- {
		if c, ok := e.coordScopes[i][key]; ok {
			return c
		}
	}
	c := &coords{}
	var warpPos ptx.Operand
	var span int
	if isRow {
		c.n = extent / decision.GranuleM / l.WM
		span = c.n * decision.GranuleM
		warpPos = e.warp
		if g := l.RowGroupWarps(); g > 1 {
			r := e.reg(ir.I32)
			e.divRemU32(ir.OpDiv, r, e.warp, g)
			warpPos = r
		}
	} else {
		c.n = extent / decision.GranuleN / l.WN
		span = c.n * decision.GranuleN
		warpPos = ptx.Imm(0)
		if l.WN > 1 {
			r := e.reg(ir.I32)
			e.divRemU32(ir.OpRem, r, e.warp, l.WN)
			warpPos = r
		}
	}
	if w, ok := warpPos.(ptx.Imm); ok {
		c.base = ptx.Imm(int64(w) * int64(span))
	} else {
		b := e.reg(ir.I32)
		e.add(ptx.MulLoS32(b, warpPos, ptx.Imm(span)))
		c.base = b
	}
	c.idx = make([][2]ptx.Operand, c.n)
	for i := 0; i < c.n; i++ {
		for h := 0; h < 2; h++ {
			r := e.reg(ir.I32)
			switch {
			case isRow:
				// row = base + 16i + 8h + g
				e.add(ptx.AddS32(r, e.g, ptx.Imm(i*decision.GranuleM+8*h)))
			case perm:
				// kperm: column = base + 16(i/2) + 4t + 2(i%2) + h
				e.add(ptx.ShlB32(r, e.t, ptx.Imm(2)))
				e.add(ptx.AddS32(r, r, ptx.Imm(16*(i/2)+2*(i%2)+h)))
			default:
				// column = base + 8i + 2t + h
				e.add(ptx.ShlB32(r, e.t, ptx.Imm(1)))
				e.add(ptx.AddS32(r, r, ptx.Imm(i*decision.GranuleN+h)))
			}
			if b, ok := c.base.(ptx.Imm); !ok || b != 0 {
				e.add(ptx.AddS32(r, r, c.base))
			}
			c.idx[i][h] = r
		}
	}
	e.coordScopes[len(e.coordScopes)-1][key] = c
	return c
}

// accShapeOf is the padded shape an Rows/Cols vector's coordinates refer to.
func accShapeOf(v *ir.Value, l decision.Layout) []int {
	if l.Kind == decision.Rows {
		return []int{v.Type.Shape[0], decision.GranuleN * l.WN}
	}
	return []int{decision.GranuleM * l.WM, v.Type.Shape[0]}
}

// accElem returns element c of this thread's (mi, ni) m16n8 tile of v, where v is
// used by an op distributed as l.
func (e *emitter) accElem(v *ir.Value, l decision.Layout, mi, ni, c int) (ptx.Operand, error) {
	if x, ok := e.v[v]; ok && x.acc != nil {
		return x.acc[mi][ni][c], nil
	}
	vl := e.layout(v)
	switch {
	case v.Type.Kind != ir.Tile:
		return e.scalar(v), nil
	case vl.Kind == decision.Acc && v.Def != nil && v.Def.Kind == ir.OpBroadcast:
		src := v.Def.Args[0]
		sl := e.layout(src)
		if sl.Kind == decision.Rows && e.d.RowElsewhere(src, l, e.roleName()) {
			// Other row groups or warps: this thread's rows are not the ones it holds.
			return e.rowFromShared(src, e.rowsOf(v.Type.Shape[0], l).idx[mi][c>>1])
		}
		if sl.Kind == decision.Rows {
			return e.vecElem(src, sl, mi, c>>1)
		}
		return e.vecElem(src, sl, ni, c&1)
	case vl.Kind == decision.Expr || vl.Kind == decision.Shared:
		rows, cols := e.rowsOf(v.Type.Shape[0], l), e.colsOf(v.Type.Shape[1], l)
		return e.at(v, []ptx.Operand{rows.idx[mi][c>>1], cols.idx[ni][c&1]})
	}
	return nil, fmt.Errorf("%s (%v) has no registers here", v, vl)
}

// vecElem returns element (i, h) of an Rows or Cols vector v used by an op
// distributed as l.
func (e *emitter) vecElem(v *ir.Value, l decision.Layout, i, h int) (ptx.Operand, error) {
	if x, ok := e.v[v]; ok && x.vec != nil {
		return x.vec[i][h], nil
	}
	vl := e.layout(v)
	switch {
	case v.Type.Kind != ir.Tile:
		return e.scalar(v), nil
	case vl.Kind == decision.Expr:
		var c *coords
		if l.Kind == decision.Rows {
			c = e.rowsOf(v.Type.Shape[0], l)
		} else {
			c = e.colsOf(v.Type.Shape[0], l)
		}
		return e.at(v, []ptx.Operand{c.idx[i][h]})
	}
	return nil, fmt.Errorf("%s (%v) has no registers here", v, vl)
}

func (e *emitter) accElementwise(o *ir.Op) error {
	r := o.Result()
	l := e.layout(r)
	mt, nt := r.Type.Shape[0]/decision.GranuleM/l.WM, r.Type.Shape[1]/decision.GranuleN/l.WN
	out := &vals{acc: make([][][4]ptx.Operand, mt)}
	for mi := 0; mi < mt; mi++ {
		out.acc[mi] = make([][4]ptx.Operand, nt)
		for ni := 0; ni < nt; ni++ {
			for c := 0; c < 4; c++ {
				args := make([]ptx.Operand, len(o.Args))
				for k, a := range o.Args {
					var err error
					if args[k], err = e.accElem(a, l, mi, ni, c); err != nil {
						return err
					}
				}
				x, err := e.elem(o, args)
				if err != nil {
					return err
				}
				out.acc[mi][ni][c] = e.inReg(x, r.Type.Elem)
			}
		}
	}
	e.v[r] = out
	return nil
}

func (e *emitter) vecElementwise(o *ir.Op) error {
	r := o.Result()
	l := e.layout(r)
	n := r.Type.Shape[0] / decision.GranuleM / l.WM
	if l.Kind == decision.Cols {
		n = r.Type.Shape[0] / decision.GranuleN / l.WN
	}
	out := &vals{vec: make([][2]ptx.Operand, n)}
	for i := 0; i < n; i++ {
		for h := 0; h < 2; h++ {
			args := make([]ptx.Operand, len(o.Args))
			for k, a := range o.Args {
				var err error
				if args[k], err = e.vecElem(a, l, i, h); err != nil {
					return err
				}
			}
			x, err := e.elem(o, args)
			if err != nil {
				return err
			}
			out.vec[i][h] = e.inReg(x, r.Type.Elem)
		}
	}
	e.v[r] = out
	return nil
}

// reduce combines an Acc tile along one axis: first inside the thread, then across
// the lanes that share a row (xor 1, 2) or a column (xor 4, 8, 16) with shfl.sync.
func (e *emitter) reduce(o *ir.Op) error {
	x := o.Args[0]
	sl := e.d.ReduceSources[o]
	r := o.Result()
	mt, nt := x.Type.Shape[0]/decision.GranuleM/sl.WM, x.Type.Shape[1]/decision.GranuleN/sl.WN
	combine := func(a, b ptx.Operand) ptx.Operand {
		d := e.reg(ir.F32)
		if o.Pred == "max" {
			e.add(ptx.MaxF32(d, a, b))
		} else {
			e.add(ptx.AddRnF32(d, a, b))
		}
		return d
	}
	outer, inner := mt, nt
	lanes := []int{1, 2}
	if o.Int == 0 {
		outer, inner = nt, mt
		lanes = []int{4, 8, 16}
	}
	out := &vals{vec: make([][2]ptx.Operand, outer)}
	for i := 0; i < outer; i++ {
		for h := 0; h < 2; h++ {
			var acc ptx.Operand
			for j := 0; j < inner; j++ {
				for s := 0; s < 2; s++ {
					mi, ni, c := i, j, 2*h+s
					if o.Int == 0 {
						mi, ni, c = j, i, 2*s+h
					}
					v, err := e.accElem(x, sl, mi, ni, c)
					if err != nil {
						return err
					}
					if acc == nil {
						acc = v
					} else {
						acc = combine(acc, v)
					}
				}
			}
			for _, lane := range lanes {
				t := e.reg(ir.F32)
				e.add(ptx.ShflSyncBflyB32(t, e.inReg(acc, ir.F32), ptx.Imm(lane), ptx.Imm(31), ptx.Imm(-1)))
				acc = combine(acc, t)
			}
			out.vec[i][h] = acc
		}
	}
	if off, ok := e.d.Scratch[r]; ok {
		if err := e.reduceAcrossWarps(o, out, off); err != nil {
			return err
		}
	}
	e.v[r] = out
	return nil
}

// reduceAcrossWarps finishes a reduction whose axis is split over warps: one lane
// per row (column) and warp writes its partial to shared scratch [warps][extent],
// and after a barrier every thread combines the partials in warp order, so all
// warps hold the same result.
func (e *emitter) reduceAcrossWarps(o *ir.Op, out *vals, off int) error {
	x, r := o.Args[0], o.Result()
	sl := e.d.ReduceSources[o]
	extent := x.Type.Shape[1-int(o.Int)]
	var c *coords
	var parts int
	var who, lanePos ptx.Operand
	if o.Int == 1 {
		c, parts = e.rowsOf(extent, sl), sl.WN
		who, lanePos = e.t, e.reg(ir.I32)
		e.divRemU32(ir.OpRem, lanePos, e.warp, sl.WN)
	} else {
		c, parts = e.colsOf(extent, sl), sl.WM
		who, lanePos = e.g, e.reg(ir.I32)
		e.divRemU32(ir.OpDiv, lanePos, e.warp, sl.WN)
	}
	writer := e.reg(ir.I1)
	e.add(ptx.SetpEqS32(writer, who, ptx.Imm(0)))
	e.comment("%s: combine partials of %d warps through shared[%d]", r, parts, off)
	e.beforeWrite(r)
	base := e.reg(ir.I32)
	e.add(ptx.MadLoS32(base, lanePos, ptx.Imm(extent*4), e.smem))
	for i := range out.vec {
		for h := 0; h < 2; h++ {
			a := e.reg(ir.I32)
			e.add(ptx.MadLoS32(a, c.idx[i][h], ptx.Imm(4), base))
			e.addIf(writer, false, ptx.StSharedF32(ptx.Addr{Base: a, Off: int64(off)}, e.inReg(out.vec[i][h], ir.F32)))
		}
	}
	e.sync(decision.SyncWrote, r)
	e.ready(r)
	for i := range out.vec {
		for h := 0; h < 2; h++ {
			a := e.reg(ir.I32)
			e.add(ptx.MadLoS32(a, c.idx[i][h], ptx.Imm(4), e.smem))
			var acc ptx.Operand
			for w := 0; w < parts; w++ {
				x := e.reg(ir.F32)
				e.add(ptx.LdSharedF32(x, ptx.Addr{Base: a, Off: int64(off + w*extent*4)}))
				if acc == nil {
					acc = x
					continue
				}
				d := e.reg(ir.F32)
				if o.Pred == "max" {
					e.add(ptx.MaxF32(d, acc, x))
				} else {
					e.add(ptx.AddRnF32(d, acc, x))
				}
				acc = d
			}
			out.vec[i][h] = acc
		}
	}
	e.noteRead(r)
	return nil
}

// laneOffset returns (and caches) a per-lane byte offset register.
func (e *emitter) laneOffset(key string, build func() ptx.Operand) ptx.Operand {
	if x, ok := e.cached("lane:" + key); ok {
		return x
	}
	x := build()
	e.cache[len(e.cache)-1]["lane:"+key] = x
	return x
}

// ldmatrixLaneOffset is lane l's byte offset inside a 16x16 (x4) or 16x8 (x2) block
// of a row-major shared tile: the lane supplies row rowOf(l) at column colOf(l),
// whose 16-byte chunk is XORed by (row & 7) in a swizzled tile.
func (e *emitter) ldmatrixLaneOffset(pitch int, kind string, swizzled bool) ptx.Operand {
	key := fmt.Sprintf("%s/%d", kind, pitch)
	if swizzled {
		key += "/swizzled"
	}
	return e.laneOffset(key, func() ptx.Operand {
		row, col := e.ldmatrixLaneRowCol(kind)
		if swizzled {
			e.add(ptx.XorB32(col, col, e.swizzleBits(row)))
		}
		off := e.reg(ir.I32)
		e.add(ptx.MadLoS32(off, row, ptx.Imm(pitch), col))
		return off
	})
}

// ldmatrixLaneRowCol emits lane l's row and byte column inside a 16x16 (x4) or
// 16x8 (x2) block.
func (e *emitter) ldmatrixLaneRowCol(kind string) (row, col ptx.Operand) {
	row, col = e.reg(ir.I32), e.reg(ir.I32)
	t := e.reg(ir.I32)
	switch kind {
	case "a": // matrices (rows 0-7, 8-15) x (cols 0-7, 8-15): row l&15, col (l>>4)*8
		e.add(ptx.AndB32(row, e.lane, ptx.Imm(15)))
		e.add(ptx.ShrU32(col, e.lane, ptx.Imm(4)))
		e.add(ptx.ShlB32(col, col, ptx.Imm(4)))
	case "bt4", "bt2": // B row-major [k][n] with .trans: row (l&7) + ((l>>3)&1)*8, col (l>>4)*8
		e.add(ptx.AndB32(row, e.lane, ptx.Imm(15)))
		if kind == "bt4" {
			e.add(ptx.ShrU32(col, e.lane, ptx.Imm(4)))
			e.add(ptx.ShlB32(col, col, ptx.Imm(4)))
		} else {
			e.add(ptx.MovU32(col, ptx.Imm(0)))
		}
	case "bn4", "bn2", "at": // B stored [n][k], or A stored [k][m] (read .trans): row (l&7) + (l>>4)*8, col ((l>>3)&1)*8
		if kind == "at" {
			kind = "bn4"
		}
		e.add(ptx.AndB32(row, e.lane, ptx.Imm(7)))
		if kind == "bn4" {
			e.add(ptx.ShrU32(t, e.lane, ptx.Imm(4)))
			e.add(ptx.ShlB32(t, t, ptx.Imm(3)))
			e.add(ptx.AddS32(row, row, t))
		}
		e.add(ptx.ShrU32(col, e.lane, ptx.Imm(3)))
		e.add(ptx.AndB32(col, col, ptx.Imm(1)))
		e.add(ptx.ShlB32(col, col, ptx.Imm(4)))
	}
	return row, col
}

// swizzledLane is lane l's row and byte column inside an ldmatrix block of a
// swizzled tile, and the XOR its row applies to byte columns, (row & 7) << 4.
type swizzledLane struct{ row, col, bits ptx.Operand }

func (e *emitter) ldmatrixSwizzledLane(kind string) swizzledLane {
	x := e.laneOffset("swizzled/"+kind, func() ptx.Operand {
		row, col := e.ldmatrixLaneRowCol(kind)
		return ptx.Vec{row, col, e.swizzleBits(row)}
	}).(ptx.Vec)
	return swizzledLane{x[0], x[1], x[2]}
}
