package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
)

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

// sharedItem is one array to place in shared memory: a tile's home or a reduction's
// scratch, live from its defining op to its last use (positions in program order).
type sharedItem struct {
	v *ir.Value
	// ring is the pipelined loop whose tiles this item holds (v is its first
	// tile): N slots of all its tiles, live over the whole loop.
	ring       *decision.LoopPipeline
	ringOffs   []int // each tile's offset inside a slot
	scratch    bool
	size       int
	start, end int
	offset     int
}

// allocShared is the smem pass. It places every shared array, building its
// record in place (f.SmemRecord, anew each time placeShared places the arrays),
// since its own questions (SharedHome, ringTooLarge) read the homes placed so far.
//
// Requires: layouts (layout) and staged homes (stage).
// Guarantees: every shared layout and staged home has a home in f.Homes with a pitch (odd multiples of 16
// bytes for dot operands, or dense swizzled rows where the padding would not fit;
// dense 16-byte-rounded rows otherwise) and a 128-byte
// aligned offset inside f.SmemBytes; every cross-warp reduction that needs scratch has
// an offset in f.Scratch; arrays whose lifetimes overlap do not overlap in bytes,
// and f.aliases lists, for each array, the earlier arrays whose bytes it reuses;
// transposes are views of their source's bytes; f.SmemBytes fits the target. The sync
// pass puts a barrier between the last read of one array and the first write of
// another that reuses its bytes.
func (f *fn) allocShared() error {
	order := f.placeShared(nil)
	// Where the padding costs the fit (or, as the kernel builders choose stages
	// by fit, a pipeline stage), swizzle the dot operands' rows instead, the
	// cheapest to write first.
	for c, n := swizzleCopied, 0; c <= swizzleFragments && f.SmemBytes > f.Target.MaxSharedPerBlock; c++ {
		if sw := f.swizzles(c); len(sw) > n {
			order, n = f.placeShared(sw), len(sw)
		}
	}
	if f.SmemBytes > f.Target.MaxSharedPerBlock && !f.measuring {
		for _, it := range order {
			if !it.scratch && it.ring != nil && it.size > f.Target.MaxSharedPerBlock {
				return f.ringTooLarge(it)
			}
			if !it.scratch && it.size > f.Target.MaxSharedPerBlock {
				// One tile alone is too large (whole rows of a wide row softmax):
				// say which, and the way out.
				return fmt.Errorf("kernel needs %d bytes of shared memory per CTA; %s allows at most %d; %s (%s) alone takes %d bytes: load it in column chunks inside a loop, carrying the row statistics (DESIGN.md, layouts)",
					f.SmemBytes, f.Target, f.Target.MaxSharedPerBlock, it.v, it.v.Type, it.size)
			}
		}
		return fmt.Errorf("kernel needs %d bytes of shared memory per CTA; %s allows at most %d", f.SmemBytes, f.Target, f.Target.MaxSharedPerBlock)
	}
	return nil
}

// ringTooLarge is the error of a pipelined loop whose ring of slots alone exceeds
// the target's shared memory: it names the ring and its largest tile, and the most
// stages that would fit, estimated as the kernel's bytes less the slots dropped.
func (f *fn) ringTooLarge(it *sharedItem) error {
	p, limit := it.ring, f.Target.MaxSharedPerBlock
	largest, largestBytes := p.Tiles[0], 0
	for _, t := range p.Tiles {
		if h, _ := f.SharedHome(t); h.Pitch*t.Type.Shape[0] > largestBytes {
			largest, largestBytes = t, h.Pitch*t.Type.Shape[0]
		}
	}
	msg := fmt.Sprintf("kernel needs %d bytes of shared memory per CTA; %s allows at most %d; the pipeline ring of loop %s alone takes %d bytes (%d stages x %d bytes a slot; its largest tile, %s (%s), takes %d)",
		f.SmemBytes, f.Target, limit, p.Loop.Body.Args[0], it.size, p.Stages, f.SlotBytes[p], largest, largest.Type, largestBytes)
	for k := p.Stages - 1; k >= 1; k-- {
		if need := f.SmemBytes - (p.Stages-k)*f.SlotBytes[p]; need <= limit {
			return fmt.Errorf("%s: ask for fewer stages (stages %d needs about %d bytes)", msg, k, need)
		}
	}
	return fmt.Errorf("%s: fewer stages do not fit either: load %s in smaller chunks", msg, largest)
}

// placeShared places every shared array (allocShared), swizzling the rows of the
// arrays in swizzled, and returns the arrays.
func (f *fn) placeShared(swizzled map[*ir.Value]bool) []*sharedItem {
	f.SmemRecord = decision.SmemRecord{Homes: map[*ir.Value]decision.Layout{}, Scratch: map[*ir.Value]int{}, Aliases: map[*ir.Value][]*ir.Value{}, SlotBytes: map[*decision.LoopPipeline]int{}, IndexSlotBytes: map[*ir.Value]int{}}
	pos := map[*ir.Op]int{}
	loopEnd := map[*ir.Op]int{}
	inLoop := map[*ir.Op]*ir.Op{} // op -> innermost enclosing loop
	n := 0
	var number func(b *ir.Block, loop *ir.Op)
	number = func(b *ir.Block, loop *ir.Op) {
		for _, o := range b.Ops {
			pos[o] = n
			n++
			inLoop[o] = loop
			if o.Body != nil {
				number(o.Body, o)
				loopEnd[o] = n
				n++
			}
		}
	}
	number(f.Kernel.Body, nil)
	// Tiles a dot reads (through ldmatrix) need the conflict-free odd pitch; the
	// rest are read by runs of consecutive elements, for which dense rows are
	// conflict-free (a warp's runs are one contiguous range).
	mmaOperand := f.dotOperands()
	items := map[*ir.Value]*sharedItem{}
	var order []*sharedItem
	add := func(v *ir.Value, size int, scratch bool) {
		it := &sharedItem{v: v, size: size, start: pos[v.Def], end: pos[v.Def], scratch: scratch}
		order = append(order, it)
		if !scratch {
			items[v] = it
		}
	}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind == ir.OpDot {
			if sz := f.splitScratch(o); sz > 0 {
				add(o.Result(), sz, true)
			}
		}
		for _, r := range o.Results {
			if h, ok := f.Staged[r]; ok && r.Type.Rank() == 1 {
				h.Pitch = r.Type.Elem.Size()
				if r.Type.Elem == ir.I1 {
					h.Pitch = 4 // a predicate is stored as a 32-bit 0 or 1 (stageRows)
				}
				f.Homes[r] = h
				if p := f.Pipeline.ByIndex[r]; p != nil {
					// An index tile's ring, written from the loop's prologue on.
					f.IndexSlotBytes[r] = roundUp(h.Pitch*r.Type.Shape[0], 16)
					it := &sharedItem{v: r, size: p.IndexSlots() * f.IndexSlotBytes[r], start: pos[p.Loop], end: loopEnd[p.Loop]}
					order = append(order, it)
					items[r] = it
					continue
				}
				add(r, roundUp(h.Pitch*r.Type.Shape[0], 16), false)
				if o.Kind != ir.OpReduce { // a staged reduction result still needs its cross-warp scratch
					continue
				}
			}
			if o.Kind == ir.OpTrans || r.Type.Rank() != 2 {
				if o.Kind == ir.OpReduce {
					if sz := f.reduceScratch(o); sz > 0 {
						add(r, sz, true)
					}
				}
				continue
			}
			if h, ok := f.SharedHome(r); ok {
				h.Pitch, h.Swizzle = tilePitch(r, mmaOperand, swizzled), swizzled[r]
				f.Homes[r] = h
				if p := f.PipeTile(r); p != nil {
					if r == p.Tiles[0] {
						order = append(order, f.ringItem(p, pos[p.Loop], loopEnd[p.Loop], mmaOperand, swizzled))
					}
					continue
				}
				add(r, h.Pitch*r.Type.Shape[0], false)
			}
		}
	})
	// A recomputed value is evaluated where its consumers are, so a use by one
	// counts at its consumers' positions, transitively.
	users := map[*ir.Value][]*ir.Op{}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		for _, a := range o.Args {
			users[a] = append(users[a], o)
		}
		if o.Body != nil {
			for _, y := range o.Body.Yield {
				users[y] = append(users[y], o)
			}
		}
	})
	var usesOf func(v *ir.Value, seen map[*ir.Value]bool) []*ir.Op
	usesOf = func(v *ir.Value, seen map[*ir.Value]bool) []*ir.Op {
		var out []*ir.Op
		for _, o := range users[v] {
			// A row vector's broadcast is read where its consumers are, too.
			if len(o.Results) == 1 && (f.Layouts[o.Result()].Kind == decision.Expr || f.isRowView(o.Result())) && !seen[o.Result()] {
				seen[o.Result()] = true
				out = append(out, usesOf(o.Result(), seen)...)
			}
			out = append(out, o)
		}
		return out
	}
	// A use extends a lifetime to the use, or to the end of the outermost loop that
	// encloses the use but not the definition (the array must survive iterations).
	// A dot that holds its A in registers across its loop (HeldA) reads A's home
	// once, where the loop is entered and before its ring is filled: that read ends
	// there, just before the loop, so the loop's arrays may take A's bytes.
	heldAt := map[*ir.Op]int{}
	for loop, dots := range f.HeldA {
		for _, d := range dots {
			heldAt[d] = pos[loop] - 1
		}
	}
	for v, it := range items {
		defLoop := inLoop[it.v.Def]
		for _, o := range usesOf(v, map[*ir.Value]bool{}) {
			if at, ok := heldAt[o]; ok && o.Args[0] == v {
				it.end = max(it.end, at)
				continue
			}
			end := pos[o]
			for l := inLoop[o]; l != nil && l != defLoop; l = inLoop[l] {
				end = max(end, loopEnd[l])
			}
			it.end = max(it.end, end)
		}
	}
	// Views: uses of a transpose are uses of its source.
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind != ir.OpTrans {
			return
		}
		it := items[ir.StorageOf(o.Args[0])]
		if it == nil {
			return
		}
		defLoop := inLoop[it.v.Def]
		for _, u := range usesOf(o.Result(), map[*ir.Value]bool{}) {
			end := pos[u]
			for l := inLoop[u]; l != nil && l != defLoop; l = inLoop[l] {
				end = max(end, loopEnd[l])
			}
			it.end = max(it.end, end)
		}
	})
	top := 0
	var placed []*sharedItem
	for _, it := range order {
		off := 0
		for {
			clash := false
			for _, p := range placed {
				if p.end >= it.start && p.start <= it.end && off < p.offset+p.size && p.offset < off+it.size {
					off = roundUp(p.offset+p.size, 128)
					clash = true
				}
			}
			if !clash {
				break
			}
		}
		it.offset = off
		for _, p := range placed {
			if off < p.offset+p.size && p.offset < off+it.size {
				for _, v := range it.values() {
					f.Aliases[v] = append(f.Aliases[v], p.values()...)
				}
			}
		}
		placed = append(placed, it)
		top = max(top, off+it.size)
		switch {
		case it.ring != nil:
			for i, t := range it.ring.Tiles {
				h, _ := f.SharedHome(t)
				h.Offset = off + it.ringOffs[i]
				f.Homes[t] = h
			}
		case it.scratch:
			f.Scratch[it.v] = off
		default:
			h, _ := f.SharedHome(it.v)
			h.Offset = off
			f.Homes[it.v] = h
		}
	}
	// Transposed views share their source's storage.
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind == ir.OpTrans {
			if src, ok := f.SharedHome(o.Args[0]); ok {
				src.Trans = !src.Trans
				f.Homes[o.Result()] = src
			}
		}
	})
	f.SmemBytes = roundUp(top, 128)
	return order
}

// ringItem is the shared array of a pipelined loop's ring: its tiles side by
// side in a slot (each 128-byte aligned), stages slots, live from the loop's
// prologue to its end. The tiles' pitches are already set.
func (f *fn) ringItem(p *decision.LoopPipeline, start, end int, mmaOperand, swizzled map[*ir.Value]bool) *sharedItem {
	it := &sharedItem{v: p.Tiles[0], ring: p, start: start, end: end}
	slot := 0
	for _, t := range p.Tiles {
		h, _ := f.SharedHome(t)
		h.Pitch, h.Swizzle = tilePitch(t, mmaOperand, swizzled), swizzled[t]
		f.Homes[t] = h
		slot = roundUp(slot, 128)
		it.ringOffs = append(it.ringOffs, slot)
		slot += h.Pitch * t.Type.Shape[0]
	}
	f.SlotBytes[p] = roundUp(slot, 128)
	it.size = p.Stages * f.SlotBytes[p]
	return it
}

// values are the arrays an item holds: its value, or a ring's tiles.
func (it *sharedItem) values() []*ir.Value {
	if it.ring != nil {
		return it.ring.Tiles
	}
	return []*ir.Value{it.v}
}

// tilePitch is the row pitch of a rank-2 tile's shared home: the conflict-free odd
// pitch for a tile a dot reads (through ldmatrix) unless it is swizzled, dense rows
// for the rest (read by runs of consecutive elements, conflict-free for a warp's
// contiguous range).
func tilePitch(r *ir.Value, mmaOperand, swizzled map[*ir.Value]bool) int {
	if mmaOperand[r] && !swizzled[r] {
		return sharedPitch(r.Type.Shape[1] * r.Type.Elem.Size())
	}
	return roundUp(r.Type.Shape[1]*r.Type.Elem.Size(), 16)
}

// dotOperands are the arrays a dot reads through ldmatrix (a transpose reads its
// source's bytes) or, for `a computed`, at fragment coordinates.
func (f *fn) dotOperands() map[*ir.Value]bool {
	m := map[*ir.Value]bool{}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind == ir.OpDot {
			if f.AComputed(o) {
				f.computedLeaves(o.Args[0], m)
			} else {
				m[ir.StorageOf(o.Args[0])] = true
			}
			if f.BComputed(o) {
				f.computedLeaves(o.Args[1], m)
			} else {
				m[ir.StorageOf(o.Args[1])] = true
			}
		}
	})
	return m
}

// Swizzle classes: how a tile is written, in the order the smem pass swizzles
// them, cheapest first. Reading a swizzled tile through ldmatrix costs the same
// for all (an XOR per k16 step, emit_dot); writing one costs an XOR per address:
// of a 16-byte copy, of a computed run of up to 16 bytes, or of each 4- or 8-byte
// pair of mma fragments.
const (
	swizzleCopied = iota
	swizzleComputed
	swizzleFragments
)

// swizzles are the dot operands of class at most upTo whose shared rows can be
// swizzled instead of padded: rows of whole 128-byte groups, so the XOR by
// (row & 7) permutes the 16-byte chunks within each group and the 8 rows an
// ldmatrix matrix reads land in 8 bank groups with no padding.
func (f *fn) swizzles(upTo int) map[*ir.Value]bool {
	ok := map[*ir.Value]bool{}
	// A transposed A operand reads its 8x8 blocks with ldmatrix .trans from padded
	// rows only (emit_dot's aFrags has no swizzled form of it).
	transposedA := map[*ir.Value]bool{}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind == ir.OpDot && ir.StorageOf(o.Args[0]) != o.Args[0] {
			transposedA[ir.StorageOf(o.Args[0])] = true
		}
	})
	for v := range f.dotOperands() {
		if _, home := f.SharedHome(v); home && !transposedA[v] && v.Type.Rank() == 2 && v.Type.Shape[1]*v.Type.Elem.Size()%128 == 0 && f.swizzleClass(v) <= upTo {
			ok[v] = true
		}
	}
	return ok
}

// swizzleClass is how v's shared home is written.
func (f *fn) swizzleClass(v *ir.Value) int {
	switch {
	case v.Def.Kind == ir.OpLoad:
		return swizzleCopied
	case f.Layouts[v].Kind == decision.Acc:
		return swizzleFragments
	}
	return swizzleComputed
}

// reduceScratch is the shared memory a reduction needs to combine partial results
// across warps (0 when the reduced axis is inside one warp), or a dot split along
// its reduction needs for its all-reduce (splitScratch).
func (f *fn) reduceScratch(o *ir.Op) int {
	if o.Kind == ir.OpDot {
		return f.splitScratch(o)
	}
	x := o.Args[0]
	l := f.ReduceSources[o]
	if o.Int == 1 && l.WN > 1 {
		return l.WN * x.Type.Shape[0] * 4
	}
	if o.Int == 0 && l.WM > 1 {
		return l.WM * x.Type.Shape[1] * 4
	}
	return 0
}

// splitScratch is the shared scratch a split dot's all-reduce needs (0 for none).
func (f *fn) splitScratch(o *ir.Op) int {
	parts := f.SplitK[o]
	if parts < 2 || f.SplitPartial[o.Result()] {
		return 0
	}
	// Each row group's warps write one f32 per element of the group's rows.
	r := o.Result()
	return parts * r.Type.Shape[0] * r.Type.Shape[1] * 4
}
