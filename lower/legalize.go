package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
)

// dimRef is one dimension of one tile value.
type dimRef struct {
	v *ir.Value
	d int
}

// dimClasses is a union-find over tile dimensions that must have the same padded
// extent: operands and results of elementwise ops, the shared dimensions of a dot,
// loop-carried values, addressing tiles and the rows they address.
type dimClasses struct {
	parent  map[dimRef]dimRef
	granule map[dimRef]int
}

func (c *dimClasses) find(r dimRef) dimRef {
	for {
		p, ok := c.parent[r]
		if !ok || p == r {
			return r
		}
		if pp, ok := c.parent[p]; ok {
			c.parent[r] = pp
		}
		r = p
	}
}

func (c *dimClasses) union(a, b dimRef) {
	ra, rb := c.find(a), c.find(b)
	if ra == rb {
		return
	}
	g := lcm(c.gran(ra), c.gran(rb))
	c.parent[ra] = rb
	c.granule[rb] = g
	delete(c.granule, ra)
}

func (c *dimClasses) gran(r dimRef) int {
	if g, ok := c.granule[c.find(r)]; ok {
		return g
	}
	return 1
}

func (c *dimClasses) need(v *ir.Value, d, g int) {
	r := c.find(dimRef{v, d})
	c.granule[r] = lcm(c.gran(r), g)
}

// tie unifies all dimensions of two same-rank tiles.
func (c *dimClasses) tie(x, y *ir.Value) {
	if x.Type.Kind != ir.Tile || y.Type.Kind != ir.Tile || x.Type.Rank() != y.Type.Rank() {
		return
	}
	for d := range x.Type.Shape {
		c.union(dimRef{x, d}, dimRef{y, d})
	}
}

func lcm(a, b int) int { return a / gcd(a, b) * b }

// legalizeRecord is what legalize decided: logical holds every tile's shape
// before it was padded.
type legalizeRecord struct {
	logical map[*ir.Value][]int
}

// legalize pads every tile dimension to the granule of the instruction that
// consumes it and makes the padding harmless: loads and stores get row masks and
// column bounds that exclude padded elements (so padding reads as zero and is never
// written), reductions see the neutral element there, and a dot's padded K is zero
// in both operands. After it, every tile type holds padded extents.
func legalize(f *fn) (legalizeRecord, error) {
	c := &dimClasses{parent: map[dimRef]dimRef{}, granule: map[dimRef]int{}}
	var all []*ir.Value
	seen := map[*ir.Value]bool{}
	note := func(v *ir.Value) {
		if v.Type.Kind == ir.Tile && !seen[v] {
			seen[v] = true
			all = append(all, v)
		}
	}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		for _, a := range o.Args {
			note(a)
		}
		for _, r := range o.Results {
			note(r)
		}
		if o.Body != nil {
			for _, a := range o.Body.Args {
				note(a)
			}
		}
		if o.Kind.IsElementwise() {
			for _, a := range o.Args {
				c.tie(a, o.Result())
			}
		}
		switch o.Kind {
		case ir.OpBroadcast:
			if x := o.Args[0]; x.Type.Kind == ir.Tile {
				c.union(dimRef{x, 0}, dimRef{o.Result(), 1 - int(o.Int)})
			}
		case ir.OpReduce:
			c.union(dimRef{o.Args[0], 1 - int(o.Int)}, dimRef{o.Result(), 0})
			// A reduction reads its operand at mma fragment coordinates.
			c.need(o.Args[0], 0, decision.GranuleM)
			c.need(o.Args[0], 1, decision.GranuleN)
		case ir.OpColumn:
			c.union(dimRef{o.Args[0], 0}, dimRef{o.Result(), 0})
		case ir.OpTrans:
			c.union(dimRef{o.Args[0], 0}, dimRef{o.Result(), 1})
			c.union(dimRef{o.Args[0], 1}, dimRef{o.Result(), 0})
		case ir.OpDot:
			a, b, acc, r := o.Args[0], o.Args[1], o.Args[2], o.Result()
			c.tie(acc, r)
			c.union(dimRef{a, 0}, dimRef{r, 0})
			c.union(dimRef{a, 1}, dimRef{b, 0})
			c.union(dimRef{b, 1}, dimRef{r, 1})
			c.need(r, 0, decision.GranuleM)
			c.need(a, 1, decision.GranuleK)
			c.need(r, 1, decision.GranuleN)
		case ir.OpLoad, ir.OpStore:
			m := ir.MemOperands(o)
			if m.Offs.Type.Kind == ir.Tile {
				c.union(dimRef{m.Offs, 0}, dimRef{m.Val, 0})
				if m.Mask != nil {
					c.union(dimRef{m.Mask, 0}, dimRef{m.Val, 0})
				}
			}
		case ir.OpFor:
			for i, in := range o.Args[2:] {
				c.tie(in, o.Body.Args[i+1])
				c.tie(in, o.Body.Yield[i])
				c.tie(in, o.Results[i])
			}
		}
	})

	// A dot whose schedule states its grid has that many column groups, whatever
	// the warp count: the tiles of its columns' class need no more (the least
	// common multiple where several stated dots share the class).
	statedCols := map[dimRef]int{}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind == ir.OpDot && o.Dot != nil && o.Dot.Warps != [2]int{} {
			root := c.find(dimRef{o.Result(), 1})
			statedCols[root] = lcm(max(statedCols[root], 1), o.Dot.Warps[1])
		}
	})
	c.padForWarps(fragmentTiles(f.Kernel), func(v *ir.Value) (warps, statedWn int) {
		return f.WarpsFor(v), statedCols[c.find(dimRef{v, 1})]
	})

	// Every member of a class has the same logical extent (the verifier saw to that);
	// the class's padded extent rounds it up to the class granule.
	logical := map[*ir.Value][]int{}
	for _, v := range all {
		logical[v] = append([]int(nil), v.Type.Shape...)
	}
	for _, v := range all {
		for d, n := range v.Type.Shape {
			v.Type.Shape[d] = roundUp(n, c.gran(dimRef{v, d}))
		}
	}
	for _, v := range all {
		// Warp counts whose splits share no factor pad to their product: say so
		// rather than lower a tile past the verifier's limit.
		if n := v.Type.Elems(); n > ir.MaxTileElems {
			return legalizeRecord{}, fmt.Errorf("%s (%s) pads to %s for the m16 x n8 granules split over %s, more than the %d elements a tile may hold: give the kernel (and its roles) warp counts that split its tiles' granules evenly, such as powers of two",
				v, ir.TileOf(v.Type.Elem, logical[v]...), v.Type, f.warpCounts(), ir.MaxTileElems)
		}
	}
	return legalizeRecord{logical: logical}, f.insertPaddingMasks(logical)
}

// warpCounts names the kernel's warps and its roles' for a message.
func (f *fn) warpCounts() string {
	s := fmt.Sprintf("the CTA's %d warps", f.Kernel.Warps)
	for _, r := range f.Kernel.Roles {
		s += fmt.Sprintf(", role %s's %d", r.Name, r.Warps)
	}
	return s
}

// padForWarps pads tiles that may live in mma fragments to whole m16 x n8 tiles
// and their columns until that grid splits evenly over the warps. A tile of mt m16 rows is split
// wm = gcd(mt, warps) ways by rows and wn = warps/wm by columns (the only split
// ChooseWarpGrid can find for mt rows), so its n8 columns must be a multiple of
// wn; where they are not, the column class is padded (and masked, like any
// padding) to the next multiple. Tiles that already split, as every built-in
// kernel's do, are left alone. Padding a class can change another tile's rows
// (a transpose ties columns to rows), so it repeats until nothing changes. A tile
// in the column class of a dot that states its grid takes that grid's column
// groups (WarpsFor's statedWn) instead.
func (c *dimClasses) padForWarps(tiles []*ir.Value, WarpsFor func(*ir.Value) (warps, statedWn int)) {
	for round := 0; round < 8; round++ {
		changed := false
		for _, v := range tiles {
			if c.gran(dimRef{v, 0})%decision.GranuleM != 0 {
				c.need(v, 0, decision.GranuleM)
				changed = true
			}
			mt := roundUp(v.Type.Shape[0], c.gran(dimRef{v, 0})) / decision.GranuleM
			warps, wn := WarpsFor(v)
			if wn == 0 {
				wn = warps / gcd(mt, warps)
			}
			if g := c.gran(dimRef{v, 1}); g%(decision.GranuleN*wn) != 0 && roundUp(v.Type.Shape[1], g)%(decision.GranuleN*wn) != 0 {
				c.need(v, 1, decision.GranuleN*wn)
				changed = true
			}
		}
		if !changed {
			return
		}
	}
}

// fragmentTiles lists the rank-2 tiles that may be placed in mma fragments: dot
// results, reduction operands, rank-2 tiles a loop changes, broadcasts of
// reduction results (row and column statistics, through elementwise ops and
// loops), and elementwise results of any of these.
func fragmentTiles(k *ir.Kernel) []*ir.Value {
	vec := map[*ir.Value]bool{}  // rank-1 values derived from reductions
	frag := map[*ir.Value]bool{} // rank-2 values that may be fragments
	var order []*ir.Value
	mark := func(v *ir.Value) bool {
		if v.Type.Rank() == 2 && !frag[v] {
			frag[v] = true
			order = append(order, v)
			return true
		}
		if v.Type.Rank() == 1 && !vec[v] {
			vec[v] = true
			return true
		}
		return false
	}
	for changed := true; changed; {
		changed = false
		ir.WalkOps(k.Body, func(o *ir.Op) {
			switch {
			case o.Kind == ir.OpDot:
				changed = mark(o.Result()) || changed
			case o.Kind == ir.OpReduce:
				changed = mark(o.Args[0]) || changed
				changed = mark(o.Result()) || changed
			case o.Kind == ir.OpBroadcast && vec[o.Args[0]]:
				changed = mark(o.Result()) || changed
			case o.Kind.IsElementwise():
				for _, a := range o.Args {
					if frag[a] || vec[a] {
						changed = mark(o.Result()) || changed
						break
					}
				}
			case o.Kind == ir.OpFor:
				for i, in := range o.Args[2:] {
					// A rank-2 tile that changes across iterations is carried in fragments.
					changing := in.Type.Rank() == 2 && o.Body.Yield[i] != o.Body.Args[i+1]
					if vs := []*ir.Value{in, o.Body.Args[i+1], o.Body.Yield[i], o.Results[i]}; changing || frag[vs[0]] || frag[vs[2]] || vec[vs[0]] || vec[vs[2]] {
						for _, v := range vs {
							changed = mark(v) || changed
						}
					}
				}
			}
		})
	}
	return order
}

// insertPaddingMasks adds the ops that keep padded elements out of results
// (logical: the shapes before padding).
func (f *fn) insertPaddingMasks(logical map[*ir.Value][]int) error {
	var rewrite func(b *ir.Block) error
	rewrite = func(b *ir.Block) error {
		var out []*ir.Op
		for _, o := range b.Ops {
			e := &opEmitter{f: f, role: o.Role}
			switch o.Kind {
			case ir.OpLoad, ir.OpStore:
				f.maskMemory(e, o, logical)
			case ir.OpReduce:
				x := o.Args[0]
				ax := 1 - int(o.Int) // the kept axis; o.Int is the reduced one
				red := int(o.Int)
				if n, p := logical[x][red], x.Type.Shape[red]; n < p {
					neutral := 0.0
					if o.Pred == "max" {
						neutral = ir.NegInf
					}
					ok := e.broadcast(e.iotaLess(p, n), ax, x.Type.Shape)
					o.Args[0] = e.op(&ir.Op{Kind: ir.OpSelect, Args: []*ir.Value{ok, x, e.constF(neutral, x.Type)}}, x.Type)
				}
			case ir.OpDot:
				a, bm := o.Args[0], o.Args[1]
				if n, p := logical[a][1], a.Type.Shape[1]; n < p {
					// An operand another role computes is masked on that role,
					// where its fragments are: the masked tile then crosses to
					// the dot as the operand would have (staged).
					if !zeroFilled(a) {
						e.role = f.ValueRole(a)
						ok := e.broadcast(e.iotaLess(p, n), 0, a.Type.Shape)
						o.Args[0] = e.op(&ir.Op{Kind: ir.OpSelect, Args: []*ir.Value{ok, a, e.constF(0, a.Type)}}, a.Type)
					}
					if !zeroFilled(bm) {
						e.role = f.ValueRole(bm)
						ok := e.broadcast(e.iotaLess(p, n), 1, bm.Type.Shape)
						o.Args[1] = e.op(&ir.Op{Kind: ir.OpSelect, Args: []*ir.Value{ok, bm, e.constF(0, bm.Type)}}, bm.Type)
					}
					e.role = o.Role
				}
			}
			out = append(out, e.ops...)
			out = append(out, o)
			if o.Body != nil {
				if err := rewrite(o.Body); err != nil {
					return err
				}
			}
		}
		b.Ops = out
		return nil
	}
	return rewrite(f.Kernel.Body)
}

// zeroFilled reports whether v reads as zero wherever a load or store mask excludes
// it: a rank-2 load (masked elements read as 0) or a transpose of one.
func zeroFilled(v *ir.Value) bool {
	if v.Def == nil {
		return false
	}
	switch v.Def.Kind {
	case ir.OpLoad:
		return true
	case ir.OpTrans:
		return zeroFilled(v.Def.Args[0])
	}
	return false
}

// maskMemory narrows a load or store to the logical rows and columns.
func (f *fn) maskMemory(e *opEmitter, o *ir.Op, logical map[*ir.Value][]int) {
	m := ir.MemOperands(o)
	if m.Offs.Type.Kind != ir.Tile {
		return
	}
	rows, prows := logical[m.Val][0], m.Val.Type.Shape[0]
	if rows < prows {
		ok := e.iotaLess(prows, rows)
		if m.Mask != nil {
			o.Args[m.MaskIdx] = e.op(&ir.Op{Kind: ir.OpAnd, Args: []*ir.Value{m.Mask, ok}}, ok.Type)
		} else {
			insertArg(o, memMaskPos(o), ok)
			o.HasMask = true
		}
	}
	if m.Val.Type.Rank() == 2 {
		cols, pcols := logical[m.Val][1], m.Val.Type.Shape[1]
		if cols < pcols {
			c := e.constI(int64(cols))
			if m.Bound != nil {
				o.Args[m.BoundIdx] = e.op(&ir.Op{Kind: ir.OpMin, Args: []*ir.Value{m.Bound, c}}, c.Type)
			} else {
				m = ir.MemOperands(o)
				pos := 3
				if o.HasMask {
					pos = 4
				}
				insertArg(o, pos, c)
				o.HasBound = true
			}
		}
	}
}

// memMaskPos is where a new mask operand goes: right after the address operands.
func memMaskPos(o *ir.Op) int {
	if o.Kind == ir.OpLoad && o.Result().Type.Rank() == 2 || o.Kind == ir.OpStore && o.Args[len(o.Args)-1].Type.Rank() == 2 {
		return 3
	}
	return 2
}

func insertArg(o *ir.Op, pos int, v *ir.Value) {
	o.Args = append(o.Args[:pos], append([]*ir.Value{v}, o.Args[pos:]...)...)
}

// opEmitter builds new IR ops for a pass, naming their results uniquely.
type opEmitter struct {
	f    *fn
	ops  []*ir.Op
	role string // the role of the op the new ops serve
}

func (e *opEmitter) op(o *ir.Op, t ir.Type) *ir.Value {
	v := &ir.Value{Name: e.f.freshName(), Type: t, Def: o}
	o.Role = e.role
	o.Results = []*ir.Value{v}
	e.ops = append(e.ops, o)
	return v
}

func (e *opEmitter) constI(n int64) *ir.Value {
	return e.op(&ir.Op{Kind: ir.OpConst, Int: n}, ir.ScalarOf(ir.I32))
}

func (e *opEmitter) constF(x float64, like ir.Type) *ir.Value {
	return e.op(&ir.Op{Kind: ir.OpConst, Float: x}, ir.ScalarOf(like.Elem))
}

// iotaLess returns tile<p x i1> = iota(p) < n: true on the logical part.
func (e *opEmitter) iotaLess(p, n int) *ir.Value {
	io := e.op(&ir.Op{Kind: ir.OpIota}, ir.TileOf(ir.I32, p))
	return e.op(&ir.Op{Kind: ir.OpCmp, Pred: ir.CmpLT, Args: []*ir.Value{io, e.constI(int64(n))}}, ir.TileOf(ir.I1, p))
}

func (e *opEmitter) broadcast(v *ir.Value, axis int, shape []int) *ir.Value {
	return e.op(&ir.Op{Kind: ir.OpBroadcast, Int: int64(axis), Args: []*ir.Value{v}}, ir.TileOf(v.Type.Elem, shape...))
}
