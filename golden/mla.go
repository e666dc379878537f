package golden

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/mla"
)

// MLAConfig is one sparse MLA decode call as the reference reads it: its shape
// (mla.Shape, the one the kernel generator reads too; MaxT is not read) and the
// layout of its buffers, which the kernels take as run-time arguments. The zero
// values of Scale, QStrideT, QStrideH and IdxStride mean the defaults named on
// each field.
type MLAConfig struct {
	mla.Shape
	// QStrideT and QStrideH are q's strides in elements between rows and
	// between heads; 0 means packed (H*D and D).
	QStrideT, QStrideH int
	// Layouts lay out each segment's cache and idx buffers, one per
	// Shape.Segments entry.
	Layouts []SegmentLayout
}

// SegmentLayout is the layout of one segment's buffers: its paged cache and
// its idx rows.
type SegmentLayout struct {
	PageStride int // bytes from one page to the next
	Pages      int // pages in the cache buffer
	// IdxStride is the idx row stride in elements; 0 means K.
	IdxStride int
}

// SegmentConfig is one segment of a call with its layout: the candidate list
// and the paged cache it indexes.
type SegmentConfig struct {
	mla.Segment
	SegmentLayout
}

// Segment returns segment s with its layout.
func (c MLAConfig) Segment(s int) SegmentConfig {
	return SegmentConfig{c.Segments[s], c.Layouts[s]}
}

// PackedMLAConfig is the call of shape s with dense q and idx, the smallest page
// strides its cache format allows rounded up to 16 bytes (the kernels' alignment),
// and pools of the given number of pages per segment.
func PackedMLAConfig(s mla.Shape, pages []int) MLAConfig {
	c := MLAConfig{Shape: s}
	for i, seg := range s.Segments {
		stride := (s.PageBytes(seg.PageSize) + 15) / 16 * 16
		c.Layouts = append(c.Layouts, SegmentLayout{PageStride: int(stride), Pages: pages[i]})
	}
	return c
}

// MLAPoolPages is the pages per segment that PackedMLAConfig's pools need for
// GenMLA: enough slots for every candidate of a row to be distinct, plus the
// pages the generator reserves for poison.
func MLAPoolPages(s mla.Shape) []int {
	pages := make([]int, len(s.Segments))
	for i, seg := range s.Segments {
		pages[i] = 2*((seg.K+seg.PageSize-1)/seg.PageSize) + 4
	}
	return pages
}

// QStrides returns the effective q strides (row, head) in elements.
func (c MLAConfig) QStrides() (t, h int) {
	t, h = c.QStrideT, c.QStrideH
	if h == 0 {
		h = c.D()
	}
	if t == 0 {
		t = c.H * h
	}
	return t, h
}

// QLen is the element count the q buffer must hold.
func (c MLAConfig) QLen() int {
	st, sh := c.QStrides()
	return (c.T-1)*st + (c.H-1)*sh + c.D()
}

// idxStride returns the effective idx row stride in elements.
func (s SegmentConfig) idxStride() int {
	if s.IdxStride == 0 {
		return s.K
	}
	return s.IdxStride
}

// Slots is the number of cache slots (token positions) the segment's pages
// hold; valid indices lie in [0, Slots).
func (s SegmentConfig) Slots() int { return s.Pages * s.PageSize }

// Validate reports the first field outside its accepted range, by name.
func (c MLAConfig) Validate() error {
	switch {
	case c.T < 1:
		return fmt.Errorf("mla: T = %d, want >= 1", c.T)
	case c.H < 1:
		return fmt.Errorf("mla: H = %d, want >= 1", c.H)
	case c.Nope < 0 || c.Rope < 0 || c.D() < 1:
		return fmt.Errorf("mla: Nope = %d, Rope = %d, want both >= 0 and Nope+Rope >= 1", c.Nope, c.Rope)
	case math.IsNaN(c.Scale) || math.IsInf(c.Scale, 0) || c.Scale < 0:
		return fmt.Errorf("mla: Scale = %v, want 0 (1/sqrt(D)) or finite > 0", c.Scale)
	case c.QStrideH != 0 && c.QStrideH < c.D():
		return fmt.Errorf("mla: QStrideH = %d, want 0 (packed) or >= D = %d", c.QStrideH, c.D())
	}
	_, sh := c.QStrides()
	if c.QStrideT != 0 && c.QStrideT < (c.H-1)*sh+c.D() {
		return fmt.Errorf("mla: QStrideT = %d, want 0 (packed) or >= (H-1)*QStrideH+D = %d", c.QStrideT, (c.H-1)*sh+c.D())
	}
	switch c.Cache {
	case mla.CacheFP8DS:
		if c.Nope != mla.FP8DSNope || c.Rope != mla.FP8DSRope {
			return fmt.Errorf("mla: Nope = %d, Rope = %d, want %d and %d for cache %q", c.Nope, c.Rope, mla.FP8DSNope, mla.FP8DSRope, c.Cache)
		}
	case mla.CacheBF16:
	default:
		return fmt.Errorf("mla: Cache = %q, want %q or %q", c.Cache, mla.CacheFP8DS, mla.CacheBF16)
	}
	if len(c.Segments) < 1 || len(c.Segments) > 2 {
		return fmt.Errorf("mla: len(Segments) = %d, want 1 or 2", len(c.Segments))
	}
	if len(c.Layouts) != len(c.Segments) {
		return fmt.Errorf("mla: len(Layouts) = %d, want len(Segments) = %d", len(c.Layouts), len(c.Segments))
	}
	for i := range c.Segments {
		s := c.Segment(i)
		switch {
		case s.K < 1:
			return fmt.Errorf("mla: Segments[%d].K = %d, want >= 1", i, s.K)
		case s.IdxStride != 0 && s.IdxStride < s.K:
			return fmt.Errorf("mla: Layouts[%d].IdxStride = %d, want 0 (packed) or >= K = %d", i, s.IdxStride, s.K)
		case s.PageSize < 1:
			return fmt.Errorf("mla: Segments[%d].PageSize = %d, want >= 1", i, s.PageSize)
		case int64(s.PageStride) < c.PageBytes(s.PageSize):
			return fmt.Errorf("mla: Layouts[%d].PageStride = %d, want >= %d (PageSize %d tokens of cache %q)", i, s.PageStride, c.PageBytes(s.PageSize), s.PageSize, c.Cache)
		case s.Pages < 1:
			return fmt.Errorf("mla: Layouts[%d].Pages = %d, want >= 1", i, s.Pages)
		case int64(s.Pages)*int64(s.PageSize) > math.MaxInt32:
			return fmt.Errorf("mla: Layouts[%d].Pages*PageSize = %d, want <= 2^31-1 (slots and indices are int32; bytes may exceed 2^32)", i, int64(s.Pages)*int64(s.PageSize))
		}
	}
	return nil
}

// MLAInputs holds the buffers of one launch, in the layouts the kernel reads.
type MLAInputs struct {
	// Q holds q[t,h,d] at t*QStrideT + h*QStrideH + d.
	Q        []dtype.BF16
	Segments []SegmentInputs
	// Sink is [H] f32, nil unless MLAConfig.Sink. -Inf has no effect, +Inf
	// zeroes the output.
	Sink []float32
}

// SegmentInputs holds one segment's buffers.
type SegmentInputs struct {
	Cache []byte  // Pages*PageStride bytes, layout per MLAConfig.Cache
	Idx   []int32 // idx[t,j] at t*IdxStride + j; a slot is page*PageSize + offset
	Len   []int32 // [T] valid-prefix lengths, nil unless HasLen
}

// CheckInputs reports the first buffer whose size does not match c.
func (c MLAConfig) CheckInputs(in *MLAInputs) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if len(in.Q) < c.QLen() {
		return fmt.Errorf("mla inputs: len(Q) = %d, want >= %d", len(in.Q), c.QLen())
	}
	if c.Sink && len(in.Sink) != c.H {
		return fmt.Errorf("mla inputs: len(Sink) = %d, want H = %d", len(in.Sink), c.H)
	}
	if !c.Sink && in.Sink != nil {
		return fmt.Errorf("mla inputs: Sink given but config has Sink = false")
	}
	if len(in.Segments) != len(c.Segments) {
		return fmt.Errorf("mla inputs: len(Segments) = %d, want %d", len(in.Segments), len(c.Segments))
	}
	for i := range c.Segments {
		s, si := c.Segment(i), in.Segments[i]
		if len(si.Cache) < s.Pages*s.PageStride {
			return fmt.Errorf("mla inputs: len(Segments[%d].Cache) = %d, want >= Pages*PageStride = %d", i, len(si.Cache), s.Pages*s.PageStride)
		}
		if n := (c.T-1)*s.idxStride() + s.K; len(si.Idx) < n {
			return fmt.Errorf("mla inputs: len(Segments[%d].Idx) = %d, want >= %d", i, len(si.Idx), n)
		}
		if s.HasLen && len(si.Len) != c.T {
			return fmt.Errorf("mla inputs: len(Segments[%d].Len) = %d, want T = %d", i, len(si.Len), c.T)
		}
		if !s.HasLen && si.Len != nil {
			return fmt.Errorf("mla inputs: Segments[%d].Len given but HasLen = false", i)
		}
	}
	return nil
}

// Candidates returns, for row t, the valid slots of segment s in order: the
// entries among the first clamp(len, 0, K) of the row that lie in [0, Slots)
// (spec section 3). An index past the pool, from a buggy indexer, is invalid
// like -1: never loaded.
func (c MLAConfig) Candidates(in *MLAInputs, s, t int) []int32 {
	sc, si := c.Segment(s), in.Segments[s]
	n := sc.K
	if sc.HasLen {
		n = min(max(int(si.Len[t]), 0), sc.K)
	}
	row := si.Idx[t*sc.idxStride() : t*sc.idxStride()+n]
	var out []int32
	slots := sc.Slots()
	for _, id := range row {
		if id >= 0 && int(id) < slots {
			out = append(out, id)
		}
	}
	return out
}

// LoadK appends to dst the exact values of the K/V vector at slot id of
// segment s (spec section 5, loadK). id must be one of Candidates' (in
// [0, Slots)), and in.Segments[s].Cache as CheckInputs requires.
func (c MLAConfig) LoadK(dst []float64, in *MLAInputs, s int, id int32) []float64 {
	sc := c.Segment(s)
	cache := in.Segments[s].Cache
	page, off := int(id)/sc.PageSize, int(id)%sc.PageSize // int is 64-bit: pools pass 2^31 bytes
	base := page * sc.PageStride
	if c.Cache == mla.CacheBF16 {
		rec := base + off*c.D()*2
		for d := 0; d < c.D(); d++ {
			dst = append(dst, dtype.BF16(binary.LittleEndian.Uint16(cache[rec+2*d:])).F64())
		}
		return dst
	}
	rec := base + off*mla.FP8DSRecordBytes
	sc8 := base + sc.PageSize*mla.FP8DSRecordBytes + off*mla.FP8DSScaleBytes
	for d := 0; d < mla.FP8DSNope; d++ {
		// UE8M0 exponent: 2^(e-127) exactly, for every byte e as the spec writes it.
		scale := math.Ldexp(1, int(cache[sc8+d/mla.FP8DSScaleBlock])-127)
		dst = append(dst, dtype.E4M3(cache[rec+d]).F64()*scale)
	}
	for i := 0; i < mla.FP8DSRope; i++ {
		dst = append(dst, dtype.BF16(binary.LittleEndian.Uint16(cache[rec+mla.FP8DSNope+2*i:])).F64())
	}
	return dst
}

// MLADecode is the float64 reference of spec section 5. It returns out
// [T,H,D] before bf16 rounding (RoundBF16 gives the kernel's format) and the
// natural-log LSE [T,H] without the sink. A row with no valid candidate gets
// out = 0 and lse = +Inf. An index outside the segment's pool is invalid like
// -1 (Candidates); only inputs of the wrong shape (CheckInputs) are errors.
func MLADecode(c MLAConfig, in *MLAInputs) (out, lse []float64, err error) {
	if err := c.CheckInputs(in); err != nil {
		return nil, nil, err
	}
	D := c.D()
	scale := c.SoftmaxScale()
	qst, qsh := c.QStrides()
	out = make([]float64, c.T*c.H*D)
	lse = make([]float64, c.T*c.H)
	// The row's valid K/V vectors, n x D, loaded once for all heads, in one buffer
	// for the fullest row (append's growth held up to twice that).
	most := 0
	for t := 0; t < c.T; t++ {
		n := 0
		for s := range c.Segments {
			n += len(c.Candidates(in, s, t))
		}
		most = max(most, n)
	}
	kv := make([]float64, 0, most*D)
	logits := []float64{}
	q := make([]float64, D)
	for t := 0; t < c.T; t++ {
		kv = kv[:0]
		for s := range c.Segments {
			for _, id := range c.Candidates(in, s, t) {
				kv = c.LoadK(kv, in, s, id)
			}
		}
		n := len(kv) / D
		for h := 0; h < c.H; h++ {
			o := out[(t*c.H+h)*D : (t*c.H+h+1)*D]
			if n == 0 {
				lse[t*c.H+h] = math.Inf(1) // o stays 0
				continue
			}
			for d := range q {
				q[d] = in.Q[t*qst+h*qsh+d].F64()
			}
			logits = logits[:0]
			m := math.Inf(-1)
			for j := 0; j < n; j++ {
				var dot float64
				for d, kd := range kv[j*D : (j+1)*D] {
					dot += float64(q[d] * kd)
				}
				l := scale * dot
				logits = append(logits, l)
				m = max(m, l)
			}
			var sum float64
			for _, l := range logits {
				sum += math.Exp(l - m)
			}
			ls := m + math.Log(sum)
			for j, l := range logits {
				p := math.Exp(l - ls)
				for d, v := range kv[j*D : (j+1)*D] {
					o[d] += float64(p * v)
				}
			}
			if c.Sink {
				g := 0.0
				if sk := float64(in.Sink[h]); !math.IsInf(sk, 1) {
					g = 1 / (1 + math.Exp(sk-ls)) // sink = -Inf gives exp = 0, g = 1
				}
				for d := range o {
					o[d] *= g
				}
			}
			lse[t*c.H+h] = ls
		}
	}
	return out, lse, nil
}

// NewMLAConfig is the call of shape s over segments, each a candidate list with
// the layout of its buffers (they replace s.Segments); q is packed.
func NewMLAConfig(s mla.Shape, segments ...SegmentConfig) MLAConfig {
	c := MLAConfig{Shape: s}
	c.Segments = nil
	for _, sc := range segments {
		c.Segments = append(c.Segments, sc.Segment)
		c.Layouts = append(c.Layouts, sc.SegmentLayout)
	}
	return c
}
