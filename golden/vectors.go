package golden

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/internal/strictjson"
	"github.com/ptxgen/ptxgen/mla"
)

// Vectors is one test-vector folder (shared/testvectors/README.md): the
// inputs of one mla_decode call and its independently computed float64
// outputs.
type Vectors struct {
	Name   string
	Config MLAConfig
	Inputs *MLAInputs
	Out    []float64 // [T,H,D], before bf16 rounding
	LSE    []float64 // [T,H], natural log, without the sink, +Inf for empty rows
	// ValidPerRow is meta.json's count of valid candidates per row, a check
	// on the reading of len and idx.
	ValidPerRow []int
}

type vectorMeta struct {
	Kernel      string          `json:"kernel"`
	T           int             `json:"T"`
	H           int             `json:"H"`
	Nope        int             `json:"nope"`
	Rope        int             `json:"rope"`
	Scale       float64         `json:"sm_scale"`
	Sink        bool            `json:"sink"`
	Cache       mla.CacheFormat `json:"cache"`
	Segments    []vectorSegment `json:"segments"`
	ValidPerRow []int           `json:"valid_candidates_per_row"`
}

// vectorSegment is one segment's entry in meta.json.
type vectorSegment struct {
	K          int    `json:"K"`
	PageSize   int    `json:"page_size"`
	PageStride int    `json:"page_stride"`
	Pages      int    `json:"pages"`
	CacheFile  string `json:"cache"`
	IdxFile    string `json:"idx"`
	LenFile    string `json:"len"`
}

// LoadVectors reads a test-vector folder: meta.json plus raw little-endian
// arrays. Every array must have exactly the size meta.json implies.
func LoadVectors(dir string) (*Vectors, error) { return LoadVectorsLimit(dir, math.MaxInt64) }

// maxMetaBytes bounds meta.json (the shared folders' are under 1 KB).
const maxMetaBytes = 1 << 20

// LoadVectorsLimit is LoadVectors refusing, before reading any array, a folder
// whose arrays (as meta.json sizes them) total more than maxBytes. Only regular
// files inside dir are read, each only once its size is known to be the one
// meta.json implies, so a folder cannot make the reader block (a FIFO), read
// outside dir, or allocate more than the files hold.
func LoadVectorsLimit(dir string, maxBytes int64) (*Vectors, error) {
	fail := func(format string, args ...any) (*Vectors, error) {
		return nil, fmt.Errorf("load vectors %s: %s", dir, fmt.Sprintf(format, args...))
	}
	raw, err := readRegular(filepath.Join(dir, "meta.json"), -1, maxMetaBytes)
	if err != nil {
		return fail("%v", err)
	}
	var m vectorMeta
	if err := strictjson.Decode(raw, &m); err != nil {
		return fail("meta.json: %v", err)
	}
	if m.Kernel != "mla_decode" {
		return fail("meta.json kernel = %q, want \"mla_decode\"", m.Kernel)
	}
	if err := m.check(); err != nil {
		return fail("meta.json %v", err)
	}
	c := MLAConfig{Shape: mla.Shape{T: m.T, H: m.H, Nope: m.Nope, Rope: m.Rope, Scale: m.Scale, Cache: m.Cache, Sink: m.Sink}}
	for _, s := range m.Segments {
		c.Segments = append(c.Segments, mla.Segment{K: s.K, PageSize: s.PageSize, HasLen: s.LenFile != ""})
		c.Layouts = append(c.Layouts, SegmentLayout{PageStride: s.PageStride, Pages: s.Pages})
	}
	if err := c.Validate(); err != nil {
		return fail("meta.json: %v", err) // m.check names the fields; this cannot fail after it
	}
	// Every array's size, overflow-checked: meta.json's numbers are unbounded.
	type array struct {
		name    string
		n, size int64
	}
	var arrays []array
	add := func(name string, size int64, dims ...int) error {
		if name == "" || name != filepath.Base(name) || name == "." || name == ".." {
			return fmt.Errorf("file name %q: want a file in the folder", name)
		}
		n := int64(1)
		for _, d := range dims {
			if d < 0 || n > math.MaxInt64/size/max(int64(d), 1) {
				return fmt.Errorf("%s: %v elements do not fit in memory", name, dims)
			}
			n *= int64(d)
		}
		arrays = append(arrays, array{name, n, size})
		return nil
	}
	errs := []error{add("q.bf16", 2, c.T, c.H, c.D())}
	for _, s := range m.Segments {
		errs = append(errs, add(s.CacheFile, 1, s.Pages, s.PageStride), add(s.IdxFile, 4, c.T, s.K))
		if s.LenFile != "" {
			errs = append(errs, add(s.LenFile, 4, c.T))
		}
	}
	if c.Sink {
		errs = append(errs, add("sink.f32", 4, c.H))
	}
	errs = append(errs, add("out_ref.f64", 8, c.T, c.H, c.D()), add("lse_ref.f64", 8, c.T, c.H))
	for _, e := range errs {
		if e != nil {
			return fail("%v", e)
		}
	}
	total, seen := int64(0), map[string]bool{}
	for _, a := range arrays {
		if seen[a.name] {
			return fail("meta.json names %s for two arrays", a.name)
		}
		seen[a.name] = true
		if total += a.n * a.size; total > maxBytes || total < 0 {
			return fail("its arrays need more than %d bytes of memory (the limit)", maxBytes)
		}
	}
	if err := m.checkValidCounts(); err != nil {
		return fail("meta.json %v", err)
	}
	files := map[string][]byte{}
	for _, a := range arrays {
		b, err := readRegular(filepath.Join(dir, a.name), a.n*a.size, a.n*a.size)
		if err != nil {
			return fail("%v (%d elements of %d bytes)", err, a.n, a.size)
		}
		files[a.name] = b
	}
	v := &Vectors{Name: filepath.Base(dir), Config: c, Inputs: &MLAInputs{}, ValidPerRow: m.ValidPerRow}
	qb := files["q.bf16"]
	v.Inputs.Q = make([]dtype.BF16, len(qb)/2)
	for i := range v.Inputs.Q {
		v.Inputs.Q[i] = dtype.BF16(binary.LittleEndian.Uint16(qb[2*i:]))
	}
	for _, s := range m.Segments {
		si := SegmentInputs{Cache: files[s.CacheFile], Idx: int32s(files[s.IdxFile])}
		if s.LenFile != "" {
			si.Len = int32s(files[s.LenFile])
		}
		v.Inputs.Segments = append(v.Inputs.Segments, si)
	}
	if c.Sink {
		b := files["sink.f32"]
		v.Inputs.Sink = make([]float32, len(b)/4)
		for i := range v.Inputs.Sink {
			v.Inputs.Sink[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	v.Out = float64s(files["out_ref.f64"])
	v.LSE = float64s(files["lse_ref.f64"])
	if err := checkReference(v, m.ValidPerRow); err != nil {
		return fail("%v", err)
	}
	return v, nil
}

// checkReference refuses reference outputs that no correct kernel can match, so that
// the folder is blamed rather than the kernel: a NaN or an infinity in out_ref, and in
// lse_ref anything but a finite number for a row with valid candidates and +Inf for a
// row without (what the reference gives there; valid counts from meta.json).
func checkReference(v *Vectors, validPerRow []int) error {
	c := v.Config
	D := c.D()
	for i, x := range v.Out {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return fmt.Errorf("out_ref.f64 element %d ([%d %d %d] of [T H D]) is %v: want a finite number", i, i/(c.H*D), i/D%c.H, i%D, x)
		}
	}
	for i, x := range v.LSE {
		row := i / c.H
		at := fmt.Sprintf("lse_ref.f64 element %d ([%d %d] of [T H])", i, row, i%c.H)
		switch {
		case validPerRow[row] == 0 && !math.IsInf(x, 1):
			return fmt.Errorf("%s is %v: want +Inf (row %d has no valid candidate, valid_candidates_per_row)", at, x, row)
		case validPerRow[row] > 0 && (math.IsNaN(x) || math.IsInf(x, 0)):
			return fmt.Errorf("%s is %v: want a finite number (+Inf only in a row without valid candidates; row %d has %d, valid_candidates_per_row)", at, x, row, validPerRow[row])
		}
	}
	return nil
}

// check refuses what MLAConfig.Validate refuses, naming meta.json's fields (T,
// segments[0].page_stride) rather than the Go ones.
func (m *vectorMeta) check() error {
	bad := func(field string, v any, want string) error { return fmt.Errorf("%s = %v: want %s", field, v, want) }
	switch {
	case m.T < 1:
		return bad("T", m.T, "an integer >= 1 (query rows)")
	case m.H < 1:
		return bad("H", m.H, "an integer >= 1 (heads)")
	case m.Nope < 0:
		return bad("nope", m.Nope, "an integer >= 0")
	case m.Rope < 0:
		return bad("rope", m.Rope, "an integer >= 0")
	case m.Nope+m.Rope < 1:
		return bad("nope", m.Nope, fmt.Sprintf("a width with nope+rope >= 1 (rope = %d)", m.Rope))
	case m.Cache != mla.CacheFP8DS && m.Cache != mla.CacheBF16:
		return bad("cache", fmt.Sprintf("%q", m.Cache), fmt.Sprintf("%q or %q", mla.CacheFP8DS, mla.CacheBF16))
	case m.Cache == mla.CacheFP8DS && (m.Nope != mla.FP8DSNope || m.Rope != mla.FP8DSRope):
		return bad("nope", m.Nope, fmt.Sprintf("%d and rope %d with cache %q (rope = %d)", mla.FP8DSNope, mla.FP8DSRope, mla.CacheFP8DS, m.Rope))
	case math.IsNaN(m.Scale) || math.IsInf(m.Scale, 0) || m.Scale < 0:
		return bad("sm_scale", m.Scale, "0 (1/sqrt(nope+rope)) or a finite number > 0")
	case len(m.Segments) < 1 || len(m.Segments) > 2:
		return bad("segments", fmt.Sprintf("(%d entries)", len(m.Segments)), "1 or 2 entries")
	}
	c := mla.Shape{Nope: m.Nope, Rope: m.Rope, Cache: m.Cache}
	for i, s := range m.Segments {
		f := func(name string) string { return fmt.Sprintf("segments[%d].%s", i, name) }
		switch {
		case s.K < 1:
			return bad(f("K"), s.K, "an integer >= 1 (candidates per row)")
		case s.PageSize < 1:
			return bad(f("page_size"), s.PageSize, "an integer >= 1 (tokens per page)")
		case s.PageSize > math.MaxInt32:
			return bad(f("page_size"), s.PageSize, fmt.Sprintf("at most %d", math.MaxInt32))
		case int64(s.PageStride) < c.PageBytes(s.PageSize):
			return bad(f("page_stride"), s.PageStride, fmt.Sprintf(">= %d bytes (page_size %d tokens of cache %q)", c.PageBytes(s.PageSize), s.PageSize, m.Cache))
		case s.Pages < 1:
			return bad(f("pages"), s.Pages, "an integer >= 1")
		case int64(s.Pages)*int64(s.PageSize) > math.MaxInt32:
			return bad(f("pages"), s.Pages, fmt.Sprintf("pages x page_size <= 2^31-1 (slots and indices are int32; page_size %d)", s.PageSize))
		}
	}
	return nil
}

// checkValidCounts refuses a valid_candidates_per_row that is missing, not T counts,
// or holds a count outside 0..K0+K1: without it the check would compare nothing
// there, and fail with out and lse correct.
func (m *vectorMeta) checkValidCounts() error {
	bad := func(field string, v any, want string) error { return fmt.Errorf("%s = %v: want %s", field, v, want) }
	k := 0
	for _, s := range m.Segments {
		k += min(s.K, math.MaxInt32)
	}
	switch {
	case m.ValidPerRow == nil:
		return fmt.Errorf("valid_candidates_per_row is missing: want T = %d counts (each row's valid candidates, a check on the reading of len and idx)", m.T)
	case len(m.ValidPerRow) != m.T:
		return fmt.Errorf("valid_candidates_per_row has %d counts: want T = %d", len(m.ValidPerRow), m.T)
	}
	for i, n := range m.ValidPerRow {
		if n < 0 || n > k {
			return bad(fmt.Sprintf("valid_candidates_per_row[%d]", i), n, fmt.Sprintf("a count in 0..%d (the segments' K)", k))
		}
	}
	return nil
}

// readRegular reads a regular file of exactly want bytes (-1: any size up to
// limit), refusing other sizes and kinds of file before reading anything, and
// symbolic links, which could lead out of the folder.
func readRegular(path string, want, limit int64) ([]byte, error) {
	name := filepath.Base(path)
	fi, err := os.Lstat(path)
	if err != nil {
		return nil, err
	}
	switch {
	case fi.Mode()&os.ModeSymlink != 0:
		return nil, fmt.Errorf("%s is a symbolic link: want a regular file in the folder (links could lead out of it)", name)
	case !fi.Mode().IsRegular():
		return nil, fmt.Errorf("%s is not a regular file", name)
	case want >= 0 && fi.Size() != want:
		return nil, fmt.Errorf("%s has %d bytes, want %d", name, fi.Size(), want)
	case fi.Size() > limit:
		return nil, fmt.Errorf("%s has %d bytes, want at most %d", name, fi.Size(), limit)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if opened, err := f.Stat(); err != nil || !os.SameFile(fi, opened) {
		return nil, fmt.Errorf("%s changed while opened", name) // replaced, by a link perhaps
	}
	// Exactly the size stat gave, in one allocation (io.ReadAll grows its buffer by
	// copying, which held about twice a large file), then one byte more must be EOF.
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s changed size while read", name)
		}
		return nil, err
	}
	if n, _ := f.Read(make([]byte, 1)); n != 0 {
		return nil, fmt.Errorf("%s changed size while read", name)
	}
	return b, nil
}

func int32s(b []byte) []int32 {
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func float64s(b []byte) []float64 {
	out := make([]float64, len(b)/8)
	for i := range out {
		out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return out
}

// WriteVectors writes a test-vector folder in the format LoadVectors reads (and
// shared/testvectors/README.md describes): it is how ptxgen hands the exact inputs
// and float64 outputs of a benchmark shape to another implementation (the Triton
// baseline). q must be packed (QStrideT, QStrideH zero).
func WriteVectors(dir string, c MLAConfig, in *MLAInputs, out, lse []float64) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if err := c.CheckInputs(in); err != nil {
		return err
	}
	if c.QStrideT != 0 || c.QStrideH != 0 {
		return fmt.Errorf("write vectors %s: q must be packed", dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	m := vectorMeta{Kernel: "mla_decode", T: c.T, H: c.H, Nope: c.Nope, Rope: c.Rope, Scale: c.SoftmaxScale(), Sink: c.Sink, Cache: c.Cache}
	files := map[string][]byte{}
	put := func(name string, data any) {
		b, err := binary.Append(nil, binary.LittleEndian, data)
		if err != nil {
			panic(err)
		}
		files[name] = b
	}
	put("q.bf16", in.Q)
	for i := range c.Segments {
		s := c.Segment(i)
		var ms vectorSegment
		ms.K, ms.PageSize, ms.PageStride, ms.Pages = s.K, s.PageSize, s.PageStride, s.Pages
		ms.CacheFile, ms.IdxFile = fmt.Sprintf("cache%d.u8", i), fmt.Sprintf("idx%d.i32", i)
		files[ms.CacheFile] = in.Segments[i].Cache
		idx := in.Segments[i].Idx
		if s.IdxStride != 0 && s.IdxStride != s.K {
			return fmt.Errorf("write vectors %s: segment %d idx must be packed", dir, i)
		}
		put(ms.IdxFile, idx)
		if s.HasLen {
			ms.LenFile = fmt.Sprintf("len%d.i32", i)
			put(ms.LenFile, in.Segments[i].Len)
		}
		m.Segments = append(m.Segments, ms)
	}
	if c.Sink {
		put("sink.f32", in.Sink)
	}
	put("out_ref.f64", out)
	put("lse_ref.f64", lse)
	for t := 0; t < c.T; t++ {
		n := 0
		for s := range c.Segments {
			n += len(c.Candidates(in, s, t))
		}
		m.ValidPerRow = append(m.ValidPerRow, n)
	}
	meta, err := json.MarshalIndent(m, "", " ")
	if err != nil {
		return err
	}
	files["meta.json"] = append(meta, '\n')
	for name, b := range files {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return nil
}
