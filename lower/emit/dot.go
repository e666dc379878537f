package emit

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

// dot emits mma.sync m16n8k16 over the k16 steps, loading A and B fragments from
// shared memory with ldmatrix (or taking A from the registers of an earlier result).
// dotPlan is one dot being emitted: its layouts, its accumulators (which the
// mma.sync of each k16 step replace) and the per-warp bases of its operands.
type dotPlan struct {
	a, b       *ir.Value
	r          *ir.Value
	al, bl     decision.Layout
	mt, nt, ks int
	in         string
	acc        [][][4]ptx.Operand
	chain      []*dotPlan // earlier dots of a fused group accumulating into acc
	aBase      ptx.Operand
	b4, b2     ptx.Operand
	// Swizzled operands' bases (swizzledBase), in place of aBase, b4 and b2.
	aSw, b4Sw, b2Sw *swizzledBase
	// held are this warp's A fragments by k16 step and m16 tile, loaded before the
	// loop and held across it (`a regs` on an A in shared memory: holdA); nil
	// when A is read at the dot.
	held [][][4]ptx.Operand
	// bRegs: B is read from the fragments that hold it (BInRegisters), transposed
	// by movmatrix, instead of by ldmatrix from a shared home.
	bRegs bool
	// computed: A's fragments are evaluated from its definition (AComputed), the
	// warp's share of the reduction split kParts ways.
	computed bool
	kParts   int
	// BComputed: B's fragments are evaluated from its definition (BComputed), as
	// computed A's.
	BComputed bool
	// kperm: B's pairs are read in `kperm` order (ir.DotSchedule.KPerm); permA: so
	// are A's fragments (a transposed B: permutedAFrags), from A's rows (aRows) and
	// the warp's share of the reduction (kStart, nil for all of it).
	kperm, permA bool
	aRows        *coords
	kStart       ptx.Operand
}

// swizzledBase is the ldmatrix addresses of one operand of a dot that reads a
// swizzled tile. A step j of 32 bytes along the rows reads at base j%4 plus
// 128*(j/4): the XOR by the row's bits permutes the chunks inside a 128-byte
// group and leaves the group bits alone.
type swizzledBase struct {
	swizzled bool
	// aligned: the warp's column base leaves the bits of the lane's column and of
	// the steps free, so base m is base 0 XOR 32m (plus 32m when not swizzled):
	// one instruction in the k step that uses it instead of four registers live
	// through the dot. Otherwise base m is row + ((col + 32m) ^ bits), from the
	// lane's row address, logical byte column and row bits.
	aligned        bool
	row, col, bits ptx.Operand
	m              [4]ptx.Operand
	step           int // the k step of m[1..3] when aligned
}

// swizzledAt is the base of the steps j with j%4 == m for k step k, emitted at
// its first use (in that k step, when aligned).
func (e *emitter) swizzledAt(b *swizzledBase, m, k int) ptx.Operand {
	if b.aligned && m > 0 && b.step != k {
		b.m[1], b.m[2], b.m[3], b.step = nil, nil, nil, k
	}
	if b.m[m] != nil {
		return b.m[m]
	}
	x := e.reg(ir.I32)
	switch {
	case b.aligned && b.swizzled:
		e.add(ptx.XorB32(x, b.m[0], ptx.Imm(32*m)))
	case b.aligned:
		e.add(ptx.AddS32(x, b.m[0], ptx.Imm(32*m)))
	default:
		c := e.reg(ir.I32)
		e.add(ptx.AddS32(c, b.col, ptx.Imm(32*m)))
		e.add(ptx.XorB32(x, c, b.bits))
		e.add(ptx.AddS32(x, x, b.row))
	}
	b.m[m] = x
	return x
}

// swizzledOperand sets up the bases of an operand of a dot that reads a swizzled
// tile: the lane's row is rowBase + its row in the block (rowBase a multiple of
// 8, so the row's low bits are the lane's), at byte column colBase + its column,
// with colBase a multiple of colAlign bytes (a power of two; 0: no colBase) and
// steps 0..maxStep along the row.
func (e *emitter) swizzledOperand(kind string, base ptx.Operand, pitch int, swizzled bool, rowBase, colBase ptx.Operand, colAlign, maxStep int) *swizzledBase {
	// The steps are an XOR of base 0 when colBase's bits inside a group are
	// above the lane's column and the steps' bits (or zero).
	aligned := colBase == nil || colAlign >= 128 || 16+32*maxStep < colAlign
	b := &swizzledBase{swizzled: swizzled, aligned: aligned || !swizzled, step: -1}
	if b.aligned {
		// The lane's offset, swizzled, is one register per kind and pitch, as
		// for padded tiles: base 0 is base + rowBase*pitch + colBase's groups +
		// (lane offset XOR colBase inside its group).
		b0 := e.reg(ir.I32)
		lane := e.ldmatrixLaneOffset(pitch, kind, swizzled)
		if colBase != nil && swizzled && colAlign < 128 {
			in := e.reg(ir.I32)
			e.add(ptx.AndB32(in, e.inReg(colBase, ir.I32), ptx.Imm(127)))
			e.add(ptx.XorB32(in, in, lane))
			groups := e.reg(ir.I32)
			e.add(ptx.AndB32(groups, e.inReg(colBase, ir.I32), ptx.Imm(-128)))
			lane, colBase = in, groups
		}
		if rowBase != nil {
			e.add(ptx.MadLoS32(b0, e.inReg(rowBase, ir.I32), ptx.Imm(pitch), lane))
			e.add(ptx.AddS32(b0, b0, base))
		} else {
			e.add(ptx.AddS32(b0, lane, base))
		}
		if colBase != nil {
			e.add(ptx.AddS32(b0, b0, e.inReg(colBase, ir.I32)))
		}
		b.m[0] = b0
		return b
	}
	lane := e.ldmatrixSwizzledLane(kind)
	b.row, b.bits = e.reg(ir.I32), lane.bits
	if rowBase != nil {
		e.add(ptx.AddS32(b.row, e.inReg(rowBase, ir.I32), lane.row))
		e.add(ptx.MadLoS32(b.row, b.row, ptx.Imm(pitch), base))
	} else {
		e.add(ptx.MadLoS32(b.row, lane.row, ptx.Imm(pitch), base))
	}
	b.col = lane.col
	if colBase != nil {
		b.col = e.reg(ir.I32)
		e.add(ptx.AddS32(b.col, e.inReg(colBase, ir.I32), lane.col))
	}
	return b
}

// planDot sets a dot up: operand readiness, accumulators (taken from chain when
// the dot accumulates onto a dot of the same fused group) and operand bases.
func (e *emitter) planDot(o *ir.Op, chain *dotPlan) (*dotPlan, error) {
	a, b, c := o.Args[0], o.Args[1], o.Args[2]
	r := o.Result()
	l := e.layout(r)
	p := &dotPlan{a: a, b: b, r: r, al: e.layout(a)}
	if h, ok := e.d.SharedHome(a); ok && !e.d.AInRegisters(o) {
		p.al = h
	}
	p.bl, _ = e.d.SharedHome(b)
	p.bRegs = e.d.BInRegisters(o)
	p.computed, p.kParts, p.BComputed = e.d.AComputed(o), e.d.SplitK[o], e.d.BComputed(o)
	p.kperm = o.Dot != nil && o.Dot.KPerm
	p.permA = p.kperm && decision.TransposedB(o)
	rows, cols := e.rowsOf(r.Type.Shape[0], l), e.colsOf(r.Type.Shape[1], l)
	p.aRows = rows
	p.mt, p.nt = rows.n, cols.n
	p.in = a.Type.Elem.String()
	p.held = e.held[o]
	kStart := e.kSteps(o, p)
	p.kStart = kStart
	if p.bRegs && (kStart != nil || l.WN != 1) {
		return nil, fmt.Errorf("%s: B from registers needs the whole reduction and every column in each warp", o)
	}
	if !p.bRegs && !p.BComputed {
		e.ready(b)
		e.noteRead(b)
	}
	if p.al.Kind == decision.Shared && p.held == nil {
		e.ready(a)
		e.noteRead(a)
	}
	e.comment("%s = dot: %d k16 steps x %dx%d m16n8 tiles per warp", r, p.ks, p.mt, p.nt)

	if chain != nil {
		p.acc = chain.acc
	} else {
		p.acc = make([][][4]ptx.Operand, p.mt)
		for mi := range p.acc {
			p.acc[mi] = make([][4]ptx.Operand, p.nt)
			for ni := range p.acc[mi] {
				for q := 0; q < 4; q++ {
					x, err := e.accElem(c, l, mi, ni, q)
					if err != nil {
						return nil, err
					}
					p.acc[mi][ni][q] = e.inReg(x, ir.F32)
				}
			}
		}
	}

	if p.al.Trans && p.al.Swizzle {
		return nil, fmt.Errorf("%s: A is a transposed view of a swizzled tile (smem swizzles no such tile)", o)
	}
	if p.al.Swizzle || p.bl.Swizzle {
		e.swizzledBases(p, rows, cols, kStart)
		return p, nil
	}
	// Per-warp base addresses of the operand tiles.
	if p.al.Kind == decision.Shared && p.held == nil {
		e.aBase(p, rows.base, kStart)
	}
	if p.bRegs || p.BComputed {
		return p, nil
	}
	bKind := "bt"
	if p.bl.Trans {
		bKind = "bn"
	}
	bOff4 := e.ldmatrixLaneOffset(p.bl.Pitch, bKind+"4", false)
	bOff2 := e.ldmatrixLaneOffset(p.bl.Pitch, bKind+"2", false)
	colBase := e.reg(ir.I32)
	if p.bl.Trans {
		e.add(ptx.MulLoS32(colBase, e.inReg(cols.base, ir.I32), ptx.Imm(p.bl.Pitch)))
	} else {
		e.add(ptx.ShlB32(colBase, e.inReg(cols.base, ir.I32), ptx.Imm(1)))
	}
	e.add(ptx.AddS32(colBase, colBase, e.smemOf(b)))
	if kStart != nil {
		kStride := 2 // B stored [n][k]: k runs along the row
		if !p.bl.Trans {
			kStride = p.bl.Pitch
		}
		e.add(ptx.MadLoS32(colBase, kStart, ptx.Imm(kStride), colBase))
	}
	b4, b2 := e.reg(ir.I32), e.reg(ir.I32)
	e.add(ptx.AddS32(b4, colBase, bOff4))
	e.add(ptx.AddS32(b2, colBase, bOff2))
	p.b4, p.b2 = b4, b2
	return p, nil
}

// swizzledBases sets up the operand bases of a dot with a swizzled operand, in
// storage coordinates: A is stored [m][k] and B [n][k] (a transposed view) or
// [k][n]; kStart, when the dot is split along its reduction, moves the warp's
// share along k. An operand that is not swizzled gets the same bases with no
// XOR (bits zero).
func (e *emitter) swizzledBases(p *dotPlan, rows, cols *coords, kStart ptx.Operand) {
	var kBytes ptx.Operand // kStart along a row, in bytes
	if kStart != nil {
		kBytes = e.reg(ir.I32)
		e.add(ptx.ShlB32(kBytes, kStart, ptx.Imm(1)))
	}
	operand := func(v *ir.Value, l decision.Layout, kind string, rowBase, colBase ptx.Operand, colAlign, maxStep int) *swizzledBase {
		return e.swizzledOperand(kind, e.smemOf(v), l.Pitch, l.Swizzle, rowBase, colBase, colAlign, maxStep)
	}
	// Along a row a warp steps through its k16 steps (A, and B stored [n][k]),
	// or its pairs of n8 tiles (B stored [k][n]); its share of a split
	// reduction starts at a multiple of its steps' bytes.
	kAlign := 0
	if kStart != nil {
		kAlign = powerOfTwoFactor(p.ks * decision.GranuleK * 2)
	}
	switch {
	case p.al.Kind == decision.Shared && p.held == nil && p.al.Trans:
		e.aBase(p, rows.base, kStart) // never swizzled itself (smem)
	case p.al.Kind == decision.Shared && p.held == nil:
		p.aSw = operand(p.a, p.al, "a", rows.base, kBytes, kAlign, p.ks-1)
	}
	if p.bl.Trans { // [n][k]: rows are n, k runs along them
		p.b4Sw = operand(p.b, p.bl, "bn4", cols.base, kBytes, kAlign, p.ks-1)
		p.b2Sw = operand(p.b, p.bl, "bn2", cols.base, kBytes, kAlign, p.ks-1)
		return
	}
	// [k][n]: rows are k, n runs along them
	colBytes := e.reg(ir.I32)
	e.add(ptx.ShlB32(colBytes, e.inReg(cols.base, ir.I32), ptx.Imm(1)))
	nAlign := powerOfTwoFactor(p.nt * decision.GranuleN * 2)
	p.b4Sw = operand(p.b, p.bl, "bt4", kStart, colBytes, nAlign, (p.nt-1)/2)
	p.b2Sw = operand(p.b, p.bl, "bt2", kStart, colBytes, nAlign, (p.nt-1)/2)
}

// powerOfTwoFactor is the largest power of two dividing n > 0.
func powerOfTwoFactor(n int) int { return n & -n }

// kSteps sets p.ks, the k16 steps this warp computes of dot o, and returns where
// they start (nil: at 0): a dot split along its reduction takes its share.
func (e *emitter) kSteps(o *ir.Op, p *dotPlan) (kStart ptx.Operand) {
	p.ks = o.Args[0].Type.Shape[1] / decision.GranuleK
	if parts := e.d.SplitK[o]; parts > 1 {
		p.ks /= parts
		slice := e.reg(ir.I32)
		e.divRemU32(ir.OpRem, slice, e.warp, parts)
		k := e.reg(ir.I32)
		e.add(ptx.MulLoS32(k, slice, ptx.Imm(p.ks*decision.GranuleK)))
		kStart = k
	}
	return kStart
}

// aBase sets up p.aBase, the ldmatrix address of this warp's A rows (rowBase,
// from kStart along k) in A's shared home.
func (e *emitter) aBase(p *dotPlan, rowBase, kStart ptx.Operand) {
	// A stored [m][k], or a transposed view stored [k][m]: m runs along the rows.
	kind, mStride, kStride := "a", p.al.Pitch, 2
	if p.al.Trans {
		kind, mStride, kStride = "at", 2, p.al.Pitch
	}
	off := e.ldmatrixLaneOffset(p.al.Pitch, kind, false)
	aBase := e.reg(ir.I32)
	e.add(ptx.MadLoS32(aBase, e.inReg(rowBase, ir.I32), ptx.Imm(mStride), off))
	e.add(ptx.AddS32(aBase, aBase, e.smemOf(p.a)))
	if kStart != nil {
		e.add(ptx.MadLoS32(aBase, kStart, ptx.Imm(kStride), aBase))
	}
	p.aBase = aBase
}

// holdA loads this warp's A fragments of dot o, every k16 step of its share,
// from A's shared home into registers that the dot then reads in every iteration
// of the loop being entered (the layout pass's HeldA: `a regs` on a
// loop-invariant A).
func (e *emitter) holdA(o *ir.Op) error {
	a, r := o.Args[0], o.Result()
	home, ok := e.d.SharedHome(a)
	if !ok {
		return fmt.Errorf("%s: a %s: %s has no shared home to load the held fragments from", o, ir.HomeRegs, a)
	}
	p := &dotPlan{a: a, r: r, al: home}
	rows := e.rowsOf(r.Type.Shape[0], e.layout(r))
	p.mt = rows.n
	kStart := e.kSteps(o, p)
	e.ready(a)
	e.noteRead(a)
	e.comment("%s = dot: %d k16 steps x %d m16 tiles of %s held in registers across the loop", r, p.ks, p.mt, a)
	p.permA, p.aRows, p.kStart = o.Dot != nil && o.Dot.KPerm && decision.TransposedB(o), rows, kStart
	switch {
	case p.permA: // pair by pair, no ldmatrix base
	case home.Swizzle:
		var kBytes ptx.Operand
		kAlign := 0
		if kStart != nil {
			kBytes = e.reg(ir.I32)
			e.add(ptx.ShlB32(kBytes, kStart, ptx.Imm(1)))
			kAlign = powerOfTwoFactor(p.ks * decision.GranuleK * 2)
		}
		p.aSw = e.swizzledOperand("a", e.smemOf(a), home.Pitch, home.Swizzle, rows.base, kBytes, kAlign, p.ks-1)
	default:
		e.aBase(p, rows.base, kStart)
	}
	held := make([][][4]ptx.Operand, p.ks)
	for k := range held {
		afr, err := e.aFrags(p, k)
		if err != nil {
			return err
		}
		held[k] = afr
	}
	e.held[o] = held
	return nil
}

// permutedAFrags loads the A fragments of k16 step k of a kperm dot whose B is a
// transpose, in the order B's pairs are read: register q of m16 tile mi holds A's
// elements (row 16mi + 8(q&1) + g, columns 16k + 4t + 2(q>>1) and the next), one
// 4-byte shared load each (ldmatrix reads 8 contiguous columns per row, which kperm
// order is not).
func (e *emitter) permutedAFrags(p *dotPlan, k int) ([][4]ptx.Operand, error) {
	home, ok := e.d.SharedHome(p.a)
	if !ok || home.Trans || p.a.Type.Elem.Size() != 2 {
		return nil, fmt.Errorf("kperm: A (%s, %v) must be a row-major 16-bit tile in shared memory to be read in kperm order", p.a, e.layout(p.a))
	}
	afr := make([][4]ptx.Operand, p.mt)
	for q := 0; q < 4; q++ {
		col := e.reg(ir.I32)
		e.add(ptx.AddS32(col, e.fourT(), ptx.Imm(int64(k*decision.GranuleK+2*(q>>1)))))
		if p.kStart != nil {
			e.add(ptx.AddS32(col, col, p.kStart))
		}
		for mi := range afr {
			x := e.reg(ir.I32)
			e.add(ptx.LdSharedB32(x, e.sharedAddr(e.smemOf(p.a), home, p.aRows.idx[mi][q&1], col, 2)))
			afr[mi][q] = x
		}
	}
	return afr, nil
}

// aFrags loads (or packs from registers) the A fragments of k16 step k.
func (e *emitter) aFrags(p *dotPlan, k int) ([][4]ptx.Operand, error) {
	if p.held != nil {
		return p.held[k], nil
	}
	if p.permA {
		return e.permutedAFrags(p, k)
	}
	if p.computed {
		return e.computedAFrags(p, k)
	}
	afr := make([][4]ptx.Operand, p.mt)
	for mi := 0; mi < p.mt; mi++ {
		if p.al.Kind == decision.Shared {
			for q := range afr[mi] {
				afr[mi][q] = e.reg(ir.I32)
			}
			regs := ptx.Vec{afr[mi][0], afr[mi][1], afr[mi][2], afr[mi][3]}
			if p.al.Trans {
				// Stored [k][m]: the four 8x8 blocks transposed by ldmatrix.
				off := p.al.Offset + k*decision.GranuleK*p.al.Pitch + mi*decision.GranuleM*2
				e.add(ptx.LdmatrixSyncAlignedM8n8X4TransSharedB16(regs, ptx.Addr{Base: p.aBase, Off: int64(off)}))
				continue
			}
			base, off := p.aBase, p.al.Offset+mi*decision.GranuleM*p.al.Pitch+k*decision.GranuleK*2
			if p.aSw != nil {
				base, off = e.swizzledAt(p.aSw, k%4, k), p.al.Offset+mi*decision.GranuleM*p.al.Pitch+k/4*128
			}
			e.add(ptx.LdmatrixSyncAlignedM8n8X4SharedB16(regs, ptx.Addr{Base: base, Off: int64(off)}))
			continue
		}
		// A from registers: the C fragments of n8 tiles 2k and 2k+1 of a form the
		// k16 A fragment (FlashAttention-2's trick).
		for q, src := range [4][2]int{{2 * k, 0}, {2 * k, 2}, {2*k + 1, 0}, {2*k + 1, 2}} {
			lo, err := e.accElem(p.a, p.al, mi, src[0], src[1])
			if err != nil {
				return nil, err
			}
			hi, err := e.accElem(p.a, p.al, mi, src[0], src[1]+1)
			if err != nil {
				return nil, err
			}
			r := e.reg(ir.I32)
			e.add(ptx.MovB32(r, ptx.Vec{e.inReg(lo, p.a.Type.Elem), e.inReg(hi, p.a.Type.Elem)}))
			afr[mi][q] = r
		}
	}
	return afr, nil
}

// computedAFrags evaluates the A fragments of k16 step k from A's definition
// (`a computed`): register q of m16 tile mi is the pair of elements (row mi*16 +
// 8(q&1) + g, columns k*16 + 8(q>>1) + 2t and the next) of the warp's share. A is
// stored [m][k], so its pairs are read directly; a transposed A = xᵀ takes each
// register by movmatrix (computedFrag).
func (e *emitter) computedAFrags(p *dotPlan, k int) ([][4]ptx.Operand, error) {
	l := e.layout(p.r)
	rows := warpSpan{div: l.RowGroupWarps(), mod: l.WM, span: p.mt * decision.GranuleM}
	red := warpSpan{div: 1, mod: p.kParts, span: p.ks * decision.GranuleK}
	afr := make([][4]ptx.Operand, p.mt)
	for mi := range afr {
		for q := range afr[mi] {
			x, err := e.computedFrag(p.a, false, rows, mi*decision.GranuleM+8*(q&1), red, k*decision.GranuleK+8*(q>>1), false)
			if err != nil {
				return nil, err
			}
			afr[mi][q] = x
		}
	}
	return afr, nil
}

// computedBFrags evaluates the B fragments of k16 step k from B's definition
// (BComputed): register q of n8 tile ni holds B's elements (k = 2t+8q, 2t+8q+1;
// n = g). B is stored [k][n], so a transposed B = xᵀ (Kᵀ of q·kᵀ) reads x's pairs
// directly and an untransposed one (V of p·v) takes them by movmatrix.
func (e *emitter) computedBFrags(p *dotPlan, k int) ([][2]ptx.Operand, error) {
	l := e.layout(p.r)
	cols := warpSpan{div: 1, mod: l.WN, span: p.nt * decision.GranuleN}
	red := warpSpan{div: 1, mod: p.kParts, span: p.ks * decision.GranuleK}
	bfr := make([][2]ptx.Operand, p.nt)
	for ni := range bfr {
		for q := range bfr[ni] {
			x, err := e.computedFrag(p.b, true, cols, ni*decision.GranuleN, red, k*decision.GranuleK+8*q, p.kperm)
			if err != nil {
				return nil, err
			}
			bfr[ni][q] = x
		}
	}
	return bfr, nil
}

// computedFrag is one fragment register of a computed operand v: the elements (g
// + outerOff, 2t + kOff and the next) of the warp's shares along the operand's
// other dimension (outer) and its reduction (red). kRows says v's rows are the
// reduction (B, [k][n]; A is [m][k]). Where v's source is stored [outer][k] (an A
// that is not a transpose, a B that is one) the register is the source's pair at
// those coordinates; otherwise it is movmatrix .trans of the source's pair at the
// swapped ones. Coordinates are built per warp
// share (fragCoord), so a dot that reads x and one that reads xᵀ in the same scope
// (K·Qᵀ and Vᵀ·Pᵀ, Q·Kᵀ and P·V) find the same pairs (computedPair's cache).
// With kperm the source's column 2t+8q of each 16 is its stored column 4t+2q: both
// pairs of a thread's k16 step (or of a group of two n8 tiles) come from one 4-byte
// run (permPair), which the dots over x and xᵀ share.
func (e *emitter) computedFrag(v *ir.Value, kRows bool, outer warpSpan, outerOff int, red warpSpan, kOff int, kperm bool) (ptx.Operand, error) {
	src, trans := v, false
	if d := v.Def; d != nil && d.Kind == ir.OpTrans {
		src, trans = d.Args[0], true
	}
	if trans == kRows {
		if kperm {
			return e.permPair(src, e.fragCoord(e.g, outer, outerOff), e.fragCoord(e.fourT(), red, kOff&^15), kOff&15/8)
		}
		return e.computedPair(src, e.fragCoord(e.g, outer, outerOff), e.fragCoord(e.twoT(), red, kOff))
	}
	if kperm {
		row, base, i := e.fragCoord(e.g, red, kOff), e.fragCoord(e.fourT(), outer, outerOff&^15), outerOff&15/8
		key := fmt.Sprintf("movmatrix kperm:%s@%s/%d", src.Name, operandKey([]ptx.Operand{row, base}), i)
		if r, ok := e.cached(key); ok {
			return r, nil
		}
		pair, err := e.permPair(src, row, base, i)
		if err != nil {
			return nil, err
		}
		r := e.reg(ir.I32)
		e.add(ptx.MovmatrixSyncAlignedM8n8TransB16(r, pair))
		e.cache[len(e.cache)-1][key] = r
		return r, nil
	}
	return e.movmatrixPair(src, e.fragCoord(e.g, red, kOff), e.fragCoord(e.twoT(), outer, outerOff))
}

// permPair is pair i (0 or 1) of the four adjacent elements (row, base .. base+3) of a
// 16-bit recomputed tile: in kperm order a thread's two registers of a k16 step,
// evaluated together from one 4-byte raw read and cached in the open scope.
func (e *emitter) permPair(v *ir.Value, row, base ptx.Operand, i int) (ptx.Operand, error) {
	key := "kperm pairs:" + v.Name + "@" + operandKey([]ptx.Operand{row, base})
	if x, ok := e.cached(key + fmt.Sprint("/", i)); ok {
		return x, nil
	}
	if v.Type.Elem.Size() != 2 {
		return nil, fmt.Errorf("kperm: %s is %s; mma fragments hold 16-bit elements", v, v.Type.Elem)
	}
	r, err := e.atRun(v, row, base, 4)
	clear(e.runCache) // its entries hold registers of this scope only
	if err != nil {
		return nil, err
	}
	scope := e.cache[len(e.cache)-1]
	for j := 0; j < 2; j++ {
		scope[key+fmt.Sprint("/", j)] = r.pair(e, j)
	}
	x, _ := e.cached(key + fmt.Sprint("/", i))
	return x, nil
}

// movmatrixPair is movmatrix .trans of the pair of x at (row, col) and the 8x8
// block it lies in: the thread's pair of the block's transpose, cached in the
// open scope.
func (e *emitter) movmatrixPair(x *ir.Value, row, col ptx.Operand) (ptx.Operand, error) {
	key := "movmatrix:" + x.Name + "@" + operandKey([]ptx.Operand{row, col})
	if r, ok := e.cached(key); ok {
		return r, nil
	}
	pair, err := e.computedPair(x, row, col)
	if err != nil {
		return nil, err
	}
	r := e.reg(ir.I32)
	e.add(ptx.MovmatrixSyncAlignedM8n8TransB16(r, pair))
	e.cache[len(e.cache)-1][key] = r
	return r, nil
}

// computedPair evaluates elements (row, col) and (row, col+1) of a 16-bit
// recomputed tile, packed in a b32 (atRun: two raw bytes by one ld.shared.b16,
// cvt.rn.f16x2.e4m3x2, cvt.rn.bf16x2.f32), cached in the open scope.
func (e *emitter) computedPair(v *ir.Value, row, col ptx.Operand) (ptx.Operand, error) {
	key := "pair:" + v.Name + "@" + operandKey([]ptx.Operand{row, col})
	if x, ok := e.cached(key); ok {
		return x, nil
	}
	if v.Type.Elem.Size() != 2 {
		return nil, fmt.Errorf("a %s: %s is %s; mma fragments hold 16-bit elements", ir.HomeComputed, v, v.Type.Elem)
	}
	r, err := e.atRun(v, row, col, 2)
	clear(e.runCache) // its entries hold registers of this scope only
	if err != nil {
		return nil, err
	}
	x := r.pair(e, 0)
	e.cache[len(e.cache)-1][key] = x
	return x, nil
}

// warpSpan is a warp's share of one dimension: ((warp / div) % mod) * span.
type warpSpan struct{ div, mod, span int }

// warpSpanBase is the share's first coordinate, one register per distinct value
// in the open scope: a remainder that changes nothing (div*mod covers every warp)
// is dropped, so a split reduction's slice and a row group that both count warps
// one by one give the same register.
func (e *emitter) warpSpanBase(s warpSpan) ptx.Operand {
	warps := e.nthreads / 32
	if s.mod <= 1 || s.span == 0 || s.div >= warps {
		return ptx.Imm(0)
	}
	if s.div*s.mod >= warps {
		s.mod = 0
	}
	key := fmt.Sprintf("lane:warp span %d %d %d", s.div, s.mod, s.span)
	if x, ok := e.cached(key); ok {
		return x
	}
	pos := e.warp
	if s.div > 1 {
		r := e.reg(ir.I32)
		e.divRemU32(ir.OpDiv, r, pos, s.div)
		pos = r
	}
	if s.mod > 0 {
		r := e.reg(ir.I32)
		e.divRemU32(ir.OpRem, r, pos, s.mod)
		pos = r
	}
	b := e.reg(ir.I32)
	e.add(ptx.MulLoS32(b, pos, ptx.Imm(s.span)))
	e.cache[len(e.cache)-1][key] = b
	return b
}

// twoT is 2t, the first column of the thread's pair in a fragment row.
// fourT is 4t, the first of a thread's four columns in kperm order.
func (e *emitter) fourT() ptx.Operand {
	return e.laneOffset("4t", func() ptx.Operand {
		r := e.reg(ir.I32)
		e.add(ptx.ShlB32(r, e.t, ptx.Imm(2)))
		return r
	})
}

func (e *emitter) twoT() ptx.Operand {
	return e.laneOffset("2t", func() ptx.Operand {
		r := e.reg(ir.I32)
		e.add(ptx.ShlB32(r, e.t, ptx.Imm(1)))
		return r
	})
}

// fragCoord is lane + off plus the warp's share base, one register per distinct
// coordinate in the open scope.
func (e *emitter) fragCoord(lane ptx.Operand, s warpSpan, off int) ptx.Operand {
	base := e.warpSpanBase(s)
	key := "lane:frag " + operandKey([]ptx.Operand{lane, base, ptx.Imm(off)})
	if x, ok := e.cached(key); ok {
		return x
	}
	r := e.reg(ir.I32)
	e.add(ptx.AddS32(r, lane, ptx.Imm(off)))
	if b, ok := base.(ptx.Imm); !ok || b != 0 {
		e.add(ptx.AddS32(r, r, base))
	}
	e.cache[len(e.cache)-1][key] = r
	return r
}

// bFrags loads the B fragments of k16 step k (ldmatrix .x4 covers two n8 tiles).
func (e *emitter) bFrags(p *dotPlan, k int) ([][2]ptx.Operand, error) {
	if p.bRegs {
		return e.bFragsFromRegisters(p, k)
	}
	if p.BComputed {
		return e.computedBFrags(p, k)
	}
	bfr := make([][2]ptx.Operand, p.nt)
	for ni := 0; ni < p.nt; ni += 2 {
		var off int
		if p.bl.Trans {
			off = p.bl.Offset + ni*decision.GranuleN*p.bl.Pitch + k*decision.GranuleK*2
		} else {
			off = p.bl.Offset + k*decision.GranuleK*p.bl.Pitch + ni*decision.GranuleN*2
		}
		b4, b2 := p.b4, p.b2
		if p.b4Sw != nil {
			// The 32-byte step along the rows: k for [n][k], the n8 pair for [k][n].
			j, rowOff := k, ni*decision.GranuleN*p.bl.Pitch
			if !p.bl.Trans {
				j, rowOff = ni/2, k*decision.GranuleK*p.bl.Pitch
			}
			off = p.bl.Offset + rowOff + j/4*128
			if ni+1 < p.nt {
				b4 = e.swizzledAt(p.b4Sw, j%4, k)
			} else {
				b2 = e.swizzledAt(p.b2Sw, j%4, k)
			}
		}
		ld4, ld2 := ptx.LdmatrixSyncAlignedM8n8X4TransSharedB16, ptx.LdmatrixSyncAlignedM8n8X2TransSharedB16
		if p.bl.Trans {
			ld4, ld2 = ptx.LdmatrixSyncAlignedM8n8X4SharedB16, ptx.LdmatrixSyncAlignedM8n8X2SharedB16
		}
		if ni+1 < p.nt {
			regs := ptx.Vec{e.reg(ir.I32), e.reg(ir.I32), e.reg(ir.I32), e.reg(ir.I32)}
			e.add(ld4(regs, ptx.Addr{Base: b4, Off: int64(off)}))
			bfr[ni] = [2]ptx.Operand{regs[0], regs[1]}
			bfr[ni+1] = [2]ptx.Operand{regs[2], regs[3]}
		} else {
			regs := ptx.Vec{e.reg(ir.I32), e.reg(ir.I32)}
			e.add(ld2(regs, ptx.Addr{Base: b2, Off: int64(off)}))
			bfr[ni] = [2]ptx.Operand{regs[0], regs[1]}
		}
	}
	return bfr, nil
}

// bFragsFromRegisters forms the B fragments of k16 step k from the fragments that
// hold B (BInRegisters): a thread holds B's rows g and g+8 of m16 tile k, columns
// 2t and 2t+1 of each n8 tile, where the B fragment wants rows 2t, 2t+1 (and 8 more)
// of column g; movmatrix .trans of each 8x8 half is exactly that. The transposes
// are cached in the scope, so the dots that share B (P·V's slices) form them once.
func (e *emitter) bFragsFromRegisters(p *dotPlan, k int) ([][2]ptx.Operand, error) {
	bl := e.layout(p.b)
	bfr := make([][2]ptx.Operand, p.nt)
	for ni := range bfr {
		for h := 0; h < 2; h++ {
			key := fmt.Sprintf("movmatrix:%p:%d:%d:%d", p.b, k, ni, h)
			if x, ok := e.cached(key); ok {
				bfr[ni][h] = x
				continue
			}
			lo, err := e.accElem(p.b, bl, k, ni, 2*h)
			if err != nil {
				return nil, err
			}
			hi, err := e.accElem(p.b, bl, k, ni, 2*h+1)
			if err != nil {
				return nil, err
			}
			packed, x := e.reg(ir.I32), e.reg(ir.I32)
			e.add(ptx.MovB32(packed, ptx.Vec{e.inReg(lo, p.b.Type.Elem), e.inReg(hi, p.b.Type.Elem)}))
			e.add(ptx.MovmatrixSyncAlignedM8n8TransB16(x, packed))
			e.cache[len(e.cache)-1][key] = x
			bfr[ni][h] = x
		}
	}
	return bfr, nil
}

// mmaStep issues the mma.sync of one k16 step.
func (e *emitter) mmaStep(p *dotPlan, afr [][4]ptx.Operand, bfr [][2]ptx.Operand) {
	mma := ptx.MmaSyncAlignedM16n8k16RowColF32F16F16F32 // ir.Verify admits f16 and bf16 dots only
	if p.in == "bf16" {
		mma = ptx.MmaSyncAlignedM16n8k16RowColF32Bf16Bf16F32
	}
	for mi := 0; mi < p.mt; mi++ {
		for ni := 0; ni < p.nt; ni++ {
			d := [4]ptx.Operand{e.reg(ir.F32), e.reg(ir.F32), e.reg(ir.F32), e.reg(ir.F32)}
			e.add(mma(ptx.Vec{d[0], d[1], d[2], d[3]},
				ptx.Vec{afr[mi][0], afr[mi][1], afr[mi][2], afr[mi][3]},
				ptx.Vec{bfr[ni][0], bfr[ni][1]},
				ptx.Vec{p.acc[mi][ni][0], p.acc[mi][ni][1], p.acc[mi][ni][2], p.acc[mi][ni][3]}))
			p.acc[mi][ni] = d
		}
	}
}

func (e *emitter) dot(o *ir.Op) error {
	p, err := e.planDot(o, nil)
	if err != nil {
		return err
	}
	for k := 0; k < p.ks; k++ {
		afr, err := e.aFrags(p, k)
		if err != nil {
			return err
		}
		bfr, err := e.bFrags(p, k)
		if err != nil {
			return err
		}
		e.mmaStep(p, afr, bfr)
	}
	e.v[p.r] = &vals{acc: p.acc}
	return e.allReduceSplit(o)
}

// allReduceSplit finishes a dot split along its reduction (layout's splitK) whose
// result is used as a whole: each warp of a row group writes its partial sums to
// shared scratch, fragment by fragment in lane order ([row group][warp][fragment]
// [lane] x 16 bytes, so every access is one conflict-free 16-byte vector per
// lane), and after one barrier every warp adds the partials in warp order, so all
// warps of the group hold the same result.
func (e *emitter) allReduceSplit(o *ir.Op) error {
	r := o.Result()
	parts := e.d.SplitK[o]
	if parts < 2 || e.d.SplitPartial[r] {
		return nil
	}
	off, ok := e.d.Scratch[r]
	if !ok {
		return fmt.Errorf("%s: split dot has no scratch", r)
	}
	acc := e.v[r].acc
	mt, nt := len(acc), len(acc[0])
	const frag = 32 * 16
	per := mt * nt * frag
	group, slice := e.reg(ir.I32), e.reg(ir.I32)
	e.divRemU32(ir.OpDiv, group, e.warp, parts)
	e.divRemU32(ir.OpRem, slice, e.warp, parts)
	rbase := e.reg(ir.I32)
	e.add(ptx.MulLoS32(rbase, group, ptx.Imm(parts*per)))
	e.add(ptx.MadLoS32(rbase, e.lane, ptx.Imm(16), rbase))
	e.add(ptx.AddS32(rbase, rbase, e.smem))
	wbase := e.reg(ir.I32)
	e.add(ptx.MadLoS32(wbase, slice, ptx.Imm(per), rbase))
	e.comment("%s: all-reduce the partial sums of %d warps through shared[%d]", r, parts, off)
	e.beforeWrite(r)
	for mi := range acc {
		for ni := range acc[mi] {
			a := acc[mi][ni]
			e.add(ptx.StSharedV4F32(ptx.Addr{Base: wbase, Off: int64(off + (mi*nt+ni)*frag)}, ptx.Vec{a[0], a[1], a[2], a[3]}))
		}
	}
	e.sync(decision.SyncWrote, r)
	e.ready(r)
	out := make([][][4]ptx.Operand, mt)
	for mi := range acc {
		out[mi] = make([][4]ptx.Operand, nt)
		for ni := range acc[mi] {
			for s := 0; s < parts; s++ {
				x := [4]ptx.Operand{e.reg(ir.F32), e.reg(ir.F32), e.reg(ir.F32), e.reg(ir.F32)}
				e.add(ptx.LdSharedV4F32(ptx.Vec{x[0], x[1], x[2], x[3]}, ptx.Addr{Base: rbase, Off: int64(off + s*per + (mi*nt+ni)*frag)}))
				if s == 0 {
					out[mi][ni] = x
					continue
				}
				for q := range x {
					d := e.reg(ir.F32)
					e.add(ptx.AddRnF32(d, out[mi][ni][q], x[q]))
					out[mi][ni][q] = d
				}
			}
		}
	}
	e.noteRead(r)
	e.v[r] = &vals{acc: out}
	return nil
}

// dotGroup emits a group from dotGroupAt: the elementwise ops first (they use
// no dot of the group), then the dots interleaved k step by k step.
func (e *emitter) dotGroup(group []*ir.Op) error {
	var dots []*dotPlan
	plans := map[*ir.Value]*dotPlan{}
	for _, o := range group {
		if o.Kind != ir.OpDot {
			if err := e.op(o); err != nil {
				return ir.ErrorAt(o, err)
			}
		}
	}
	for _, o := range group {
		if o.Kind != ir.OpDot {
			continue
		}
		p, err := e.planDot(o, plans[o.Args[2]])
		if err != nil {
			return ir.ErrorAt(o, err)
		}
		if chain := plans[o.Args[2]]; chain != nil {
			// The predecessor's result is this dot's accumulator: one chain.
			for i, d := range dots {
				if d == chain {
					dots = append(dots[:i], dots[i+1:]...)
					break
				}
			}
			p.chain = append(append([]*dotPlan{}, chain.chain...), chain)
		}
		plans[o.Result()] = p
		dots = append(dots, p)
	}
	ks := 0
	for _, p := range dots {
		ks = max(ks, p.ks)
	}
	for k := 0; k < ks; k++ {
		aCache := map[*ir.Value][][4]ptx.Operand{}
		bCache := map[*ir.Value][][2]ptx.Operand{}
		for _, last := range dots {
			for _, p := range append(append([]*dotPlan{}, last.chain...), last) {
				if k >= p.ks {
					continue
				}
				afr, ok := aCache[p.a]
				if !ok {
					var err error
					if afr, err = e.aFrags(p, k); err != nil {
						return err
					}
					aCache[p.a] = afr
				}
				bfr, ok := bCache[p.b]
				if !ok {
					var err error
					if bfr, err = e.bFrags(p, k); err != nil {
						return err
					}
					bCache[p.b] = bfr
				}
				e.mmaStep(p, afr, bfr) // a chain's plans share one accumulator array
			}
		}
	}
	for _, p := range dots {
		e.v[p.r] = &vals{acc: p.acc}
		if err := e.allReduceSplit(p.r.Def); err != nil {
			return err
		}
	}
	return nil
}
