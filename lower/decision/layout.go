package decision

import "fmt"

// LayoutKind says where a tile lives between the op that makes it and its uses.
type LayoutKind uint8

const (
	// Scalar: one register, the same in every thread.
	Scalar LayoutKind = iota
	// Expr: never stored; every use recomputes the element it needs from its
	// coordinates (iota, constants, masks, row offsets, gathered indices).
	Expr
	// Shared: a row-major array in shared memory, filled by cp.async (loads) and
	// read by ldmatrix (dot operands) or ld.shared.
	Shared
	// Acc: distributed over the warps as mma.sync m16n8 accumulator fragments.
	Acc
	// Rows / Cols: a rank-1 tile along the rows / columns of an Acc tile, held by
	// the threads that hold those rows / columns.
	Rows
	Cols
	// Threads: a rank-1 tile carried through a loop that is not a row or column
	// vector of fragments: element i is held in a register of thread i mod the
	// CTA's threads (ceil(n / threads) registers each). Only elementwise ops, loop
	// carries and rank-1 stores use it.
	Threads
)

// Layout is a tile's placement.
type Layout struct {
	Kind LayoutKind
	// WM x WN warps split an Acc tile (and its Rows/Cols vectors); with Rep > 1,
	// WN is 1 and each group of Rep warps holds identical copies of its rows.
	WM, WN, Rep int
	// Shared: byte Offset in the CTA's shared memory, row Pitch in bytes, and
	// whether the tile is a transposed view of the stored array. A swizzled array's
	// rows are dense whole 128-byte groups whose 16-byte chunks are XORed by
	// (row & 7): byte b of row r is at r*Pitch + (b ^ (r&7)<<4) (smem).
	Offset, Pitch int
	Trans         bool
	Swizzle       bool
	// Perm: an Acc tile's columns are in `kperm` order (ir.DotSchedule.KPerm): in
	// each warp's groups of 16, fragment column 8i+2t+h (n8 tile i of the group,
	// lane t) holds column 4t+2i+h.
	Perm bool
}

func (l Layout) String() string {
	switch l.Kind {
	case Scalar:
		return "scalar"
	case Expr:
		return "recomputed"
	case Shared:
		s := fmt.Sprintf("shared[%d] pitch %d", l.Offset, l.Pitch)
		if l.Swizzle {
			s += " swizzled"
		}
		if l.Trans {
			s += " transposed"
		}
		return s
	case Acc:
		if l.Rep > 1 {
			return fmt.Sprintf("mma fragments, %d row groups, each held whole by %d warps", l.WM, l.Rep)
		}
		if l.Perm {
			return fmt.Sprintf("mma fragments, %dx%d warps, columns in kperm order", l.WM, l.WN)
		}
		return fmt.Sprintf("mma fragments, %dx%d warps", l.WM, l.WN)
	case Rows:
		if l.Rep > 1 {
			return fmt.Sprintf("rows of mma fragments, %d row groups of %d warps", l.WM, l.Rep)
		}
		return fmt.Sprintf("rows of mma fragments, %dx%d warps", l.WM, l.WN)
	case Cols:
		return fmt.Sprintf("columns of mma fragments, %dx%d warps", l.WM, l.WN)
	case Threads:
		return "per-thread elements"
	}
	return "?"
}

func (l Layout) AccFamily() bool { return l.Kind == Acc || l.Kind == Rows || l.Kind == Cols }

// Copies is the number of warps holding each element of an Acc tile.
func (l Layout) Copies() int { return max(l.Rep, 1) }

// RowGroupWarps is the number of warps that share one row group.
func (l Layout) RowGroupWarps() int { return l.WN * l.Copies() }

// Granules of mma.sync m16n8k16: the dimensions a dot consumes are padded to these,
// never to a power of two.
const (
	GranuleM = 16
	GranuleN = 8
	GranuleK = 16
)
