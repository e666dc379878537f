package lower

import "fmt"

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
	// lThreads: a rank-1 tile carried through a loop that is not a row or column
	// vector of fragments: element i is held in a register of thread i mod the
	// CTA's threads (ceil(n / threads) registers each). Only elementwise ops, loop
	// carries and rank-1 stores use it.
	lThreads
)

// layout is a tile's placement.
type layout struct {
	kind layoutKind
	// wm x wn warps split an lAcc tile (and its lRows/lCols vectors); with rep > 1,
	// wn is 1 and each group of rep warps holds identical copies of its rows.
	wm, wn, rep int
	// lShared: byte offset in the CTA's shared memory, row pitch in bytes, and
	// whether the tile is a transposed view of the stored array. A swizzled array's
	// rows are dense whole 128-byte groups whose 16-byte chunks are XORed by
	// (row & 7): byte b of row r is at r*pitch + (b ^ (r&7)<<4) (smem).
	offset, pitch int
	trans         bool
	swizzle       bool
}

func (l layout) String() string {
	switch l.kind {
	case lScalar:
		return "scalar"
	case lExpr:
		return "recomputed"
	case lShared:
		s := fmt.Sprintf("shared[%d] pitch %d", l.offset, l.pitch)
		if l.swizzle {
			s += " swizzled"
		}
		if l.trans {
			s += " transposed"
		}
		return s
	case lAcc:
		if l.rep > 1 {
			return fmt.Sprintf("mma fragments, %d row groups, each held whole by %d warps", l.wm, l.rep)
		}
		return fmt.Sprintf("mma fragments, %dx%d warps", l.wm, l.wn)
	case lRows:
		if l.rep > 1 {
			return fmt.Sprintf("rows of mma fragments, %d row groups of %d warps", l.wm, l.rep)
		}
		return fmt.Sprintf("rows of mma fragments, %dx%d warps", l.wm, l.wn)
	case lCols:
		return fmt.Sprintf("columns of mma fragments, %dx%d warps", l.wm, l.wn)
	case lThreads:
		return "per-thread elements"
	}
	return "?"
}

func (l layout) accFamily() bool { return l.kind == lAcc || l.kind == lRows || l.kind == lCols }

// copies is the number of warps holding each element of an lAcc tile.
func (l layout) copies() int { return max(l.rep, 1) }

// rowGroupWarps is the number of warps that share one row group.
func (l layout) rowGroupWarps() int { return l.wn * l.copies() }
