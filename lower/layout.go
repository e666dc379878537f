package lower

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/target"
)

// ChooseWarpGrid splits an mt x nt grid of m16n8 tiles over warps. It prefers
// whole rows per warp (wn = 1): then row reductions stay inside a warp and a
// score tile can feed the next dot as its A operand without leaving registers.
func ChooseWarpGrid(mt, nt, warps int) (wm, wn int, err error) {
	for wn := 1; wn <= warps; wn++ {
		if warps%wn == 0 && nt%wn == 0 && mt%(warps/wn) == 0 {
			return warps / wn, wn, nil
		}
	}
	var fit []string
	for w := 1; w <= 32; w++ {
		if nt%(w/gcd(mt, w)) == 0 {
			fit = append(fit, strconv.Itoa(w))
		}
	}
	return 0, 0, fmt.Errorf("cannot split %dx%d mma tiles (m16 x n8) evenly over %d warps (warp counts that split it: %s)", mt, nt, warps, strings.Join(fit, ", "))
}

// leastTrafficGrid is the warp grid of dot o (mt x nt mma tiles, rows-first grid
// wm x wn) that reads the fewest shared-memory bytes when its A operand is read
// through ldmatrix by several dots of the same shape (P times each V slice,
// which the schedule pass groups so that each A fragment is loaded once for all
// of them): every column group of warps reads all of A, every row group all of
// B, and A's and B's bytes are shared by the dots that read them. Ties, and
// dots whose A no other dot reads, keep the rows-first grid (row reductions in
// the warp, A from registers). B's sharers include the scores' transposed read
// of the same K: that keeps bf16p's P·V at 2x4 rather than 1x8 (V read once, all
// of P by every warp), which measured 2-3% slower at T=256 (run 49).
func (f *fn) leastTrafficGrid(o *ir.Op, mt, nt, wm, wn int) (int, int) {
	a, b := o.Args[0], o.Args[1]
	shareA, shareB := 0, 0
	ir.WalkOps(f.Kernel.Body, func(d *ir.Op) {
		if d.Kind != ir.OpDot || !sameInts(d.Result().Type.Shape, o.Result().Type.Shape) {
			return
		}
		if d.Args[0] == a {
			shareA++
		}
		if ir.StorageOf(d.Args[1]) == ir.StorageOf(b) {
			shareB++
		}
	})
	if shareA < 2 {
		return wm, wn
	}
	return cheapestGrid(mt, nt, f.WarpsFor(o.Result()), wm, wn, tileBytes(a)/float64(shareA), tileBytes(b)/float64(shareB))
}

// fewestBytesGrid is the warp grid of dot o (mt x nt mma tiles over warps,
// rows-first grid wm x wn) whose result's rows are reduced (scores): the one
// whose warps read the fewest operand bytes, every column group all of A and
// every row group all of B; ties keep rows first, since each column group more
// costs an exchange of row maxima and sums. On the 64-head CTA's 4-warp score
// role that is 2x2 (design A2's 32 x 32 quadrants: Q and K each read twice per
// tile) instead of 4x1 (K four times): 1.5-2.4% faster exact, 2.2-3.2% bf16p
// (run 51); 8 warps tie 4x2 against 2x4 and keep 4x2.
func fewestBytesGrid(o *ir.Op, mt, nt, warps, wm, wn int) (int, int) {
	return cheapestGrid(mt, nt, warps, wm, wn, tileBytes(o.Args[0]), tileBytes(o.Args[1]))
}

// cheapestGrid is the split of mt x nt mma tiles over warps (wm x wn to start
// from, kept on ties) that minimizes wn x bytesA + wm x bytesB: every column
// group of warps reads A, every row group B.
func cheapestGrid(mt, nt, warps, wm, wn int, bytesA, bytesB float64) (int, int) {
	cost := func(wm, wn int) float64 { return float64(wn)*bytesA + float64(wm)*bytesB }
	best := cost(wm, wn)
	for cn := 1; cn <= warps; cn++ {
		cm := warps / cn
		if warps%cn != 0 || nt%cn != 0 || mt%cm != 0 {
			continue
		}
		if c := cost(cm, cn); c < best {
			wm, wn, best = cm, cn, c
		}
	}
	return wm, wn
}

// tileBytes is the size of a rank-2 tile.
func tileBytes(v *ir.Value) float64 {
	return float64(v.Type.Shape[0] * v.Type.Shape[1] * v.Type.Elem.Size())
}

// layoutPass is the layout pass's working state beside its record.
type layoutPass struct {
	*fn
	// flexible marks tiles whose split only broadcast row vectors decided
	// (adopt may change it).
	flexible map[*ir.Value]bool
	uses     map[*ir.Value]int
}

// assignLayouts is the layout pass. It builds its record in place
// (f.LayoutRecord), since its own questions (isRowView, reduceSource, the
// accumulator's layout) read the layouts decided so far; with f.noSplitK (the
// smem pass's feedback, splitCostsFit) it splits no dot along its reduction.
//
// Requires: a legalized kernel (tile extents are multiples of the mma granules
// wherever a dot touches them) and rowReduced (rowreduce).
// Guarantees: every value defined in the kernel has a layout in f.Layouts (scalar,
// recomputed, shared, fragments, rows or columns of fragments); operands and
// results of each op are placed compatibly (a dot's accumulator is split like its
// result, loop-carried values hold both their initial and yielded values); every
// stored tile is in a layout the emitter can store from; every dot operand and
// transpose source that is neither in shared memory nor usable from registers can
// be staged (stage decides which are). Shared offsets and pitches are not yet
// assigned (smem).
func assignLayouts(f *fn) error {
	f.LayoutRecord = decision.LayoutRecord{Layouts: map[*ir.Value]decision.Layout{}, SplitK: map[*ir.Op]int{}, SplitPartial: map[*ir.Value]bool{}}
	for _, p := range f.Kernel.Params {
		f.Layouts[p.Value] = decision.Layout{Kind: decision.Scalar}
	}
	lp := &layoutPass{fn: f, flexible: map[*ir.Value]bool{}, uses: ir.UseCounts(f.Kernel)}
	if err := lp.layoutBlock(f.Kernel.Body); err != nil {
		return err
	}
	if err := f.checkComputed(); err != nil {
		return err
	}
	if err := f.recordReduceSources(); err != nil {
		return err
	}
	return f.holdOperands()
}

// recordReduceSources fills the record's ReduceSources once every layout is final.
func (f *fn) recordReduceSources() (err error) {
	f.ReduceSources = map[*ir.Op]decision.Layout{}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind != ir.OpReduce || err != nil {
			return
		}
		f.ReduceSources[o], err = f.reduceSource(o)
	})
	return err
}

func (f *layoutPass) layoutBlock(b *ir.Block) error {
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
			return ir.ErrorAt(o, err)
		}
		f.Layouts[o.Result()] = l
	}
	return nil
}

func (f *layoutPass) layoutLoop(o *ir.Op) error {
	body := o.Body
	f.Layouts[body.Args[0]] = decision.Layout{Kind: decision.Scalar}
	for i, in := range o.Args[2:] {
		f.Layouts[body.Args[i+1]] = f.Layouts[in]
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
			j, err := joinLayouts(f.Layouts[arg], f.Layouts[y])
			if err != nil {
				return fmt.Errorf("loop-carried value %s: %v", arg, err)
			}
			if j.Kind == decision.Expr && arg.Type.Rank() == 1 && y != arg {
				// A rank-1 tile that changes from one iteration to the next and is no
				// row or column vector of fragments: each thread holds its elements.
				j = decision.Layout{Kind: decision.Threads}
			}
			if (j.Kind == decision.Expr || j.Kind == decision.Shared) && arg.Type.Rank() == 2 && y != arg {
				// A rank-2 tile that changes from one iteration to the next (a sum of
				// loaded tiles): held in mma fragments, split as a dot's result would be
				// (legalize padded it for that).
				wm, wn, err := ChooseWarpGrid(arg.Type.Shape[0]/decision.GranuleM, arg.Type.Shape[1]/decision.GranuleN, f.WarpsFor(arg))
				if err != nil {
					return fmt.Errorf("loop-carried value %s: %v", arg, err)
				}
				j = decision.Layout{Kind: decision.Acc, WM: wm, WN: wn}
			}
			if j != f.Layouts[arg] {
				f.Layouts[arg] = j
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
		l := f.Layouts[body.Args[i+1]]
		if l.Kind == decision.Expr && r.Type.Kind == ir.Tile && body.Yield[i] != body.Args[i+1] {
			return fmt.Errorf("loop-carried tile %s would have to be recomputed per element; carry it as mma fragments or restructure", r)
		}
		f.Layouts[r] = l
	}
	return nil
}

// joinLayouts is the layout a loop-carried value needs to hold both its initial value
// and every yielded value.
func joinLayouts(a, b decision.Layout) (decision.Layout, error) {
	if a == b {
		return a, nil
	}
	switch {
	case a.Kind == decision.Scalar && b.Kind == decision.Scalar:
		return a, nil
	case a.Kind == decision.Expr && b.Kind == decision.Threads || a.Kind == decision.Threads && b.Kind == decision.Expr:
		return decision.Layout{Kind: decision.Threads}, nil
	case a.Kind == decision.Shared && b.AccFamily():
		return b, nil
	case b.Kind == decision.Shared && a.AccFamily():
		return a, nil
	case a.Kind == decision.Shared && b.Kind == decision.Expr || a.Kind == decision.Expr && b.Kind == decision.Shared:
		return decision.Layout{Kind: decision.Expr}, nil
	case a.Kind == decision.Expr && b.AccFamily():
		return b, nil
	case b.Kind == decision.Expr && a.AccFamily():
		return a, nil
	case a.AccFamily() && b.AccFamily() && a.Kind == b.Kind && a.WM == b.WM && a.WN == b.WN && a.Perm == b.Perm:
		return a, nil
	}
	return decision.Layout{}, fmt.Errorf("cannot hold both %v and %v", a, b)
}

func (f *layoutPass) layoutOf(o *ir.Op) (decision.Layout, error) {
	r := o.Result()
	if r.Type.Kind != ir.Tile {
		for i, a := range o.Args {
			if a.Type.Kind == ir.Tile {
				return decision.Layout{}, fmt.Errorf("operand %d is a tile but the result is a scalar", i)
			}
		}
		return decision.Layout{Kind: decision.Scalar}, nil
	}
	if !o.Kind.IsElementwise() {
		for i, a := range o.Args {
			if f.Layouts[a].Kind == decision.Threads {
				return decision.Layout{}, fmt.Errorf("operand %d (%s) is a loop-carried rank-1 tile held per thread: only elementwise ops, loops and stores take it", i, a)
			}
		}
	}
	switch o.Kind {
	case ir.OpIota, ir.OpConst:
		return decision.Layout{Kind: decision.Expr}, nil
	case ir.OpLoad:
		if r.Type.Rank() == 1 {
			return decision.Layout{Kind: decision.Expr}, nil
		}
		return decision.Layout{Kind: decision.Shared}, nil
	case ir.OpTrans:
		// Nothing is staged yet (stage runs after): a tile not in shared
		// memory is transposed in the home stage will give it.
		src, ok := f.Layouts[o.Args[0]], f.Layouts[o.Args[0]].Kind == decision.Shared
		if src.Kind == decision.Expr && onlyComputed(f.Kernel, r) {
			return decision.Layout{Kind: decision.Expr}, nil // evaluated by its dots, at swapped coordinates
		}
		if !ok {
			src, ok = stageable(o.Args[0], f.Layouts[o.Args[0]])
		}
		if !ok {
			return decision.Layout{}, fmt.Errorf("cannot transpose a tile in %v", f.Layouts[o.Args[0]])
		}
		src.Trans = !src.Trans
		return src, nil
	case ir.OpDot:
		a, b, c := f.Layouts[o.Args[0]], f.Layouts[o.Args[1]], f.Layouts[o.Args[2]]
		var out decision.Layout
		var err error
		if o.Dot != nil && o.Dot.Warps != [2]int{} {
			out, err = f.statedDotLayout(o)
		} else {
			out, err = f.chosenDotLayout(o)
		}
		if err != nil {
			return decision.Layout{}, err
		}
		// Operands that are neither in shared memory nor (for A) fragments of whole
		// rows split like the result are staged through shared memory.
		if !dotOperandAPlaceable(a, out) {
			return decision.Layout{}, fmt.Errorf("operand a (%v) must be a row-major tile", a)
		}
		if _, ok := stageable(o.Args[1], b); b.Kind != decision.Shared && !ok {
			return decision.Layout{}, fmt.Errorf("operand b (%v) cannot be staged in shared memory", b)
		}
		if o.Dot != nil && o.Dot.KPerm && !decision.TransposedB(o) {
			// The columns come out in the order B's pairs were read.
			if nt := o.Result().Type.Shape[1] / decision.GranuleN; out.Kind != decision.Acc || out.Rep > 1 || nt%(2*out.WN) != 0 {
				return decision.Layout{}, fmt.Errorf("kperm: the result's columns are permuted in groups of 16 per warp; %s's %d columns over %v do not divide so", o.Result(), nt*decision.GranuleN, out)
			}
			out.Perm = true
		}
		if c.Kind != decision.Expr && (c.Kind != decision.Acc || c.WM != out.WM || c.WN != out.WN || c.Rep != out.Rep || c.Perm != out.Perm) && !f.adopt(o.Args[2], out) {
			return decision.Layout{}, fmt.Errorf("accumulator (%v) must be split like the result (%v)", c, out)
		}
		return out, nil
	case ir.OpBroadcast:
		src := f.Layouts[o.Args[0]]
		switch src.Kind {
		case decision.Scalar, decision.Expr:
			return decision.Layout{Kind: decision.Expr}, nil
		case decision.Rows:
			if o.Int != 1 {
				return decision.Layout{}, fmt.Errorf("a row vector broadcasts along axis 1")
			}
			return decision.Layout{Kind: decision.Acc, WM: src.WM, WN: src.WN, Rep: src.Rep}, nil
		case decision.Cols:
			if o.Int != 0 {
				return decision.Layout{}, fmt.Errorf("a column vector broadcasts along axis 0")
			}
			return decision.Layout{Kind: decision.Acc, WM: src.WM, WN: src.WN, Rep: src.Rep}, nil
		}
		return decision.Layout{}, fmt.Errorf("cannot broadcast a tile in %v", src)
	case ir.OpSlice:
		if src := f.Layouts[o.Args[0]]; src.Kind != decision.Expr {
			return decision.Layout{}, fmt.Errorf("slice of a tile in %v is not supported", src)
		}
		return decision.Layout{Kind: decision.Expr}, nil
	case ir.OpColumn:
		if src := f.Layouts[o.Args[0]]; src.Kind != decision.Shared && src.Kind != decision.Expr {
			return decision.Layout{}, fmt.Errorf("column of a tile in %v is not supported (stage it first)", src)
		}
		return decision.Layout{Kind: decision.Expr}, nil
	case ir.OpReduce:
		src, err := f.reduceSource(o)
		if err != nil {
			return decision.Layout{}, err
		}
		if o.Int == 1 {
			return decision.Layout{Kind: decision.Rows, WM: src.WM, WN: src.WN, Rep: src.Rep}, nil
		}
		if src.Perm {
			return decision.Layout{}, fmt.Errorf("kperm: a reduction over the rows of %s, whose columns are in kperm order, is not supported", o.Args[0])
		}
		return decision.Layout{Kind: decision.Cols, WM: src.WM, WN: src.WN, Rep: src.Rep}, nil
	}
	// Elementwise: the result lives with its distributed operands; pure index
	// arithmetic stays recomputed. A row vector broadcast along the rows adapts to
	// any split: from registers where the row groups are the same, through a
	// shared home (stage: stageRowViews) where they differ; so it does not decide
	// the split.
	res := decision.Layout{Kind: decision.Expr}
	var rowViews, colViews []decision.Layout
	for i, a := range o.Args {
		l := f.Layouts[a]
		switch {
		case l.Kind == decision.Scalar || l.Kind == decision.Expr || l.Kind == decision.Shared:
		case f.isColView(a):
			colViews = append(colViews, l)
		case l.Kind == decision.Threads:
			if res.Kind != decision.Expr && res.Kind != decision.Threads {
				return decision.Layout{}, fmt.Errorf("operand %d (%s) is held per thread, another operand is in %v", i, a, res)
			}
			res = l
		case f.isRowView(a):
			rowViews = append(rowViews, l)
		case l.AccFamily():
			want := l
			if a.Type.Rank() == 2 {
				want.Kind = decision.Acc
			}
			if r.Type.Rank() != a.Type.Rank() {
				return decision.Layout{}, fmt.Errorf("operand %d rank differs from the result", i)
			}
			if res.Kind != decision.Expr && res != want {
				if res.Kind == decision.Threads {
					return decision.Layout{}, fmt.Errorf("operand %d (%v) meets a loop-carried rank-1 tile held per thread", i, l)
				}
				return decision.Layout{}, fmt.Errorf("operand %d (%v) is split differently from another operand (%v)", i, l, res)
			}
			res = want
		}
	}
	if len(rowViews) > 0 && res.Kind == decision.Threads {
		return decision.Layout{}, fmt.Errorf("a broadcast row vector meets a loop-carried rank-1 tile held per thread")
	}
	delete(f.flexible, r) // a loop's layouts are laid out again until they settle
	for _, c := range colViews {
		if res.Kind == decision.Expr && len(rowViews) == 0 {
			res = c
			f.flexible[r] = true
		} else if res.Kind == decision.Acc && (res.WN != c.WN || res.Rep > 1 && c.Rep != res.Rep || res.Perm) {
			return decision.Layout{}, fmt.Errorf("a broadcast column vector (%v) meets a tile split over other column groups (%v)", c, res)
		}
	}
	if len(rowViews) > 0 && res.Kind == decision.Expr {
		// Only row vectors decide: the split is provisional, and the consumer
		// may choose another (see adopt).
		res = rowViews[0]
		f.flexible[r] = true
	}
	return res, nil
}

// chosenDotLayout is the split of a dot that states no schedule (ir.DotSchedule):
// rows first, then by operand traffic or, for a tile whose rows are reduced, by
// the bytes its warps read, replicated where that keeps reductions in the warp.
func (f *layoutPass) chosenDotLayout(o *ir.Op) (decision.Layout, error) {
	r, c := o.Result(), f.Layouts[o.Args[2]]
	mt := r.Type.Shape[0] / decision.GranuleM
	warps := f.WarpsFor(r)
	wm, wn, err := ChooseWarpGrid(mt, r.Type.Shape[1]/decision.GranuleN, warps)
	if err != nil {
		return decision.Layout{}, err
	}
	if f.rowReduced[r] {
		wm, wn = fewestBytesGrid(o, mt, r.Type.Shape[1]/decision.GranuleN, warps, wm, wn)
	} else if !f.AHeldFor(o, wm) {
		wm, wn = f.leastTrafficGrid(o, mt, r.Type.Shape[1]/decision.GranuleN, wm, wn)
	}
	out := decision.Layout{Kind: decision.Acc, WM: wm, WN: wn}
	if wn > 1 && wm <= replicateMaxRowGroups && f.rowReduced[r] && f.replicationFits() {
		// A tile whose rows are reduced (softmax scores) is held whole by every
		// warp of its row group: the reductions then stay inside the warp, and the
		// result feeds the next dot from registers, with no shared-memory exchange
		// of P and no cross-warp max or sum. In a latency-bound launch each warp
		// computes it all (redundant mma.sync, which decode leaves idle, and no
		// barrier); otherwise each warp computes its share of the reduction and
		// the partial sums are all-reduced through shared memory (one barrier).
		rwm := largestDivisor(mt, warps)
		rep := warps / rwm
		whole := decision.Layout{Kind: decision.Acc, WM: rwm, WN: 1, Rep: rep}
		switch {
		case f.latencyBound():
			out = whole
		case !f.noSplitK && f.splittable(o, rep):
			out = whole
			f.splitDot(o, rep)
		case c == whole:
			// Accumulating onto a replicated tile: computed whole, like it.
			out = whole
		}
	}
	return out, nil
}

// splitDot records that dot o's reduction is split over the parts warps holding
// each element of its result; an accumulator that is itself a split dot's result
// then stays a per-warp partial sum.
func (f *fn) splitDot(o *ir.Op, parts int) {
	f.SplitK[o] = parts
	if c := o.Args[2]; c.Def != nil && c.Def.Kind == ir.OpDot {
		f.SplitPartial[c] = true
	}
}

// statedDotLayout is the split a dot's schedule states, or an error naming the
// clause that cannot be honoured and what would be.
func (f *layoutPass) statedDotLayout(o *ir.Op) (decision.Layout, error) {
	// ir.Verify held the clauses to the warps running the dot and to the atoms
	// that are built; what is left depends on the padded tiles.
	s, r := *o.Dot, o.Result()
	mt, nt := r.Type.Shape[0]/decision.GranuleM, r.Type.Shape[1]/decision.GranuleN
	rep := max(s.Replicate, 1)
	if mt%s.Warps[0] != 0 || nt%s.Warps[1] != 0 {
		return decision.Layout{}, fmt.Errorf("schedule %s: warps %dx%d does not split the result's %dx%d mma tiles (m16 x n8); grids that do: %s",
			s, s.Warps[0], s.Warps[1], mt, nt, strings.Join(gridsSplitting(mt, nt, s.WarpCount()/rep, rep), ", "))
	}
	out := decision.Layout{Kind: decision.Acc, WM: s.Warps[0], WN: s.Warps[1]}
	if rep > 1 {
		out.Rep = rep
	}
	if s.SplitK > 0 {
		if why := f.unsplittable(o, s.SplitK); why != "" {
			return decision.Layout{}, fmt.Errorf("schedule %s: splitk %d: %s", s, s.SplitK, why)
		}
		f.splitDot(o, s.SplitK)
	}
	return out, nil
}

// gridsSplitting lists the warp grids RxC (with replicate rep) that split mt x nt
// mma tiles over warps.
func gridsSplitting(mt, nt, warps, rep int) []string {
	var fit []string
	for wn := 1; wn <= warps; wn++ {
		if warps%wn == 0 && nt%wn == 0 && mt%(warps/wn) == 0 && (rep == 1 || wn == 1) {
			g := fmt.Sprintf("warps %dx%d", warps/wn, wn)
			if rep > 1 {
				g += fmt.Sprintf(" replicate %d", rep)
			}
			fit = append(fit, g)
		}
	}
	if len(fit) == 0 {
		return []string{"none"}
	}
	return fit
}

// reduceSource is the split a reduction reads its operand in: the operand's own
// when it is in mma fragments; for a recomputed or shared tile, the split
// ChooseWarpGrid gives its padded extents (legalize padded them so that one
// exists), and each thread reads the elements at its fragment coordinates. The
// reduction then runs like one over fragments: in the thread, across the quad or
// column lanes, across warps through scratch.
func (f *fn) reduceSource(o *ir.Op) (decision.Layout, error) {
	x := o.Args[0]
	l := f.Layouts[x]
	switch l.Kind {
	case decision.Acc:
		return l, nil
	case decision.Expr, decision.Shared:
		wm, wn, err := ChooseWarpGrid(x.Type.Shape[0]/decision.GranuleM, x.Type.Shape[1]/decision.GranuleN, f.WarpsFor(o.Result()))
		if err != nil {
			return decision.Layout{}, err
		}
		return decision.Layout{Kind: decision.Acc, WM: wm, WN: wn}, nil
	}
	return decision.Layout{}, fmt.Errorf("cannot reduce a tile in %v", l)
}

// splittable reports whether dot o can be split along its reduction over parts
// warps: its k16 steps divide evenly, A is read from shared memory (each warp
// starts at its own k offset), and it starts a chain (a zero accumulator, which
// every warp may add) or continues one (the accumulator is a split dot's result
// that nothing else uses, so it is still a per-warp partial sum).
func (f *layoutPass) splittable(o *ir.Op, parts int) bool { return f.unsplittable(o, parts) == "" }

// unsplittable says why dot o's reduction cannot be split over parts warps ("" if
// it can).
func (f *layoutPass) unsplittable(o *ir.Op, parts int) string {
	a, c := o.Args[0], o.Args[2]
	if ks := a.Type.Shape[1] / decision.GranuleK; ks%parts != 0 {
		return fmt.Sprintf("A's %d k16 steps do not divide by %d", ks, parts)
	}
	if a.Type.Elem.Size() != 2 {
		return fmt.Sprintf("A is %s, not bf16 or f16", a.Type.Elem)
	}
	if al := f.Layouts[a]; al.Kind != decision.Shared && al.Kind != decision.Expr {
		return fmt.Sprintf("A is in %v; a split reads it from shared memory or recomputes it", al)
	}
	switch d := c.Def; {
	case d == nil:
		return "the accumulator is a loop-carried value or a parameter; a split starts from zeros or from a dot split alike"
	case d.Kind == ir.OpConst:
		if d.Float != 0 || d.Int != 0 {
			return "the accumulator is a nonzero constant; a split starts from zeros or from a dot split alike"
		}
		return ""
	case d.Kind == ir.OpDot:
		if f.SplitK[d] != parts {
			return fmt.Sprintf("the accumulator %s is a dot not split over %d warps", c, parts)
		}
		if f.uses[c] != 1 {
			return fmt.Sprintf("the accumulator %s is read elsewhere too, and a split leaves it a per-warp partial sum", c)
		}
		return ""
	}
	return fmt.Sprintf("the accumulator %s is computed by %s; a split starts from zeros or from a dot split alike", c, c.Def.Kind)
}

// latencyBound reports whether the launch is about one wave of CTAs (the target's
// rule, target.LatencyBound, which launch plans apply too): then each CTA's chain of
// barriers and exchanges is the critical path, and replicating a score tile across
// warps (no cross-warp reductions, P stays in registers) pays for its redundant
// mma.sync and extra registers; with several waves, occupancy decides and
// splitting the tile wins.
func (f *fn) latencyBound() bool {
	switch f.Kernel.Latency {
	case ir.LatencySmall:
		return true
	case ir.LatencyLarge:
		return false
	}
	ctas := f.Kernel.Grid[0] * f.Kernel.Grid[1] * f.Kernel.Grid[2]
	return f.Target.LatencyBound(ctas)
}

// replicationFits reports whether this CTA's threads may have more than the
// minimum register budget: a replicated score tile needs replicatedExtraRegs
// beyond the headroom, which 16 warps (128 registers each) do not have.
func (f *fn) replicationFits() bool {
	return f.threadRegs() > target.MinRegBudget
}

// threadRegs is the most registers a thread of this CTA may have with the CTA
// alone on its SM (the register file over the threads it holds registers for,
// target.RegThreads).
func (f *fn) threadRegs() int {
	return f.Target.RegsPerSM / target.RegThreads(32*f.Kernel.Warps)
}

// adopt gives v the split want when v's split was only provisional (decided by
// broadcast row vectors alone). With other row groups its row vectors are read
// through shared memory (stageRowViews), and only where the consumer is v's one
// use: an elementwise op laid out earlier would read v in the old split.
func (f *layoutPass) adopt(v *ir.Value, want decision.Layout) bool {
	l := f.Layouts[v]
	if !f.flexible[v] || l.Kind != decision.Acc || l.WM != want.WM && f.uses[v] != 1 {
		return false
	}
	f.Layouts[v] = want
	return true
}

// isRowView reports whether v is a row vector broadcast along the rows of an
// Acc tile (an Rows vector viewed as a tile).
func (f *fn) isRowView(v *ir.Value) bool {
	return v.Def != nil && v.Def.Kind == ir.OpBroadcast && f.Layouts[v].Kind == decision.Acc && f.Layouts[v.Def.Args[0]].Kind == decision.Rows
}

// isColView reports whether v is a column vector broadcast onto a tile (a softmax
// statistic of a tile with the heads in its columns): its consumer reads each
// column's value from the vector's registers, so only its column groups must be
// the vector's.
func (f *fn) isColView(v *ir.Value) bool {
	return v.Def != nil && v.Def.Kind == ir.OpBroadcast && f.Layouts[v].Kind == decision.Acc && f.Layouts[v.Def.Args[0]].Kind == decision.Cols
}

func largestDivisor(n, limit int) int {
	for d := min(n, limit); d > 1; d-- {
		if n%d == 0 && limit%d == 0 {
			return d
		}
	}
	return 1
}

// checkStore accepts the stores the emitter knows how to write.
func (f *fn) checkStore(o *ir.Op) error {
	v := o.Args[len(o.Args)-1]
	for _, a := range o.Args[:len(o.Args)-1] {
		if f.Layouts[a].Kind == decision.Threads {
			return ir.ErrorAt(o, fmt.Errorf("the address or mask %s is a loop-carried tile held per thread", a))
		}
	}
	switch l := f.Layouts[v]; l.Kind {
	case decision.Acc, decision.Rows, decision.Cols, decision.Expr, decision.Scalar, decision.Shared:
		return nil
	case decision.Threads:
		if len(ir.MemOperands(o).Val.Type.Shape) == 1 && ir.MemOperands(o).Col0 == nil {
			return nil
		}
		return ir.ErrorAt(o, fmt.Errorf("cannot store a tile in %v", l))
	default:
		return ir.ErrorAt(o, fmt.Errorf("cannot store a tile in %v", l))
	}
}
