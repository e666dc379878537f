package lower

import (
	"fmt"
	"github.com/ptxgen/ptxgen/ir"
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
	ring       *loopPipeline
	ringOffs   []int // each tile's offset inside a slot
	scratch    bool
	size       int
	start, end int
	offset     int
}

// smemRecord is what the smem pass decided. It places the shared homes layout
// and stage gave without changing their records: homes holds each placed home
// (a shared layout, a transposed view of one, a staged home) with its offset,
// pitch and swizzle, which f.sharedHome and f.placed read.
type smemRecord struct {
	homes     map[*ir.Value]layout
	scratch   map[*ir.Value]int // offset of a cross-warp reduction's or split dot's scratch
	aliases   map[*ir.Value][]*ir.Value
	slotBytes map[*loopPipeline]int // a ring's distance between slots: slot s of tile t is at t's offset + s x slotBytes
	smem      int                   // dynamic shared memory bytes
}

// allocShared is the smem pass. It places every shared array, building its
// record in place (f.smemRecord, anew each time placeShared places the arrays),
// since its own questions (sharedHome, ringTooLarge) read the homes placed so far.
//
// Requires: layouts (layout) and staged homes (stage).
// Guarantees: every shared layout and staged home has a home in f.homes with a pitch (odd multiples of 16
// bytes for dot operands, or dense swizzled rows where the padding would not fit;
// dense 16-byte-rounded rows otherwise) and a 128-byte
// aligned offset inside f.smem; every cross-warp reduction that needs scratch has
// an offset in f.scratch; arrays whose lifetimes overlap do not overlap in bytes,
// and f.aliases lists, for each array, the earlier arrays whose bytes it reuses;
// transposes are views of their source's bytes; f.smem fits the target. The sync
// pass puts a barrier between the last read of one array and the first write of
// another that reuses its bytes.
func (f *fn) allocShared() error {
	order := f.placeShared(nil)
	// Where the padding costs the fit (or, as the kernel builders choose stages
	// by fit, a pipeline stage), swizzle the dot operands' rows instead, the
	// cheapest to write first.
	for c, n := swizzleCopied, 0; c <= swizzleFragments && f.smem > f.target.MaxSharedPerBlock; c++ {
		if sw := f.swizzles(c); len(sw) > n {
			order, n = f.placeShared(sw), len(sw)
		}
	}
	if f.smem > f.target.MaxSharedPerBlock && !f.measuring {
		for _, it := range order {
			if !it.scratch && it.ring != nil && it.size > f.target.MaxSharedPerBlock {
				return f.ringTooLarge(it)
			}
			if !it.scratch && it.size > f.target.MaxSharedPerBlock {
				// One tile alone is too large (whole rows of a wide row softmax):
				// say which, and the way out.
				return fmt.Errorf("kernel needs %d bytes of shared memory per CTA; %s allows at most %d; %s (%s) alone takes %d bytes: load it in column chunks inside a loop, carrying the row statistics (DESIGN.md, layouts)",
					f.smem, f.target, f.target.MaxSharedPerBlock, it.v, it.v.Type, it.size)
			}
		}
		return fmt.Errorf("kernel needs %d bytes of shared memory per CTA; %s allows at most %d", f.smem, f.target, f.target.MaxSharedPerBlock)
	}
	return nil
}

// ringTooLarge is the error of a pipelined loop whose ring of slots alone exceeds
// the target's shared memory: it names the ring and its largest tile, and the most
// stages that would fit, estimated as the kernel's bytes less the slots dropped.
func (f *fn) ringTooLarge(it *sharedItem) error {
	p, limit := it.ring, f.target.MaxSharedPerBlock
	largest, largestBytes := p.tiles[0], 0
	for _, t := range p.tiles {
		if h, _ := f.sharedHome(t); h.pitch*t.Type.Shape[0] > largestBytes {
			largest, largestBytes = t, h.pitch*t.Type.Shape[0]
		}
	}
	msg := fmt.Sprintf("kernel needs %d bytes of shared memory per CTA; %s allows at most %d; the pipeline ring of loop %s alone takes %d bytes (%d stages x %d bytes a slot; its largest tile, %s (%s), takes %d)",
		f.smem, f.target, limit, p.loop.Body.Args[0], it.size, p.stages, f.slotBytes[p], largest, largest.Type, largestBytes)
	for k := p.stages - 1; k >= 1; k-- {
		if need := f.smem - (p.stages-k)*f.slotBytes[p]; need <= limit {
			return fmt.Errorf("%s: ask for fewer stages (stages %d needs about %d bytes)", msg, k, need)
		}
	}
	return fmt.Errorf("%s: fewer stages do not fit either: load %s in smaller chunks", msg, largest)
}

// placeShared places every shared array (allocShared), swizzling the rows of the
// arrays in swizzled, and returns the arrays.
func (f *fn) placeShared(swizzled map[*ir.Value]bool) []*sharedItem {
	f.smemRecord = smemRecord{homes: map[*ir.Value]layout{}, scratch: map[*ir.Value]int{}, aliases: map[*ir.Value][]*ir.Value{}, slotBytes: map[*loopPipeline]int{}}
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
	number(f.k.Body, nil)
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
	walkOps(f.k.Body, func(o *ir.Op) {
		if o.Kind == ir.OpDot {
			if sz := f.splitScratch(o); sz > 0 {
				add(o.Result(), sz, true)
			}
		}
		for _, r := range o.Results {
			if h, ok := f.staged[r]; ok && r.Type.Rank() == 1 {
				h.pitch = r.Type.Elem.Size()
				if r.Type.Elem == ir.I1 {
					h.pitch = 4 // a predicate is stored as a 32-bit 0 or 1 (stageRows)
				}
				f.homes[r] = h
				add(r, roundUp(h.pitch*r.Type.Shape[0], 16), false)
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
			if h, ok := f.sharedHome(r); ok {
				h.pitch, h.swizzle = tilePitch(r, mmaOperand, swizzled), swizzled[r]
				f.homes[r] = h
				if p := f.pipeTile(r); p != nil {
					if r == p.tiles[0] {
						order = append(order, f.ringItem(p, pos[p.loop], loopEnd[p.loop], mmaOperand, swizzled))
					}
					continue
				}
				add(r, h.pitch*r.Type.Shape[0], false)
			}
		}
	})
	// A recomputed value is evaluated where its consumers are, so a use by one
	// counts at its consumers' positions, transitively.
	users := map[*ir.Value][]*ir.Op{}
	walkOps(f.k.Body, func(o *ir.Op) {
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
			if len(o.Results) == 1 && (f.layouts[o.Result()].kind == lExpr || f.isRowView(o.Result())) && !seen[o.Result()] {
				seen[o.Result()] = true
				out = append(out, usesOf(o.Result(), seen)...)
			}
			out = append(out, o)
		}
		return out
	}
	// A use extends a lifetime to the use, or to the end of the outermost loop that
	// encloses the use but not the definition (the array must survive iterations).
	for v, it := range items {
		defLoop := inLoop[it.v.Def]
		for _, o := range usesOf(v, map[*ir.Value]bool{}) {
			end := pos[o]
			for l := inLoop[o]; l != nil && l != defLoop; l = inLoop[l] {
				end = max(end, loopEnd[l])
			}
			it.end = max(it.end, end)
		}
	}
	// Views: uses of a transpose are uses of its source.
	walkOps(f.k.Body, func(o *ir.Op) {
		if o.Kind != ir.OpTrans {
			return
		}
		it := items[storageOf(o.Args[0])]
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
					f.aliases[v] = append(f.aliases[v], p.values()...)
				}
			}
		}
		placed = append(placed, it)
		top = max(top, off+it.size)
		switch {
		case it.ring != nil:
			for i, t := range it.ring.tiles {
				h, _ := f.sharedHome(t)
				h.offset = off + it.ringOffs[i]
				f.homes[t] = h
			}
		case it.scratch:
			f.scratch[it.v] = off
		default:
			h, _ := f.sharedHome(it.v)
			h.offset = off
			f.homes[it.v] = h
		}
	}
	// Transposed views share their source's storage.
	walkOps(f.k.Body, func(o *ir.Op) {
		if o.Kind == ir.OpTrans {
			if src, ok := f.sharedHome(o.Args[0]); ok {
				src.trans = !src.trans
				f.homes[o.Result()] = src
			}
		}
	})
	f.smem = roundUp(top, 128)
	return order
}

// ringItem is the shared array of a pipelined loop's ring: its tiles side by
// side in a slot (each 128-byte aligned), stages slots, live from the loop's
// prologue to its end. The tiles' pitches are already set.
func (f *fn) ringItem(p *loopPipeline, start, end int, mmaOperand, swizzled map[*ir.Value]bool) *sharedItem {
	it := &sharedItem{v: p.tiles[0], ring: p, start: start, end: end}
	slot := 0
	for _, t := range p.tiles {
		h, _ := f.sharedHome(t)
		h.pitch, h.swizzle = tilePitch(t, mmaOperand, swizzled), swizzled[t]
		f.homes[t] = h
		slot = roundUp(slot, 128)
		it.ringOffs = append(it.ringOffs, slot)
		slot += h.pitch * t.Type.Shape[0]
	}
	f.slotBytes[p] = roundUp(slot, 128)
	it.size = p.stages * f.slotBytes[p]
	return it
}

// values are the arrays an item holds: its value, or a ring's tiles.
func (it *sharedItem) values() []*ir.Value {
	if it.ring != nil {
		return it.ring.tiles
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
	walkOps(f.k.Body, func(o *ir.Op) {
		if o.Kind == ir.OpDot {
			if f.aComputed(o) {
				f.computedLeaves(o.Args[0], m)
			} else {
				m[storageOf(o.Args[0])] = true
			}
			if f.bComputed(o) {
				f.computedLeaves(o.Args[1], m)
			} else {
				m[storageOf(o.Args[1])] = true
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
	walkOps(f.k.Body, func(o *ir.Op) {
		if o.Kind == ir.OpDot && storageOf(o.Args[0]) != o.Args[0] {
			transposedA[storageOf(o.Args[0])] = true
		}
	})
	for v := range f.dotOperands() {
		if _, home := f.sharedHome(v); home && !transposedA[v] && v.Type.Rank() == 2 && v.Type.Shape[1]*v.Type.Elem.Size()%128 == 0 && f.swizzleClass(v) <= upTo {
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
	case f.layouts[v].kind == lAcc:
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
	l, err := f.reduceSource(o)
	if err != nil {
		return 0
	}
	if o.Int == 1 && l.wn > 1 {
		return l.wn * x.Type.Shape[0] * 4
	}
	if o.Int == 0 && l.wm > 1 {
		return l.wm * x.Type.Shape[1] * 4
	}
	return 0
}
