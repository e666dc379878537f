package golden

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/ptxgen/ptxgen/dtype"
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
	Cache       CacheFormat     `json:"cache"`
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
func LoadVectors(dir string) (*Vectors, error) {
	fail := func(format string, args ...any) (*Vectors, error) {
		return nil, fmt.Errorf("load vectors %s: %s", dir, fmt.Sprintf(format, args...))
	}
	raw, err := os.ReadFile(filepath.Join(dir, "meta.json"))
	if err != nil {
		return fail("%v", err)
	}
	var m vectorMeta
	if err := json.Unmarshal(raw, &m); err != nil {
		return fail("meta.json: %v", err)
	}
	if m.Kernel != "mla_decode" {
		return fail("meta.json kernel = %q, want \"mla_decode\"", m.Kernel)
	}
	c := MLAConfig{T: m.T, H: m.H, Nope: m.Nope, Rope: m.Rope, Scale: m.Scale, Cache: m.Cache, Sink: m.Sink}
	for _, s := range m.Segments {
		c.Segments = append(c.Segments, SegmentConfig{K: s.K, PageSize: s.PageSize, PageStride: s.PageStride, Pages: s.Pages, HasLen: s.LenFile != ""})
	}
	if err := c.Validate(); err != nil {
		return fail("%v", err)
	}
	// read loads file name as exactly n elements of size bytes each.
	read := func(name string, n, size int) ([]byte, error) {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		if len(b) != n*size {
			return nil, fmt.Errorf("%s has %d bytes, want %d (%d elements of %d bytes)", name, len(b), n*size, n, size)
		}
		return b, nil
	}
	v := &Vectors{Name: filepath.Base(dir), Config: c, Inputs: &MLAInputs{}, ValidPerRow: m.ValidPerRow}
	D := c.D()
	qb, err := read("q.bf16", c.T*c.H*D, 2)
	if err != nil {
		return fail("%v", err)
	}
	v.Inputs.Q = make([]dtype.BF16, c.T*c.H*D)
	for i := range v.Inputs.Q {
		v.Inputs.Q[i] = dtype.BF16(binary.LittleEndian.Uint16(qb[2*i:]))
	}
	for i, s := range m.Segments {
		var si SegmentInputs
		if si.Cache, err = read(s.CacheFile, s.Pages*s.PageStride, 1); err != nil {
			return fail("segment %d: %v", i, err)
		}
		b, err := read(s.IdxFile, c.T*s.K, 4)
		if err != nil {
			return fail("segment %d: %v", i, err)
		}
		si.Idx = int32s(b)
		if s.LenFile != "" {
			b, err := read(s.LenFile, c.T, 4)
			if err != nil {
				return fail("segment %d: %v", i, err)
			}
			si.Len = int32s(b)
		}
		v.Inputs.Segments = append(v.Inputs.Segments, si)
	}
	if c.Sink {
		b, err := read("sink.f32", c.H, 4)
		if err != nil {
			return fail("%v", err)
		}
		v.Inputs.Sink = make([]float32, c.H)
		for i := range v.Inputs.Sink {
			v.Inputs.Sink[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		}
	}
	if b, err := read("out_ref.f64", c.T*c.H*D, 8); err != nil {
		return fail("%v", err)
	} else {
		v.Out = float64s(b)
	}
	if b, err := read("lse_ref.f64", c.T*c.H, 8); err != nil {
		return fail("%v", err)
	} else {
		v.LSE = float64s(b)
	}
	return v, nil
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
	for i, s := range c.Segments {
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
