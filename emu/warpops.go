package emu

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"

	"github.com/ptxgen/ptxgen/dtype"
)

// ---- ldmatrix ----

// ldmatrix and stmatrix (its inverse, sm_90+): lane 8j+r supplies the address of
// row r of matrix j; register j of lane l holds halfwords 2(l&3), 2(l&3)+1 of row
// l>>2 (.trans: of column l>>2, rows 2(l&3) and 2(l&3)+1).
func (d *decoder) ldmatrix(in *instr, m *mods) (execFn, error) {
	if !m.has("sync") || !m.has("aligned") || !m.has("m8n8") {
		return nil, fmt.Errorf("%s needs .sync.aligned.m8n8", m.base)
	}
	num := map[string]int{"x1": 1, "x2": 2, "x4": 4}[m.one("x1", "x2", "x4")]
	if num == 0 {
		return nil, fmt.Errorf("ldmatrix needs .x1, .x2 or .x4")
	}
	trans := m.has("trans")
	if m.one("shared", "shared::cta") == "" || !m.has("b16") {
		return nil, fmt.Errorf("ldmatrix needs .shared.b16")
	}
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	regOp, addrOp := in.src.Args[0], in.src.Args[1]
	var dsts []int
	var err error
	store := !writes(in.src, 0)
	if store { // stmatrix [a], {r...}
		regOp, addrOp = addrOp, regOp
		dsts, err = d.vecSrc(regOp, num)
	} else {
		dsts, err = d.vecDst(regOp, num)
	}
	if err != nil {
		return nil, err
	}
	base, off, isParam, err := d.addr(addrOp)
	if err != nil {
		return nil, err
	}
	if isParam {
		return nil, fmt.Errorf("%s on a parameter", m.base)
	}
	uoff := uint64(off)
	if store {
		return func(w *warp, mask uint32) error {
			if err := w.full(in, mask); err != nil {
				return err
			}
			c := w.c
			A := w.slot(base)
			var rows [4][8][8]uint16
			for j := 0; j < num; j++ {
				S := w.slot(dsts[j])
				M := &rows[j]
				for l := range S {
					g, t := l>>2, l&3
					lo, hi := uint16(S[l]), uint16(S[l]>>16)
					if trans {
						M[2*t][g], M[2*t+1][g] = lo, hi
					} else {
						M[g][2*t], M[g][2*t+1] = lo, hi
					}
				}
			}
			for j := 0; j < num; j++ {
				for r := 0; r < 8; r++ {
					lane := 8*j + r
					p, err := c.shared(w, in, lane, A[lane]+uoff, 16, 16, true)
					if err != nil {
						return err
					}
					for h, v := range rows[j][r] {
						binary.LittleEndian.PutUint16(p[2*h:], v)
					}
				}
			}
			return nil
		}, nil
	}
	return func(w *warp, mask uint32) error {
		if err := w.full(in, mask); err != nil {
			return err
		}
		c := w.c
		A := w.slot(base)
		// rows[j][r][h]: halfword h of row r of matrix j; lane 8j+r gives the row address.
		var rows [4][8][8]uint16
		for j := 0; j < num; j++ {
			for r := 0; r < 8; r++ {
				lane := 8*j + r
				p, err := c.shared(w, in, lane, A[lane]+uoff, 16, 16, false)
				if err != nil {
					return err
				}
				row := &rows[j][r]
				for h := range row {
					row[h] = binary.LittleEndian.Uint16(p[2*h:])
				}
			}
		}
		if c.r.l.Conflicts != nil {
			for j := 0; j < num; j++ {
				c.r.wavefronts += matrixWavefronts((*[8]uint64)(A[8*j:8*j+8]), uoff)
			}
			c.r.matrices += int64(num)
		}
		for j := 0; j < num; j++ {
			D := w.slot(dsts[j])
			M := &rows[j]
			for l := range D {
				g, t := l>>2, l&3
				if trans {
					D[l] = uint64(M[2*t][g]) | uint64(M[2*t+1][g])<<16
				} else {
					D[l] = uint64(M[g][2*t]) | uint64(M[g][2*t+1])<<16
				}
			}
		}
		return nil
	}, nil
}

// matrixWavefronts is the shared-memory wavefronts one ldmatrix matrix takes, its
// 8 rows of 16 bytes at addr[r]+off: a wavefront serves one distinct address per
// 16-byte bank group ((a>>4)&7, 4 of the 32 4-byte banks) and equal addresses
// broadcast, so it is the largest number of distinct addresses in one group.
func matrixWavefronts(addr *[8]uint64, off uint64) int64 {
	var perGroup [8]int64
	most := int64(0)
	for r, a := range addr {
		if slices.Contains(addr[:r], a) {
			continue
		}
		g := ((a + off) >> 4) & 7
		perGroup[g]++
		most = max(most, perGroup[g])
	}
	return most
}

// ---- movmatrix ----

// movmatrix transposes an 8x8 matrix of b16 held in fragment layout: lane l holds
// elements 2(l&3) and 2(l&3)+1 of row l>>2 (low half first), and after the
// transpose lane l holds those of row l>>2 of the transpose, that is column l>>2
// of the source, rows 2(l&3) and 2(l&3)+1.
func (d *decoder) movmatrix(in *instr, m *mods) (execFn, error) {
	if !m.has("sync") || !m.has("aligned") || !m.has("m8n8") || !m.has("trans") || !m.has("b16") {
		return nil, fmt.Errorf("movmatrix needs .sync.aligned.m8n8.trans.b16")
	}
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	dd, err := d.dst(in.src.Args[0])
	if err != nil {
		return nil, err
	}
	sa, err := d.src(in.src.Args[1])
	if err != nil {
		return nil, err
	}
	if d.width[dd] < 32 {
		return nil, fmt.Errorf("movmatrix needs 32-bit registers")
	}
	return func(w *warp, mask uint32) error {
		if err := w.full(in, mask); err != nil {
			return err
		}
		var M [8][8]uint16
		A := w.slot(sa)
		for l := range A {
			M[l>>2][2*(l&3)], M[l>>2][2*(l&3)+1] = uint16(A[l]), uint16(A[l]>>16)
		}
		D := w.slot(dd)
		for l := range D {
			g, t := l>>2, l&3
			D[l] = uint64(M[2*t][g]) | uint64(M[2*t+1][g])<<16
		}
		return nil
	}, nil
}

// ---- mma ----

var (
	e4m3Table = func() (t [256]float64) {
		for i := range t {
			t[i] = dtype.E4M3(i).F64()
		}
		return
	}()
	// e5m2 is the upper byte of a binary16.
	e5m2Table = sync256(func(i int) float64 { return float64(dtype.F16(i << 8).F32()) })
)

func sync256(f func(int) float64) (t [256]float64) {
	for i := range t {
		t[i] = f(i)
	}
	return
}

func (d *decoder) mma(in *instr, m *mods) (execFn, error) {
	if !m.has("sync") || !m.has("aligned") {
		return nil, fmt.Errorf("mma needs .sync.aligned")
	}
	shape := m.one("m16n8k16", "m16n8k32")
	if shape == "" {
		return nil, fmt.Errorf("mma shape not supported (m16n8k16, m16n8k32)")
	}
	if !m.has("row") || !m.has("col") {
		return nil, fmt.Errorf("mma needs .row.col")
	}
	kind := m.has("kind::f8f6f4")
	ts := m.types()
	if len(ts) != 4 || ts[0] != "f32" || ts[3] != "f32" {
		return nil, fmt.Errorf("mma types %v not supported (f32 accumulators only)", ts)
	}
	at, bt := ts[1], ts[2]
	var k int
	var conv [2]func(uint64) float64 // per operand A, B: one element from its bits
	var ew int                       // element width in bits
	switch {
	case shape == "m16n8k16" && at == bt && (at == "bf16" || at == "f16") && !kind:
		k, ew = 16, 16
		f := func(h uint64) float64 { return float64(bf16ToF32(h)) }
		if at == "f16" {
			tab := f16Table()
			f = func(h uint64) float64 { return float64(tab[h&0xFFFF]) }
		}
		conv = [2]func(uint64) float64{f, f}
	case shape == "m16n8k32" && (at == "e4m3" || at == "e5m2") && (bt == "e4m3" || bt == "e5m2"):
		k, ew = 32, 8
		pick := func(t string) func(uint64) float64 {
			if t == "e4m3" {
				return func(b uint64) float64 { return e4m3Table[b&0xFF] }
			}
			return func(b uint64) float64 { return e5m2Table[b&0xFF] }
		}
		conv = [2]func(uint64) float64{pick(at), pick(bt)}
	default:
		return nil, fmt.Errorf("mma %s with .%s.%s inputs is not supported", shape, at, bt)
	}
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	args := in.src.Args
	D, err := d.vecDst(args[0], 4)
	if err != nil {
		return nil, err
	}
	A, err := d.vecSrc(args[1], 4)
	if err != nil {
		return nil, err
	}
	B, err := d.vecSrc(args[2], 2)
	if err != nil {
		return nil, err
	}
	C, err := d.vecSrc(args[3], 4)
	if err != nil {
		return nil, err
	}
	// Element decoders without indirect calls: bf16 is a shift, f16 and the 8-bit
	// formats are table lookups.
	var tab16 *[65536]float32
	if ew == 16 && at == "f16" {
		tab16 = f16Table()
	}
	tab8 := func(t string) *[256]float64 {
		if t == "e5m2" {
			return &e5m2Table
		}
		return &e4m3Table
	}
	ta, tb := tab8(at), tab8(bt)
	_ = conv
	return func(w *warp, mask uint32) error {
		if err := w.full(in, mask); err != nil {
			return err
		}
		var am [16][32]float64 // A[m][k]
		var bk [32][8]float64  // B[k][n]
		var cm [16][8]float64
		a0, a1, a2, a3 := w.slot(A[0]), w.slot(A[1]), w.slot(A[2]), w.slot(A[3])
		b0, b1 := w.slot(B[0]), w.slot(B[1])
		c0, c1, c2, c3 := w.slot(C[0]), w.slot(C[1]), w.slot(C[2]), w.slot(C[3])
		half := k / 2 // k offset of registers 2/3 of A and register 1 of B
		for l := 0; l < 32; l++ {
			g, t := l>>2, l&3
			if ew == 16 {
				col := 2 * t
				cv := func(h uint64) float64 {
					if tab16 != nil {
						return float64(tab16[h&0xFFFF])
					}
					return float64(math.Float32frombits(uint32(h&0xFFFF) << 16))
				}
				am[g][col], am[g][col+1] = cv(a0[l]), cv(a0[l]>>16)
				am[g+8][col], am[g+8][col+1] = cv(a1[l]), cv(a1[l]>>16)
				am[g][col+half], am[g][col+half+1] = cv(a2[l]), cv(a2[l]>>16)
				am[g+8][col+half], am[g+8][col+half+1] = cv(a3[l]), cv(a3[l]>>16)
				bk[col][g], bk[col+1][g] = cv(b0[l]), cv(b0[l]>>16)
				bk[col+half][g], bk[col+half+1][g] = cv(b1[l]), cv(b1[l]>>16)
			} else {
				col := 4 * t
				for i := 0; i < 4; i++ {
					sh := 8 * i
					am[g][col+i] = ta[a0[l]>>sh&0xFF]
					am[g+8][col+i] = ta[a1[l]>>sh&0xFF]
					am[g][col+half+i] = ta[a2[l]>>sh&0xFF]
					am[g+8][col+half+i] = ta[a3[l]>>sh&0xFF]
					bk[col+i][g] = tb[b0[l]>>sh&0xFF]
					bk[col+half+i][g] = tb[b1[l]>>sh&0xFF]
				}
			}
			cm[g][2*t] = float64(f32(c0[l]))
			cm[g][2*t+1] = float64(f32(c1[l]))
			cm[g+8][2*t] = float64(f32(c2[l]))
			cm[g+8][2*t+1] = float64(f32(c3[l]))
		}
		// Each output sums its products in k order; the 8 outputs of a row are
		// independent chains, which keeps the FPU busy. The explicit float64()
		// conversions forbid fusing a product into the sum.
		var dm [16][8]float32
		for i := range dm {
			var s0, s1, s2, s3, s4, s5, s6, s7 float64
			for kk, a := range am[i][:k] {
				b := &bk[kk]
				s0 += float64(a * b[0])
				s1 += float64(a * b[1])
				s2 += float64(a * b[2])
				s3 += float64(a * b[3])
				s4 += float64(a * b[4])
				s5 += float64(a * b[5])
				s6 += float64(a * b[6])
				s7 += float64(a * b[7])
			}
			c := &cm[i]
			dm[i] = [8]float32{float32(s0 + c[0]), float32(s1 + c[1]), float32(s2 + c[2]), float32(s3 + c[3]),
				float32(s4 + c[4]), float32(s5 + c[5]), float32(s6 + c[6]), float32(s7 + c[7])}
		}
		d0, d1, d2, d3 := w.slot(D[0]), w.slot(D[1]), w.slot(D[2]), w.slot(D[3])
		for l := 0; l < 32; l++ {
			g, t := l>>2, l&3
			d0[l] = uint64(math.Float32bits(dm[g][2*t]))
			d1[l] = uint64(math.Float32bits(dm[g][2*t+1]))
			d2[l] = uint64(math.Float32bits(dm[g+8][2*t]))
			d3[l] = uint64(math.Float32bits(dm[g+8][2*t+1]))
		}
		return nil
	}, nil
}

// ---- shfl ----

func (d *decoder) shfl(in *instr, m *mods) (execFn, error) {
	if !m.has("sync") {
		return nil, fmt.Errorf("only shfl.sync is supported")
	}
	mode := m.one("up", "down", "bfly", "idx")
	if mode == "" || !m.has("b32") {
		return nil, fmt.Errorf("shfl.sync needs a mode and .b32")
	}
	if err := nargs(in.src); err != nil {
		return nil, err
	}
	args := in.src.Args
	dOp, pOp := splitPair(args[0])
	dd, err := d.dst(dOp)
	if err != nil {
		return nil, err
	}
	pd := -1
	if pOp != nil {
		if pd, err = d.pred(pOp); err != nil {
			return nil, err
		}
	}
	var s [4]int
	for i := range s {
		if s[i], err = d.src(args[i+1]); err != nil {
			return nil, err
		}
	}
	return func(w *warp, mask uint32) error {
		if err := w.full(in, mask); err != nil {
			return err
		}
		A := *w.slot(s[0]) // snapshot: d may alias a
		B, C, M := w.slot(s[1]), w.slot(s[2]), w.slot(s[3])
		D := w.slot(dd)
		var valid uint32
		for l := 0; l < 32; l++ {
			mm := uint32(M[l])
			if mm>>l&1 == 0 {
				return w.fault(in, l, "shfl.sync: lane not in its own membermask %#x", mm)
			}
			bval := int(B[l] & 31)
			cv := uint32(C[l])
			cval := int(cv & 31)
			seg := int(cv >> 8 & 31)
			maxL := l&seg | cval&^seg
			minL := l & seg
			var j int
			var ok bool
			switch mode {
			case "up":
				j = l - bval
				ok = j >= maxL
			case "down":
				j = l + bval
				ok = j <= maxL
			case "bfly":
				j = l ^ bval
				ok = j <= maxL
			default:
				j = minL | bval&^seg
				ok = j <= maxL
			}
			if !ok {
				j = l
			} else {
				valid |= 1 << l
			}
			if mm>>j&1 == 0 {
				return w.fault(in, l, "shfl.sync reads lane %d outside membermask %#x", j, mm)
			}
			D[l] = A[j] & 0xFFFFFFFF
		}
		if pd >= 0 {
			w.p[pd] = valid
		}
		return nil
	}, nil
}
