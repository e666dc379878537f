package kernels

import (
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/mla"
)

// candidateList is a row's candidates as one list of tiles: the segments' tiles
// concatenated, segment 0's first. The decode and its gather ceiling walk a CTA's
// share of it in one pipelined loop, so the ring stays full across a segment's
// end (a loop per segment drained the ring and paid the next segment's index
// round trip before its first gather); each tile reads the buffers of the segment
// it lies in, chosen by scalar selects.
type candidateList struct {
	shape  mla.Shape
	segs   []segParams
	n      int         // candidates per tile
	first  []int       // the list's index of each segment's first tile
	limits []*ir.Value // each segment's valid prefix: len clamped to [0, K], or K
	idxRow []*ir.Value // each segment's offset of the row's indices
}

// newCandidateList loads the row's lengths (they bound validity only, so no
// gather waits for them).
func newCandidateList(b *ir.Builder, sh mla.Shape, segs []segParams, row64 *ir.Value, n int) *candidateList {
	l := &candidateList{shape: sh, segs: segs, n: n}
	tiles := 0
	for s, sc := range sh.Segments {
		l.first = append(l.first, tiles)
		tiles += ceilDiv(sc.K, n)
		limit := b.I32(int64(sc.K))
		if segs[s].length != nil {
			limit = b.Min(b.Max(b.Load1(segs[s].length, row64, nil), b.I32(0)), b.I32(int64(sc.K)))
		}
		l.limits = append(l.limits, limit)
		l.idxRow = append(l.idxRow, b.Mul(row64, segs[s].idxStride))
	}
	return l
}

// preloads reports whether the indices of a share of up to perMax tiles are loaded
// before the loop: where no segment's part of it exceeds mlaPreloadIDs (the
// shared memory the per-segment preloads took before the loops were one).
func (l *candidateList) preloads(perMax int) bool {
	for _, sc := range l.shape.Segments {
		if min(perMax, ceilDiv(sc.K, l.n))*l.n > mlaPreloadIDs {
			return false
		}
	}
	return true
}

// preload loads the indices of the n list positions from tile lo, those at or
// past tile hi masked off: each segment's load masked to its own positions, then
// selected per position.
func (l *candidateList) preload(b *ir.Builder, lo, hi *ir.Value, n int) *ir.Value {
	gpos := b.Add(b.Mul(lo, b.I32(int64(l.n))), b.Iota(n))
	inShare := b.Cmp(ir.CmpLT, gpos, b.Mul(hi, b.I32(int64(l.n))))
	var ids *ir.Value
	for s, sc := range l.shape.Segments {
		start := int64(l.first[s] * l.n)
		pos := b.Sub(gpos, b.I32(start))
		in := b.And(inShare, b.And(b.Cmp(ir.CmpGE, pos, b.I32(0)), b.Cmp(ir.CmpLT, pos, b.I32(int64(sc.K)))))
		seg := b.Load1(l.segs[s].idx, b.Add(l.idxRow[s], b.Cast(pos, ir.I64)), in)
		if ids == nil {
			ids = seg
		} else {
			ids = b.Select(b.Cmp(ir.CmpGE, gpos, b.I32(start)), seg, ids)
		}
	}
	return b.Name(ids, "cta_ids")
}

// candidateTile is one tile's candidates and where their records are.
type candidateTile struct {
	pos      *ir.Value // positions in the tile's segment
	ids      *ir.Value // pool slots
	valid    *ir.Value // inside the row's prefix and inside the pool
	cache    *ir.Value // the segment's cache
	pageBase *ir.Value // byte offset of each candidate's page
	slot     *ir.Value // each candidate's slot in its page
	// scaleBlock is the byte offset, in a page, of its scale blocks (fp8ds: after
	// the page's records).
	scaleBlock *ir.Value
}

// tile is list tile j's candidates. ids are its indices when preloaded (a slice of
// preload's result), nil to load them here.
func (l *candidateList) tile(b *ir.Builder, j, ids *ir.Value) candidateTile {
	segs, sh := l.segs, l.shape.Segments
	// from[s]: the tile lies in segment s or a later one.
	from := make([]*ir.Value, len(sh))
	for s := 1; s < len(sh); s++ {
		from[s] = b.Cmp(ir.CmpGE, j, b.I32(int64(l.first[s])))
	}
	// pick is segment s's value of the tile's segment, v(s), by scalar selects.
	pick := func(v func(s int) *ir.Value) *ir.Value {
		x := v(0)
		for s := 1; s < len(sh); s++ {
			x = b.Select(from[s], v(s), x)
		}
		return x
	}
	// pickInt is pick of constants: one constant where the segments agree.
	pickInt := func(v func(s int) int64, c func(int64) *ir.Value) *ir.Value {
		for s := 1; s < len(sh); s++ {
			if v(s) != v(0) {
				return pick(func(s int) *ir.Value { return c(v(s)) })
			}
		}
		return c(v(0))
	}
	i32 := func(x int64) *ir.Value { return b.I32(x) }
	start := pickInt(func(s int) int64 { return int64(l.first[s] * l.n) }, i32)
	pos := b.Name(b.Add(b.Sub(b.Mul(j, b.I32(int64(l.n))), start), b.Iota(l.n)), "pos")
	if ids == nil {
		idx := pick(func(s int) *ir.Value { return segs[s].idx })
		row := pick(func(s int) *ir.Value { return l.idxRow[s] })
		k := pickInt(func(s int) int64 { return int64(sh[s].K) }, i32)
		ids = b.Load1(idx, b.Add(row, b.Cast(pos, ir.I64)), b.Cmp(ir.CmpLT, pos, k))
	}
	ids = b.Name(ids, "ids")
	slots := pick(func(s int) *ir.Value { return segs[s].slots })
	inPool := b.And(b.Cmp(ir.CmpGE, ids, b.I32(0)), b.Cmp(ir.CmpLT, ids, slots))
	limit := pick(func(s int) *ir.Value { return l.limits[s] })
	t := candidateTile{pos: pos, ids: ids, valid: b.Name(b.And(b.Cmp(ir.CmpLT, pos, limit), inPool), "valid")}
	// Page and slot by the segment's page size: one division where the sizes agree.
	pageSlot := func(s int) (*ir.Value, *ir.Value) {
		ps := b.I32(int64(sh[s].PageSize))
		return b.Cast(b.Div(ids, ps), ir.I64), b.Cast(b.Rem(ids, ps), ir.I64)
	}
	page, slot := pageSlot(0)
	for s := 1; s < len(sh); s++ {
		if sh[s].PageSize != sh[0].PageSize {
			p, q := pageSlot(s)
			page, slot = b.Select(from[s], p, page), b.Select(from[s], q, slot)
		}
	}
	t.cache = pick(func(s int) *ir.Value { return segs[s].cache })
	t.pageBase = b.Mul(page, pick(func(s int) *ir.Value { return segs[s].pageStride }))
	t.slot = slot
	t.scaleBlock = pickInt(func(s int) int64 { return int64(sh[s].PageSize) * mla.FP8DSRecordBytes }, func(x int64) *ir.Value { return b.I64(x) })
	return t
}
