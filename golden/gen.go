package golden

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/mla"
)

// newRand returns the generators' random source: PCG seeded from one
// uint64, so a seed printed in a failure reproduces the inputs exactly.
func newRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, 0x70747867656e)) // "ptxgen"
}

// bf16NaN fills padding a kernel must never read (0xFFFF is a bf16 NaN).
const bf16NaN dtype.BF16 = 0xFFFF

// GenGemm returns seeded bf16 inputs for c: A ~ N(0,1) and B ~
// N(0,1)/sqrt(K), so C is about N(0,1) at any K (GemmTolerance's scale 1).
// Padding elements (between K and LDA, between N and LDB) hold NaN so a
// test proves the kernel never uses them.
func GenGemm(c GemmConfig, seed uint64) (a, b []dtype.BF16, err error) {
	if err := c.Validate(); err != nil {
		return nil, nil, fmt.Errorf("seed %#x: %w", seed, err)
	}
	r := newRand(seed)
	lda, ldb := c.Strides()
	a = make([]dtype.BF16, c.ALen())
	b = make([]dtype.BF16, c.BLen())
	for i := range a {
		a[i] = bf16NaN
		if i%lda < c.K {
			a[i] = dtype.BF16FromF64(r.NormFloat64())
		}
	}
	sb := 1 / math.Sqrt(float64(c.K))
	for i := range b {
		b[i] = bf16NaN
		if i%ldb < c.N {
			b[i] = dtype.BF16FromF64(r.NormFloat64() * sb)
		}
	}
	return a, b, nil
}

// MLAGenOptions selects what GenMLA puts in the inputs beyond random data.
// The zero value (apart from Seed) gives all slots valid and no len beyond K.
type MLAGenOptions struct {
	Seed uint64 `json:"seed"`
	// InvalidFrac is the fraction of slots inside len set to -1 (or
	// math.MinInt32): invalid but inside the valid prefix.
	InvalidFrac float64 `json:"invalid_frac,omitempty"`
	// EmptyRows lists rows that get no valid candidate in any segment
	// (len 0 or all -1); the reference gives out = 0, lse = +Inf there.
	EmptyRows []int `json:"empty_rows,omitempty"`
	// Poison reserves some pages that no valid slot uses, fills them with
	// 0xFF bytes (NaN as e4m3 and as bf16) and points slots past len at
	// them, or at INT_MAX and beyond the pool: a kernel that reads them
	// produces NaN or faults.
	Poison bool `json:"poison,omitempty"`
	// SinkEdges gives head 0 a sink of +Inf and head 1 one of -Inf.
	SinkEdges bool `json:"sink_edges,omitempty"`
	// LenOutOfRange gives some rows a len above K or below 0, which the
	// spec clamps to [0, K].
	LenOutOfRange bool `json:"len_out_of_range,omitempty"`
	// OutOfPool puts the indices Slots, Slots+1 and INT_MAX at random
	// positions inside every row's valid prefix: invalid like -1 (spec
	// section 3), never loaded.
	OutOfPool bool `json:"out_of_pool,omitempty"`
	// TailPages, when > 0, draws every valid slot (and Poison's pages) from
	// the last TailPages pages of each pool and writes only those (and page
	// 0): the rest of the cache stays zero, so a pool of many GiB costs one
	// allocation, and every valid record lies near its end (past 2^32 bytes
	// in a pool above 4 GiB).
	TailPages int `json:"tail_pages,omitempty"`
}

// GenMLA returns seeded inputs for c with realistic value ranges: q ~
// N(0,1) as bf16; fp8ds nope values N(0,1)-sized, quantized per 64-dim
// block with UE8M0 exponents spread over [fit, 130] where fit is the
// smallest exponent that avoids saturation (about 120) so both fine and
// coarse e4m3 grids (down to subnormals) occur; rope and bf16-cache values
// ~ N(0,1); sinks uniform in [-1, 8), near typical LSEs so they matter.
// Valid slots in a row are distinct. Bytes nothing reads (page and scale
// padding, idx padding, q padding) are 0xFF/NaN/INT_MAX. Errors name the
// seed.
func GenMLA(c MLAConfig, o MLAGenOptions) (*MLAInputs, error) {
	fail := func(format string, args ...any) (*MLAInputs, error) {
		return nil, fmt.Errorf("GenMLA seed %#x: %s", o.Seed, fmt.Sprintf(format, args...))
	}
	if err := c.Validate(); err != nil {
		return fail("%v", err)
	}
	if o.InvalidFrac < 0 || o.InvalidFrac > 1 {
		return fail("InvalidFrac = %v, want in [0, 1]", o.InvalidFrac)
	}
	for _, t := range o.EmptyRows {
		if t < 0 || t >= c.T {
			return fail("EmptyRows holds %d, want rows in [0, T=%d)", t, c.T)
		}
	}
	if o.SinkEdges && (!c.Sink || c.H < 2) {
		return fail("SinkEdges needs Sink = true and H >= 2 (have Sink = %v, H = %d)", c.Sink, c.H)
	}
	r := newRand(o.Seed)
	in := &MLAInputs{Q: genQ(c, r)}
	for s := range c.Segments {
		si, err := genSegment(c, c.Segment(s), o, r)
		if err != nil {
			return fail("Segments[%d]: %v", s, err)
		}
		in.Segments = append(in.Segments, si)
	}
	if c.Sink {
		in.Sink = make([]float32, c.H)
		for h := range in.Sink {
			in.Sink[h] = float32(-1 + 9*r.Float64())
		}
		if o.SinkEdges {
			in.Sink[0] = float32(math.Inf(1))
			in.Sink[1] = float32(math.Inf(-1))
		}
	}
	return in, nil
}

func genSegment(c MLAConfig, sc SegmentConfig, o MLAGenOptions, r *rand.Rand) (SegmentInputs, error) {
	B := sc.PageSize
	if o.TailPages < 0 {
		return SegmentInputs{}, fmt.Errorf("TailPages = %d, want >= 0", o.TailPages)
	}
	// The pages GenMLA writes: all, or page 0 and the last TailPages.
	first := 0
	if o.TailPages > 0 {
		first = max(0, sc.Pages-o.TailPages)
	}
	cache := make([]byte, sc.Pages*sc.PageStride)
	fill := func(b []byte) {
		for i := range b {
			b[i] = 0xFF // padding stays 0xFF; records are overwritten below
		}
	}
	fill(cache[first*sc.PageStride:])
	fill(cache[:sc.PageStride])
	// Pages no valid slot may use (Poison): a random quarter, at least one, and
	// always page 0: kernels point the address of an empty (zero-fill) copy at
	// the cache base, so a kernel that reads through it instead sees NaN.
	n := sc.Pages - first
	poison := make([]bool, sc.Pages)
	var poisonPages, goodPages []int
	if o.Poison {
		for _, p := range r.Perm(n)[:max(1, n/4)] {
			poison[first+p] = true
		}
		poison[0] = sc.Pages > 1
	}
	if first > 0 && poison[0] {
		poisonPages = append(poisonPages, 0)
	}
	for p := first; p < sc.Pages; p++ {
		if poison[p] {
			poisonPages = append(poisonPages, p)
		} else {
			goodPages = append(goodPages, p)
		}
	}
	if len(goodPages)*B < sc.K {
		return SegmentInputs{}, fmt.Errorf("%d usable pages of %d slots hold fewer than K = %d distinct slots; raise Pages (or TailPages, %d)", len(goodPages), B, sc.K, o.TailPages)
	}
	for _, p := range goodPages {
		for off := range B {
			writeToken(c, cache[p*sc.PageStride:], B, off, r)
		}
	}
	stride := sc.idxStride()
	si := SegmentInputs{Cache: cache, Idx: make([]int32, (c.T-1)*stride+sc.K)}
	for i := range si.Idx {
		si.Idx[i] = math.MaxInt32 // padding between rows
	}
	if sc.HasLen {
		si.Len = make([]int32, c.T)
	}
	garbage := func() int32 {
		// What may sit past len: any int32. With Poison, pick the dangerous
		// ones; without, plausible slots, whose use would change the result.
		if !o.Poison {
			return int32(r.IntN(sc.Slots()))
		}
		switch r.IntN(4) {
		case 0:
			return math.MaxInt32
		case 1:
			return int32(sc.Slots() + r.IntN(1000))
		default:
			return int32(poisonPages[r.IntN(len(poisonPages))]*B + r.IntN(B))
		}
	}
	for t := 0; t < c.T; t++ {
		row := si.Idx[t*stride : t*stride+sc.K]
		n := sc.K
		if sc.HasLen {
			n = 1 + r.IntN(sc.K)
			if t == 0 {
				n = sc.K
			}
		}
		// Distinct valid slots drawn from the usable pages.
		picked := make(map[int32]bool, n)
		for j := 0; j < n; j++ {
			for {
				p := goodPages[r.IntN(len(goodPages))]
				id := int32(p*B + r.IntN(B))
				if !picked[id] {
					picked[id] = true
					row[j] = id
					break
				}
			}
			if r.Float64() < o.InvalidFrac {
				row[j] = -1
				if r.IntN(8) == 0 {
					row[j] = math.MinInt32
				}
			}
		}
		if o.OutOfPool {
			for i, j := range r.Perm(n)[:min(n, 3)] {
				row[j] = [3]int32{int32(min(sc.Slots(), math.MaxInt32)), int32(min(sc.Slots()+1, math.MaxInt32)), math.MaxInt32}[i]
			}
		}
		for j := n; j < sc.K; j++ {
			row[j] = garbage()
		}
		lenv := int32(n)
		if sc.HasLen && o.LenOutOfRange {
			// Row 0 is full: len above K clamps to K. A middle row gets a
			// negative len, which clamps to 0.
			if t == 0 {
				lenv = int32(sc.K + 1 + r.IntN(100))
			} else if t == c.T/2 && c.T > 2 {
				lenv = -int32(1 + r.IntN(5))
				for j := range row {
					row[j] = garbage()
				}
			}
		}
		if slices.Contains(o.EmptyRows, t) {
			if sc.HasLen && r.IntN(2) == 0 {
				lenv = 0
				for j := range row {
					row[j] = garbage()
				}
			} else {
				for j := range row {
					row[j] = -1
				}
			}
		}
		if sc.HasLen {
			si.Len[t] = lenv
		}
	}
	return si, nil
}

// writeToken fills token off of the page starting at pg with random data.
func writeToken(c MLAConfig, pg []byte, B, off int, r *rand.Rand) {
	if c.Cache == mla.CacheBF16 {
		rec := pg[off*c.D()*2:]
		for d := 0; d < c.D(); d++ {
			binary.LittleEndian.PutUint16(rec[2*d:], uint16(dtype.BF16FromF64(r.NormFloat64())))
		}
		return
	}
	rec := pg[off*mla.FP8DSRecordBytes:]
	sc := pg[B*mla.FP8DSRecordBytes+off*mla.FP8DSScaleBytes:]
	var x [mla.FP8DSScaleBlock]float64
	for blk := 0; blk < mla.FP8DSNope/mla.FP8DSScaleBlock; blk++ {
		amax := 0.0
		for i := range x {
			x[i] = r.NormFloat64()
			amax = max(amax, math.Abs(x[i]))
		}
		// Smallest exponent e with amax / 2^(e-127) <= 448: no saturation.
		_, fe := math.Frexp(amax / dtype.E4M3Max)
		fit := 127 + fe
		e := fit + r.IntN(max(1, 131-fit))
		sc[blk] = byte(e)
		for i, v := range x {
			rec[blk*mla.FP8DSScaleBlock+i] = byte(dtype.E4M3FromF64(math.Ldexp(v, 127-e)))
		}
	}
	for i := 0; i < mla.FP8DSRope; i++ {
		binary.LittleEndian.PutUint16(rec[mla.FP8DSNope+2*i:], uint16(dtype.BF16FromF64(r.NormFloat64())))
	}
}

// genQ draws q from r, standard normal in bf16, with NaN in the gaps of its row strides
// (a kernel that reads them poisons its output).
func genQ(c MLAConfig, r *rand.Rand) []dtype.BF16 {
	q := make([]dtype.BF16, c.QLen())
	for i := range q {
		q[i] = bf16NaN
	}
	qst, qsh := c.QStrides()
	for t := 0; t < c.T; t++ {
		for h := 0; h < c.H; h++ {
			for d := 0; d < c.D(); d++ {
				q[t*qst+h*qsh+d] = dtype.BF16FromF64(r.NormFloat64())
			}
		}
	}
	return q
}
