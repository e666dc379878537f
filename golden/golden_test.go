package golden

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/ptxgen/ptxgen/internal/strictjson"
	"github.com/ptxgen/ptxgen/mla"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden from the current generators and references")

const goldenDir = "testdata/golden"

// goldenCase is one pinned configuration. Its sidecar JSON records the
// configuration, the seed, a SHA-256 of the generated inputs and the output
// shapes; the outputs themselves are raw little-endian float64 files.
type goldenCase struct {
	Name      string         `json:"name"`
	MLA       *mlaJSON       `json:"mla,omitempty"`
	Gen       *MLAGenOptions `json:"mla_gen,omitempty"`
	Gemm      *GemmConfig    `json:"gemm,omitempty"`
	GemmSeed  uint64         `json:"gemm_seed,omitempty"`
	InputsSHA string         `json:"inputs_sha256"`
	Outputs   []goldenOutput `json:"outputs"`
}

// mlaJSON is an MLAConfig in the sidecar's form, each segment with its layout.
type mlaJSON struct {
	T        int             `json:"T"`
	H        int             `json:"H"`
	Nope     int             `json:"nope"`
	Rope     int             `json:"rope"`
	Scale    float64         `json:"sm_scale,omitempty"`
	QStrideT int             `json:"q_stride_t,omitempty"`
	QStrideH int             `json:"q_stride_h,omitempty"`
	Cache    mla.CacheFormat `json:"cache"`
	Sink     bool            `json:"sink"`
	Segments []segmentJSON   `json:"segments"`
}

type segmentJSON struct {
	K          int  `json:"K"`
	PageSize   int  `json:"page_size"`
	PageStride int  `json:"page_stride"`
	Pages      int  `json:"pages"`
	IdxStride  int  `json:"idx_stride,omitempty"`
	HasLen     bool `json:"has_len"`
}

func goldenMLA(c MLAConfig) *mlaJSON {
	j := &mlaJSON{T: c.T, H: c.H, Nope: c.Nope, Rope: c.Rope, Scale: c.Scale, QStrideT: c.QStrideT, QStrideH: c.QStrideH, Cache: c.Cache, Sink: c.Sink}
	for s := range c.Segments {
		sc := c.Segment(s)
		j.Segments = append(j.Segments, segmentJSON{sc.K, sc.PageSize, sc.PageStride, sc.Pages, sc.IdxStride, sc.HasLen})
	}
	return j
}

func (j *mlaJSON) config() MLAConfig {
	c := MLAConfig{Shape: mla.Shape{T: j.T, H: j.H, Nope: j.Nope, Rope: j.Rope, Scale: j.Scale, Cache: j.Cache, Sink: j.Sink}, QStrideT: j.QStrideT, QStrideH: j.QStrideH}
	for _, s := range j.Segments {
		c.Segments = append(c.Segments, mla.Segment{K: s.K, PageSize: s.PageSize, HasLen: s.HasLen})
		c.Layouts = append(c.Layouts, SegmentLayout{PageStride: s.PageStride, Pages: s.Pages, IdxStride: s.IdxStride})
	}
	return c
}

type goldenOutput struct {
	Name  string `json:"name"`
	Shape []int  `json:"shape"`
	File  string `json:"file"`
}

// goldenCases are small on purpose (about 90 KB of outputs in all) but
// cover both cache formats, both segments, strides, poison, empty rows, sink
// edges, len clamping and a strided GEMM.
func goldenCases() []goldenCase {
	return []goldenCase{
		{
			Name: "mla_fp8ds_t3_h4",
			MLA: goldenMLA(NewMLAConfig(mla.Shape{T: 3, H: 4, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true},
				segment(40, 16, 16*584+64, 5, 0, true),
				segment(23, 2, 2*584, 24, 25, true))),
			Gen: &MLAGenOptions{Seed: 1, Poison: true, InvalidFrac: 0.1, EmptyRows: []int{1}, SinkEdges: true, LenOutOfRange: true},
		},
		{
			Name: "mla_bf16_t2_h3_d80_strided",
			MLA: goldenMLA(MLAConfig{Shape: mla.Shape{T: 2, H: 3, Nope: 64, Rope: 16, Scale: 0.125, Cache: mla.CacheBF16,
				Segments: []mla.Segment{{K: 33, PageSize: 8}}}, QStrideH: 96, QStrideT: 300,
				Layouts: []SegmentLayout{{PageStride: 8*80*2 + 32, Pages: 6, IdxStride: 35}}}),
			Gen: &MLAGenOptions{Seed: 2, InvalidFrac: 0.2},
		},
		{Name: "gemm_20x12x50_strided", Gemm: &GemmConfig{M: 20, N: 12, K: 50, LDA: 56, LDB: 16}, GemmSeed: 3},
		{Name: "gemm_64x64x256", Gemm: &GemmConfig{M: 64, N: 64, K: 256}, GemmSeed: 4},
	}
}

// run generates the case's inputs, computes the reference and fills in the
// hash and output list; it returns the outputs in Outputs order.
func (g *goldenCase) run(t *testing.T) [][]float64 {
	t.Helper()
	h := sha256.New()
	put := func(v any) {
		if err := binary.Write(h, binary.LittleEndian, v); err != nil {
			t.Fatal(err)
		}
	}
	g.Outputs = nil
	if g.Gemm != nil {
		a, b, err := GenGemm(*g.Gemm, g.GemmSeed)
		if err != nil {
			t.Fatal(err)
		}
		put(a)
		put(b)
		c, err := Gemm(*g.Gemm, a, b)
		if err != nil {
			t.Fatalf("seed %#x: %v", g.GemmSeed, err)
		}
		g.InputsSHA = hex.EncodeToString(h.Sum(nil))
		g.Outputs = []goldenOutput{{"C", []int{g.Gemm.M, g.Gemm.N}, g.Name + ".C.f64"}}
		return [][]float64{c}
	}
	cfg := g.MLA.config()
	in, err := GenMLA(cfg, *g.Gen)
	if err != nil {
		t.Fatal(err)
	}
	put(in.Q)
	for _, s := range in.Segments {
		put(s.Cache)
		put(s.Idx)
		put(s.Len)
	}
	put(in.Sink)
	out, lse, err := MLADecode(cfg, in)
	if err != nil {
		t.Fatalf("seed %#x: %v", g.Gen.Seed, err)
	}
	g.InputsSHA = hex.EncodeToString(h.Sum(nil))
	c := cfg
	g.Outputs = []goldenOutput{
		{"out", []int{c.T, c.H, c.D()}, g.Name + ".out.f64"},
		{"lse", []int{c.T, c.H}, g.Name + ".lse.f64"},
	}
	return [][]float64{out, lse}
}

func f64Bytes(x []float64) []byte {
	b := make([]byte, 8*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(v))
	}
	return b
}

// goldenArch is where the files were written. math.Exp and math.Log have
// assembly versions on some architectures that may differ from the pure-Go
// ones in the last bit, so elsewhere outputs are compared to 1e-13 relative
// instead of bit for bit (the input hashes are exact everywhere).
const goldenArch = "amd64"

// TestGolden regenerates every golden case and demands bit-identical
// results: a change to a generator (hash) or a reference (outputs) shows
// here. Run `go test ./golden -update` after an intended change and review
// the diff.
func TestGolden(t *testing.T) {
	for _, g := range goldenCases() {
		t.Run(g.Name, func(t *testing.T) {
			outs := g.run(t)
			meta := filepath.Join(goldenDir, g.Name+".json")
			if *update {
				if err := os.MkdirAll(goldenDir, 0o755); err != nil {
					t.Fatal(err)
				}
				j, err := json.MarshalIndent(g, "", "  ")
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(meta, append(j, '\n'), 0o644); err != nil {
					t.Fatal(err)
				}
				for i, o := range g.Outputs {
					if err := os.WriteFile(filepath.Join(goldenDir, o.File), f64Bytes(outs[i]), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				return
			}
			raw, err := os.ReadFile(meta)
			if err != nil {
				t.Fatalf("%v (run go test ./golden -update to create it)", err)
			}
			var want goldenCase
			if err := strictjson.Decode(raw, &want); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, g); d != "" {
				t.Errorf("%s differs from the regenerated case (-file +now):\n%s", meta, d)
			}
			for i, o := range g.Outputs {
				wantB, err := os.ReadFile(filepath.Join(goldenDir, o.File))
				if err != nil {
					t.Fatal(err)
				}
				gotB := f64Bytes(outs[i])
				if bytes.Equal(gotB, wantB) {
					continue
				}
				if len(gotB) != len(wantB) {
					t.Errorf("%s: %d bytes, file has %d", o.File, len(gotB), len(wantB))
					continue
				}
				wantF := float64s(wantB)
				diffs := 0
				for k, w := range wantF {
					v := outs[i][k]
					same := math.Float64bits(w) == math.Float64bits(v)
					if runtime.GOARCH != goldenArch {
						same = same || math.Abs(v-w) <= 1e-13*math.Abs(w)
					}
					if !same {
						if diffs < 5 {
							t.Errorf("%s %v: now %v, file %v", o.File, unravel(k, o.Shape), v, w)
						}
						diffs++
					}
				}
				if diffs > 0 {
					t.Errorf("%s: %d of %d values changed", o.File, diffs, len(wantF))
				}
			}
		})
	}
}
