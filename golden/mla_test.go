package golden

import (
	"encoding/binary"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/mla"
)

// fp8Config is a small two-segment fp8ds shape with awkward sizes: page
// sizes 16 and 2, a page stride with padding, K not a multiple of 16.
func fp8Config() MLAConfig {
	return NewMLAConfig(mla.Shape{T: 3, H: 4, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true},
		segment(40, 16, 16*584+64, 5, 0, true),
		segment(23, 2, 2*584, 24, 25, true))
}

// segment is one segment of a call: K candidates in pages of pageSize tokens,
// pageStride bytes apart, in a pool of pages (idxStride 0: packed idx rows).
func segment(k, pageSize, pageStride, pages, idxStride int, hasLen bool) SegmentConfig {
	return SegmentConfig{mla.Segment{K: k, PageSize: pageSize, HasLen: hasLen}, SegmentLayout{PageStride: pageStride, Pages: pages, IdxStride: idxStride}}
}

func mustGen(t *testing.T, c MLAConfig, o MLAGenOptions) *MLAInputs {
	t.Helper()
	in, err := GenMLA(c, o)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func mustDecode(t *testing.T, c MLAConfig, in *MLAInputs, seed uint64) (out, lse []float64) {
	t.Helper()
	out, lse, err := MLADecode(c, in)
	if err != nil {
		t.Fatalf("seed %#x: %v", seed, err)
	}
	return out, lse
}

// TestMLAPoisonNeverRead: with every byte no valid slot uses set to 0xFF
// (NaN), the output is finite; writing one NaN into a byte a valid slot does
// use makes it NaN, which shows the first check can fail.
func TestMLAPoisonNeverRead(t *testing.T) {
	const seed = 0xa11ce
	c := fp8Config()
	in := mustGen(t, c, MLAGenOptions{Seed: seed, Poison: true, InvalidFrac: 0.2, EmptyRows: []int{1}, SinkEdges: true})
	out, lse := mustDecode(t, c, in, seed)
	for i, v := range out {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			t.Fatalf("seed %#x: out[%d] = %v: a poisoned byte was read", seed, i, v)
		}
	}
	for i, v := range lse {
		if math.IsNaN(v) {
			t.Fatalf("seed %#x: lse[%d] = NaN", seed, i)
		}
	}
	id := c.Candidates(in, 0, 0)[0]
	sc := c.Segment(0)
	in.Segments[0].Cache[int(id)/sc.PageSize*sc.PageStride+int(id)%sc.PageSize*576+5] = 0x7F
	out, _ = mustDecode(t, c, in, seed)
	if !math.IsNaN(out[(0*c.H+2)*c.D()]) {
		t.Fatalf("seed %#x: NaN in a valid record did not reach out[0,2,0] = %v", seed, out[(0*c.H+2)*c.D()])
	}
}

// TestMLAEmptyRowAndSinks checks the spec's edge values: an empty row has
// out = 0 and lse = +Inf; sink +Inf zeroes out but leaves lse; sink -Inf
// equals no sink; a finite sink scales out by 1/(1+exp(sink-lse)).
func TestMLAEmptyRowAndSinks(t *testing.T) {
	const seed = 0xed6e
	c := fp8Config()
	in := mustGen(t, c, MLAGenOptions{Seed: seed, EmptyRows: []int{1}, SinkEdges: true})
	out, lse := mustDecode(t, c, in, seed)
	noSink := c
	noSink.Sink = false
	in2 := *in
	in2.Sink = nil
	outNS, lseNS := mustDecode(t, noSink, &in2, seed)
	D := c.D()
	for h := 0; h < c.H; h++ {
		if !math.IsInf(lse[1*c.H+h], 1) {
			t.Errorf("seed %#x: empty row lse[1,%d] = %v, want +Inf", seed, h, lse[1*c.H+h])
		}
		for d := 0; d < D; d++ {
			if out[(1*c.H+h)*D+d] != 0 {
				t.Fatalf("seed %#x: empty row out[1,%d,%d] = %v, want 0", seed, h, d, out[(1*c.H+h)*D+d])
			}
		}
	}
	for _, row := range []int{0, 2} {
		for h := 0; h < c.H; h++ {
			i := row*c.H + h
			if lse[i] != lseNS[i] || math.IsInf(lse[i], 0) {
				t.Errorf("seed %#x: lse[%d,%d] = %v with sink, %v without: the sink must not enter the LSE", seed, row, h, lse[i], lseNS[i])
			}
			g := 1 / (1 + math.Exp(float64(in.Sink[h])-lse[i]))
			switch h {
			case 0:
				g = 0 // +Inf
			case 1:
				g = 1 // -Inf
			}
			nonzero := false
			for d := 0; d < D; d++ {
				w := outNS[i*D+d] * g
				if math.Abs(out[i*D+d]-w) > 1e-15*math.Abs(w) {
					t.Fatalf("seed %#x: out[%d,%d,%d] = %v, want g*out_nosink = %v (g = %v)", seed, row, h, d, out[i*D+d], w, g)
				}
				nonzero = nonzero || out[i*D+d] != 0
			}
			if nonzero != (h != 0) {
				t.Errorf("seed %#x: head %d (sink %v) nonzero output = %v", seed, h, in.Sink[h], nonzero)
			}
		}
	}
}

// TestMLASingleCandidate: with one valid candidate the softmax weight is 1,
// so out is that K/V vector exactly and lse is the scaled dot product.
func TestMLASingleCandidate(t *testing.T) {
	const seed = 0x51
	c := fp8Config()
	c.Sink = false
	c.Segments, c.Layouts = c.Segments[:1], c.Layouts[:1]
	in := mustGen(t, c, MLAGenOptions{Seed: seed})
	for t := 0; t < c.T; t++ {
		in.Segments[0].Len[t] = 1
	}
	out, lse := mustDecode(t, c, in, seed)
	D := c.D()
	for row := 0; row < c.T; row++ {
		k := c.LoadK(nil, in, 0, in.Segments[0].Idx[row*40])
		nonzero := 0
		for h := 0; h < c.H; h++ {
			var dot float64
			for d := 0; d < D; d++ {
				if out[(row*c.H+h)*D+d] != k[d] {
					t.Fatalf("seed %#x: out[%d,%d,%d] = %v, want k = %v", seed, row, h, d, out[(row*c.H+h)*D+d], k[d])
				}
				dot += in.Q[(row*c.H+h)*D+d].F64() * k[d]
			}
			if want := dot / math.Sqrt(512); math.Abs(lse[row*c.H+h]-want) > 1e-12*math.Abs(want) {
				t.Errorf("seed %#x: lse[%d,%d] = %v, want scale*q.k = %v", seed, row, h, lse[row*c.H+h], want)
			}
		}
		for _, v := range k {
			if v != 0 {
				nonzero++
			}
		}
		if nonzero < D/2 {
			t.Fatalf("seed %#x: row %d: only %d of %d K values nonzero", seed, row, nonzero, D)
		}
	}
}

// TestMLAFP8MatchesBF16Cache rewrites a generated fp8ds cache as a bf16
// cache holding the dequantized values (exact: e4m3 times a power of two
// fits bf16) and checks both decode to the same bits: the two loadK paths
// and the fp8ds scale addressing agree.
func TestMLAFP8MatchesBF16Cache(t *testing.T) {
	const seed = 0xb16
	c := fp8Config()
	in := mustGen(t, c, MLAGenOptions{Seed: seed, InvalidFrac: 0.1})
	cb := c
	cb.Cache = mla.CacheBF16
	cb.Layouts = append([]SegmentLayout(nil), c.Layouts...)
	inb := &MLAInputs{Q: in.Q, Sink: in.Sink}
	for s := range c.Segments {
		sc := c.Segment(s)
		cb.Layouts[s].PageStride = sc.PageSize * 512 * 2
		cache := make([]byte, sc.Pages*cb.Layouts[s].PageStride)
		for id := 0; id < sc.Slots(); id++ {
			k := c.LoadK(nil, in, s, int32(id))
			for d, v := range k {
				b := dtype.BF16FromF64(v)
				if b.F64() != v && !math.IsNaN(v) {
					t.Fatalf("seed %#x: dequantized value %v is not a bf16", seed, v)
				}
				binary.LittleEndian.PutUint16(cache[(id*512+d)*2:], uint16(b))
			}
		}
		inb.Segments = append(inb.Segments, SegmentInputs{Cache: cache, Idx: in.Segments[s].Idx, Len: in.Segments[s].Len})
	}
	out, lse := mustDecode(t, c, in, seed)
	outb, lseb := mustDecode(t, cb, inb, seed)
	for i := range out {
		if math.Float64bits(out[i]) != math.Float64bits(outb[i]) {
			t.Fatalf("seed %#x: out[%d] = %v (fp8ds) vs %v (bf16)", seed, i, out[i], outb[i])
		}
	}
	for i := range lse {
		if lse[i] != lseb[i] {
			t.Fatalf("seed %#x: lse[%d] = %v (fp8ds) vs %v (bf16)", seed, i, lse[i], lseb[i])
		}
	}
}

// TestMLAOrderInvariant: swapping the two segments and reversing each row
// permutes the softmax terms; the result must agree to rounding.
func TestMLAOrderInvariant(t *testing.T) {
	const seed = 0x0dd
	c := fp8Config()
	c.Layouts[1].IdxStride = 0
	in := mustGen(t, c, MLAGenOptions{Seed: seed, InvalidFrac: 0.2})
	out, lse := mustDecode(t, c, in, seed)
	c2 := c
	c2.Segments = []mla.Segment{c.Segments[1], c.Segments[0]}
	c2.Layouts = []SegmentLayout{c.Layouts[1], c.Layouts[0]}
	in2 := &MLAInputs{Q: in.Q, Sink: in.Sink}
	for _, s := range []int{1, 0} {
		sc, si := c.Segment(s), in.Segments[s]
		idx := make([]int32, len(si.Idx))
		ln := make([]int32, c.T)
		for row := 0; row < c.T; row++ {
			cand := c.Candidates(in, s, row)
			ln[row] = int32(len(cand))
			for j, id := range cand {
				idx[row*sc.K+len(cand)-1-j] = id
			}
			for j := len(cand); j < sc.K; j++ {
				idx[row*sc.K+j] = -1
			}
		}
		in2.Segments = append(in2.Segments, SegmentInputs{Cache: si.Cache, Idx: idx, Len: ln})
	}
	out2, lse2 := mustDecode(t, c2, in2, seed)
	ro := Compare("out", out2, out, []int{c.T, c.H, c.D()}, Tolerance{Abs: 1e-14, Rel: 1e-12})
	rl := Compare("lse", lse2, lse, []int{c.T, c.H}, Tolerance{Rel: 1e-14})
	if !ro.OK() || !rl.OK() {
		t.Errorf("seed %#x: permuted candidates changed the result:\n%s%s", seed, ro, rl)
	}
}

func TestMLAValidate(t *testing.T) {
	cases := []struct {
		edit func(*MLAConfig)
		want string
	}{
		{func(c *MLAConfig) { c.T = 0 }, "T = 0, want >= 1"},
		{func(c *MLAConfig) { c.H = -1 }, "H = -1"},
		{func(c *MLAConfig) { c.Nope = 512 }, "want 448 and 64"},
		{func(c *MLAConfig) { c.Scale = math.Inf(1) }, "Scale"},
		{func(c *MLAConfig) { c.QStrideH = 100 }, "QStrideH = 100, want 0 (packed) or >= D = 512"},
		{func(c *MLAConfig) { c.QStrideT = 600 }, "QStrideT = 600"},
		{func(c *MLAConfig) { c.Cache = "fp8" }, `Cache = "fp8"`},
		{func(c *MLAConfig) { c.Segments = nil }, "len(Segments) = 0, want 1 or 2"},
		{func(c *MLAConfig) { c.Segments[1].K = 0 }, "Segments[1].K = 0, want >= 1"},
		{func(c *MLAConfig) { c.Layouts[1].IdxStride = 3 }, "Layouts[1].IdxStride = 3"},
		{func(c *MLAConfig) { c.Segments[0].PageSize = 0 }, "Segments[0].PageSize = 0"},
		{func(c *MLAConfig) { c.Layouts[0].PageStride = 16 * 576 }, "Layouts[0].PageStride = 9216, want >= 9344"},
		{func(c *MLAConfig) { c.Layouts[0].Pages = 0 }, "Layouts[0].Pages = 0"},
		{func(c *MLAConfig) { c.Layouts[1].Pages = 1 << 30 }, "want <= 2^31-1"},
	}
	if err := fp8Config().Validate(); err != nil {
		t.Fatalf("valid config: %v", err)
	}
	for _, tc := range cases {
		c := fp8Config()
		tc.edit(&c)
		err := c.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate() = %v, want an error containing %q", err, tc.want)
		}
	}
	bf := NewMLAConfig(mla.Shape{T: 1, H: 1, Nope: 30, Rope: 2, Cache: mla.CacheBF16}, segment(1, 4, 255, 1, 0, false))
	if err := bf.Validate(); err == nil || !strings.Contains(err.Error(), "PageStride = 255, want >= 256") {
		t.Errorf("bf16 page stride: Validate() = %v", err)
	}
}

// TestMLAOutOfPoolIndex: an index at or past the pool (Slots, Slots+1,
// INT_MAX) inside the valid prefix is invalid like -1: the result is exactly
// the one with -1 there, and nothing panics or errors. Only a malformed input
// (a short idx) is an error.
func TestMLAOutOfPoolIndex(t *testing.T) {
	const seed = 0x00b
	c := fp8Config()
	for _, bad := range []int32{int32(c.Segment(1).Slots()), int32(c.Segment(1).Slots()) + 1, math.MaxInt32} {
		in := mustGen(t, c, MLAGenOptions{Seed: seed})
		// Row 0 has len = K, so entry 3 is inside the valid prefix.
		in.Segments[1].Idx[3] = bad
		out, lse := mustDecode(t, c, in, seed)
		in.Segments[1].Idx[3] = -1
		wantOut, wantLSE := mustDecode(t, c, in, seed)
		for i := range out {
			if out[i] != wantOut[i] {
				t.Fatalf("seed %#x: index %d: out[%d] = %v, want %v (as with -1)", seed, bad, i, out[i], wantOut[i])
			}
		}
		for i := range lse {
			if lse[i] != wantLSE[i] {
				t.Fatalf("seed %#x: index %d: lse[%d] = %v, want %v (as with -1)", seed, bad, i, lse[i], wantLSE[i])
			}
		}
		// The candidate mattered: with a valid slot there instead, row 0 changes.
		in.Segments[1].Idx[3] = int32(c.Segment(1).Slots()) - 1
		if _, lse0 := mustDecode(t, c, in, seed); lse0[0] == wantLSE[0] {
			t.Fatalf("seed %#x: lse[0] does not depend on candidate 3: the test proves nothing", seed)
		}
	}
	in := mustGen(t, c, MLAGenOptions{Seed: seed})
	in.Segments[1].Idx = in.Segments[1].Idx[:10]
	if _, _, err := MLADecode(c, in); err == nil || !strings.Contains(err.Error(), "len(Segments[1].Idx) = 10") {
		t.Errorf("short idx: err = %v", err)
	}
}

// TestMLALargePoolSlots: at the largest pool the int32 indices allow (2^31-1
// slots, about 1.2 TiB of fp8ds cache, never allocated here) the configuration
// is valid, its byte size passes 2^32 without overflow, and Candidates keeps
// exactly the indices below Slots.
func TestMLALargePoolSlots(t *testing.T) {
	c := NewMLAConfig(mla.Shape{T: 1, H: 1, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS},
		segment(6, 1, 592, math.MaxInt32, 0, false))
	if err := c.Validate(); err != nil {
		t.Fatalf("2^31-1 slots: %v", err)
	}
	sc := c.Segment(0)
	if got, want := int64(sc.Pages)*int64(sc.PageStride), int64(math.MaxInt32)*592; got != want || got <= 1<<32 {
		t.Fatalf("pool bytes = %d, want %d (> 2^32)", got, want)
	}
	in := &MLAInputs{Segments: []SegmentInputs{{Idx: []int32{math.MaxInt32 - 1, math.MaxInt32, -1, math.MinInt32, 0, 1 << 30}}}}
	got := c.Candidates(in, 0, 0)
	want := []int32{math.MaxInt32 - 1, 0, 1 << 30}
	if len(got) != len(want) {
		t.Fatalf("Candidates = %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("Candidates = %v, want %v", got, want)
		}
	}
	c.Layouts[0].Pages = 1 << 30
	c.Segments[0].PageSize = 2
	c.Layouts[0].PageStride = 2 * 584
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "want <= 2^31-1") {
		t.Errorf("2^31 slots: Validate() = %v, want the int32 limit", err)
	}
}

// TestMLADecodeHoldsOneRowOfVectors: the reference loads a row's valid K/V vectors
// once (8 bytes per element) into one buffer sized for the fullest row; growing it
// by append allocated about twice that, which the check's memory estimate (8 x K x D
// per worker) did not count.
func TestMLADecodeHoldsOneRowOfVectors(t *testing.T) {
	const k, seed = 2048, 3
	c := NewMLAConfig(mla.Shape{T: 2, H: 2, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS}, segment(k, 64, 64*584, 2*k/64+4, 0, false))
	in := mustGen(t, c, MLAGenOptions{Seed: seed})
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	mustDecode(t, c, in, seed)
	runtime.ReadMemStats(&after)
	rowVectors := uint64(8 * k * c.D())
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > rowVectors+rowVectors/4 {
		t.Errorf("MLADecode of %d candidates of %d allocated %d bytes, want at most 1.25 x the %d of one row's vectors (seed %d)", k, c.D(), alloc, rowVectors, seed)
	}
}
