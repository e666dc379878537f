package lower

// RowsFirstGrid is the warp grid the layout pass starts every dot from: mt x nt
// m16n8 tiles split over warps with whole rows per warp where the tiles allow
// (the fewest column groups), so row reductions stay inside a warp.
func RowsFirstGrid(mt, nt, warps int) (wm, wn int, err error) { return ChooseWarpGrid(mt, nt, warps) }

// FewestBytesGrid is the split of mt x nt m16n8 tiles over warps that minimizes
// the operand bytes the warps read, wn x bytesA + wm x bytesB (every column group
// reads A, every row group B), starting from wm x wn and keeping it on ties: the
// layout pass's cost for dots whose A is not held in registers, which a kernel
// builder that states its dots' schedules may use as its own.
func FewestBytesGrid(mt, nt, warps, wm, wn int, bytesA, bytesB float64) (int, int) {
	return cheapestGrid(mt, nt, warps, wm, wn, bytesA, bytesB)
}
