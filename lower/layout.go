package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
)

// layoutKind says where a tile lives between the op that makes it and its uses.
type layoutKind uint8

const (
	// lScalar: one register, the same in every thread.
	lScalar layoutKind = iota
	// lExpr: never stored; every use recomputes the element it needs from its
	// coordinates (iota, constants, masks, row offsets, gathered indices).
	lExpr
	// lShared: a row-major array in shared memory, filled by cp.async (loads) and
	// read by ldmatrix (dot operands) or ld.shared.
	lShared
	// lAcc: distributed over the warps as mma.sync m16n8 accumulator fragments.
	lAcc
	// lRows / lCols: a rank-1 tile along the rows / columns of an lAcc tile, held by
	// the threads that hold those rows / columns.
	lRows
	lCols
)

// layout is a tile's placement.
type layout struct {
	kind layoutKind
	// wm x wn warps split an lAcc tile (and its lRows/lCols vectors).
	wm, wn int
	// lShared: byte offset in the CTA's shared memory, row pitch in bytes, and
	// whether the tile is a transposed view of the stored array.
	offset, pitch int
	trans         bool
}

func (l layout) String() string {
	switch l.kind {
	case lScalar:
		return "scalar"
	case lExpr:
		return "recomputed"
	case lShared:
		s := fmt.Sprintf("shared[%d] pitch %d", l.offset, l.pitch)
		if l.trans {
			s += " transposed"
		}
		return s
	case lAcc:
		return fmt.Sprintf("mma fragments, %dx%d warps", l.wm, l.wn)
	case lRows:
		return fmt.Sprintf("rows of mma fragments, %dx%d warps", l.wm, l.wn)
	case lCols:
		return fmt.Sprintf("columns of mma fragments, %dx%d warps", l.wm, l.wn)
	}
	return "?"
}

func (l layout) accFamily() bool { return l.kind == lAcc || l.kind == lRows || l.kind == lCols }

// chooseWarpGrid splits an mt x nt grid of m16n8 tiles over warps. It prefers
// whole rows per warp (wn = 1): then row reductions stay inside a warp and a
// score tile can feed the next dot as its A operand without leaving registers.
func chooseWarpGrid(mt, nt, warps int) (wm, wn int, err error) {
	for wn := 1; wn <= warps; wn++ {
		if warps%wn == 0 && nt%wn == 0 && mt%(warps/wn) == 0 {
			return warps / wn, wn, nil
		}
	}
	return 0, 0, fmt.Errorf("cannot split %dx%d mma tiles (m16 x n8) evenly over %d warps", mt, nt, warps)
}

// assignLayouts places every value and allocates shared memory.
func assignLayouts(f *fn) error {
	f.layouts = map[*ir.Value]layout{}
	for _, p := range f.k.Params {
		f.layouts[p.Value] = layout{kind: lScalar}
	}
	if err := f.layoutBlock(f.k.Body); err != nil {
		return err
	}
	return f.allocShared()
}

func (f *fn) layoutBlock(b *ir.Block) error {
	for _, o := range b.Ops {
		if o.Kind == ir.OpFor {
			if err := f.layoutLoop(o); err != nil {
				return err
			}
			continue
		}
		if len(o.Results) == 0 {
			if err := f.checkStore(o); err != nil {
				return err
			}
			continue
		}
		l, err := f.layoutOf(o)
		if err != nil {
			return opError(o, err)
		}
		f.layouts[o.Result()] = l
	}
	return nil
}

func opError(o *ir.Op, err error) error {
	return fmt.Errorf("%s: %v", headline(o), err)
}

// headline prints an op for error messages.
func headline(o *ir.Op) string {
	k := &ir.Kernel{Name: "x", Grid: [3]int{1, 1, 1}, Warps: 1, Body: &ir.Block{Ops: []*ir.Op{{Kind: o.Kind, Args: o.Args, Results: o.Results, Int: o.Int, Float: o.Float, Pred: o.Pred, HasMask: o.HasMask, HasBound: o.HasBound}}}}
	if o.Kind == ir.OpFor {
		return "for"
	}
	s := ir.Print(k)
	// Strip the kernel line and braces.
	start := len("kernel x() grid(1, 1, 1) warps 1 {\n  ")
	end := len(s) - len("\n}\n")
	if start < end {
		return s[start:end]
	}
	return string(o.Kind)
}

func (f *fn) layoutLoop(o *ir.Op) error {
	body := o.Body
	f.layouts[body.Args[0]] = layout{kind: lScalar}
	for i, in := range o.Args[2:] {
		f.layouts[body.Args[i+1]] = f.layouts[in]
	}
	// Iterate until the carried values' layouts stop changing: a value that starts
	// as a constant and is carried as a dot accumulator becomes mma fragments.
	for iter := 0; ; iter++ {
		if err := f.layoutBlock(body); err != nil {
			return err
		}
		changed := false
		for i, y := range body.Yield {
			arg := body.Args[i+1]
			j, err := joinLayouts(f.layouts[arg], f.layouts[y])
			if err != nil {
				return fmt.Errorf("loop-carried value %s: %v", arg, err)
			}
			if j != f.layouts[arg] {
				f.layouts[arg] = j
				changed = true
			}
		}
		if !changed {
			break
		}
		if iter > 8 {
			return fmt.Errorf("loop layouts did not settle")
		}
	}
	for i, r := range o.Results {
		l := f.layouts[body.Args[i+1]]
		if l.kind == lExpr && r.Type.Kind == ir.Tile && body.Yield[i] != body.Args[i+1] {
			return fmt.Errorf("loop-carried tile %s would have to be recomputed per element; carry it as mma fragments or restructure", r)
		}
		f.layouts[r] = l
	}
	return nil
}

// joinLayouts is the layout a loop-carried value needs to hold both its initial value
// and every yielded value.
func joinLayouts(a, b layout) (layout, error) {
	if a == b {
		return a, nil
	}
	switch {
	case a.kind == lScalar && b.kind == lScalar:
		return a, nil
	case a.kind == lExpr && b.accFamily():
		return b, nil
	case b.kind == lExpr && a.accFamily():
		return a, nil
	case a.accFamily() && b.accFamily() && a.kind == b.kind && a.wm == b.wm && a.wn == b.wn:
		return a, nil
	}
	return layout{}, fmt.Errorf("cannot hold both %v and %v", a, b)
}

func (f *fn) layoutOf(o *ir.Op) (layout, error) {
	r := o.Result()
	if r.Type.Kind != ir.Tile {
		for i, a := range o.Args {
			if a.Type.Kind == ir.Tile {
				return layout{}, fmt.Errorf("operand %d is a tile but the result is a scalar", i)
			}
		}
		return layout{kind: lScalar}, nil
	}
	switch o.Kind {
	case ir.OpIota, ir.OpConst:
		return layout{kind: lExpr}, nil
	case ir.OpLoad:
		if r.Type.Rank() == 1 {
			return layout{kind: lExpr}, nil
		}
		return layout{kind: lShared}, nil
	case ir.OpTrans:
		src := f.layouts[o.Args[0]]
		if src.kind != lShared {
			return layout{}, fmt.Errorf("only tiles in shared memory can be transposed (operand is %v)", src)
		}
		src.trans = !src.trans
		return src, nil
	case ir.OpDot:
		a, b, c := f.layouts[o.Args[0]], f.layouts[o.Args[1]], f.layouts[o.Args[2]]
		wm, wn, err := chooseWarpGrid(r.Type.Shape[0]/granuleM, r.Type.Shape[1]/granuleN, f.k.Warps)
		if err != nil {
			return layout{}, err
		}
		out := layout{kind: lAcc, wm: wm, wn: wn}
		switch {
		case a.kind == lShared && !a.trans:
		case a.kind == lAcc && a.wn == 1 && a.wm == wm:
		default:
			return layout{}, fmt.Errorf("operand a (%v) must be a row-major tile in shared memory or mma fragments of whole rows split like the result (%dx1 warps)", a, wm)
		}
		if b.kind != lShared {
			return layout{}, fmt.Errorf("operand b (%v) must be in shared memory", b)
		}
		if c.kind != lExpr && (c.kind != lAcc || c.wm != wm || c.wn != wn) {
			return layout{}, fmt.Errorf("accumulator (%v) must be split like the result (%v)", c, out)
		}
		return out, nil
	case ir.OpBroadcast:
		src := f.layouts[o.Args[0]]
		switch src.kind {
		case lScalar, lExpr:
			return layout{kind: lExpr}, nil
		case lRows:
			if o.Int != 1 {
				return layout{}, fmt.Errorf("a row vector broadcasts along axis 1")
			}
			return layout{kind: lAcc, wm: src.wm, wn: src.wn}, nil
		case lCols:
			if o.Int != 0 {
				return layout{}, fmt.Errorf("a column vector broadcasts along axis 0")
			}
			return layout{kind: lAcc, wm: src.wm, wn: src.wn}, nil
		}
		return layout{}, fmt.Errorf("cannot broadcast a tile in %v", src)
	case ir.OpReduce:
		src := f.layouts[o.Args[0]]
		if src.kind != lAcc {
			return layout{}, fmt.Errorf("reductions run on mma fragments (operand is %v)", src)
		}
		if o.Int == 1 {
			return layout{kind: lRows, wm: src.wm, wn: src.wn}, nil
		}
		return layout{kind: lCols, wm: src.wm, wn: src.wn}, nil
	}
	// Elementwise: the result lives with its distributed operands; pure index
	// arithmetic stays recomputed.
	res := layout{kind: lExpr}
	for i, a := range o.Args {
		l := f.layouts[a]
		switch {
		case l.kind == lScalar || l.kind == lExpr || l.kind == lShared:
		case l.accFamily():
			want := l
			if a.Type.Rank() == 2 {
				want.kind = lAcc
			}
			if r.Type.Rank() != a.Type.Rank() {
				return layout{}, fmt.Errorf("operand %d rank differs from the result", i)
			}
			if res.kind != lExpr && res != want {
				return layout{}, fmt.Errorf("operand %d (%v) is split differently from another operand (%v)", i, l, res)
			}
			res = want
		}
	}
	if res.kind == lExpr && r.Type.Rank() == 2 {
		for _, a := range o.Args {
			if f.layouts[a].kind == lShared {
				return layout{}, fmt.Errorf("elementwise ops on tiles in shared memory need an mma-fragment operand to give them a distribution")
			}
		}
	}
	return res, nil
}

// checkStore accepts the stores the emitter knows how to write.
func (f *fn) checkStore(o *ir.Op) error {
	v := o.Args[len(o.Args)-1]
	switch l := f.layouts[v]; l.kind {
	case lAcc, lRows, lExpr, lScalar:
		return nil
	default:
		return opError(o, fmt.Errorf("cannot store a tile in %v", l))
	}
}

// sharedPitch is the row pitch for a tile row of rowBytes: a multiple of 16 bytes
// (ldmatrix rows and cp.async chunks are 16 bytes) that is an odd number of 16-byte
// units, so the 8 rows one ldmatrix matrix reads fall in 8 different bank groups.
func sharedPitch(rowBytes int) int {
	p := roundUp(rowBytes, 16)
	if p/16%2 == 0 {
		p += 16
	}
	return p
}

func (f *fn) allocShared() error {
	off := 0
	var err error
	walkOps(f.k.Body, func(o *ir.Op) {
		if o.Kind != ir.OpLoad || err != nil {
			return
		}
		r := o.Result()
		l := f.layouts[r]
		if l.kind != lShared {
			return
		}
		l.pitch = sharedPitch(r.Type.Shape[1] * r.Type.Elem.Size())
		l.offset = roundUp(off, 128)
		off = l.offset + l.pitch*r.Type.Shape[0]
		f.layouts[r] = l
	})
	// Transposed views share their source's storage.
	walkOps(f.k.Body, func(o *ir.Op) {
		if o.Kind == ir.OpTrans {
			src := f.layouts[o.Args[0]]
			src.trans = !src.trans
			f.layouts[o.Result()] = src
		}
	})
	f.smem = roundUp(off, 128)
	if f.smem > f.target.MaxSharedPerBlock {
		return fmt.Errorf("kernel needs %d bytes of shared memory per CTA; %s allows at most %d", f.smem, f.target.Name, f.target.MaxSharedPerBlock)
	}
	return err
}
