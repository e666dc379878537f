package golden

import (
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/dtype"
)

func TestGenDeterministic(t *testing.T) {
	c := fp8Config()
	o := MLAGenOptions{Seed: 42, Poison: true, InvalidFrac: 0.1, EmptyRows: []int{2}, SinkEdges: true, LenOutOfRange: true}
	a := mustGen(t, c, o)
	b := mustGen(t, c, o)
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("seed %#x: two GenMLA calls differ", o.Seed)
	}
	o.Seed = 43
	if d := mustGen(t, c, o); reflect.DeepEqual(a.Q, d.Q) || reflect.DeepEqual(a.Segments[0].Cache, d.Segments[0].Cache) {
		t.Fatalf("seeds 42 and 43 give the same q or cache")
	}
	g1, _, _ := GenGemm(GemmConfig{M: 3, N: 4, K: 5}, 1)
	g2, _, _ := GenGemm(GemmConfig{M: 3, N: 4, K: 5}, 2)
	if reflect.DeepEqual(g1, g2) {
		t.Fatalf("GenGemm seeds 1 and 2 give the same A")
	}
}

// TestGenMLAContents checks the promises of GenMLA's doc comment on one
// seeded poisoned input.
func TestGenMLAContents(t *testing.T) {
	const seed = 0xc0ffee
	c := fp8Config()
	o := MLAGenOptions{Seed: seed, Poison: true, InvalidFrac: 0.15, EmptyRows: []int{1}, SinkEdges: true, LenOutOfRange: true}
	in := mustGen(t, c, o)
	exps := map[int]int{}
	var sum, sum2 float64
	var n int
	for s := range c.Segments {
		sc := c.Segment(s)
		si := in.Segments[s]
		poisoned := 0
		for p := 0; p < sc.Pages; p++ {
			allFF := true
			for _, b := range si.Cache[p*sc.PageStride : (p+1)*sc.PageStride] {
				allFF = allFF && b == 0xFF
			}
			if allFF {
				poisoned++
			}
		}
		if poisoned == 0 {
			t.Errorf("seed %#x: segment %d has no poisoned page", seed, s)
		}
		for row := 0; row < c.T; row++ {
			cand := c.Candidates(in, s, row)
			if row == 1 && len(cand) != 0 {
				t.Errorf("seed %#x: empty row 1 has %d candidates in segment %d", seed, len(cand), s)
			}
			seen := map[int32]bool{}
			for _, id := range cand {
				if seen[id] {
					t.Errorf("seed %#x: segment %d row %d: slot %d twice", seed, s, row, id)
				}
				seen[id] = true
				p, off := int(id)/sc.PageSize, int(id)%sc.PageSize
				rec := si.Cache[p*sc.PageStride+off*576:]
				for d := 0; d < 448; d++ {
					if dtype.E4M3(rec[d]).IsNaN() {
						t.Fatalf("seed %#x: NaN e4m3 in valid slot %d", seed, id)
					}
				}
				scales := si.Cache[p*sc.PageStride+sc.PageSize*576+off*8:]
				for i := 0; i < 7; i++ {
					exps[int(scales[i])]++
				}
				if scales[7] != 0xFF {
					t.Errorf("seed %#x: scale padding byte = %#x, want 0xFF", seed, scales[7])
				}
				for _, v := range c.LoadK(nil, in, s, id) {
					sum += v
					sum2 += v * v
					n++
				}
			}
		}
		if si.Len[0] <= int32(sc.K) {
			t.Errorf("seed %#x: LenOutOfRange: segment %d len[0] = %d, want > K = %d", seed, s, si.Len[0], sc.K)
		}
	}
	// Scales spread over the fine (about 120) to coarse (130) exponents.
	lo, hi := 255, 0
	for e := range exps {
		lo, hi = min(lo, e), max(hi, e)
	}
	if lo > 121 || lo < 115 || hi != 130 {
		t.Errorf("seed %#x: scale exponents in [%d, %d], want from about 120 up to 130", seed, lo, hi)
	}
	// Dequantized K/V values are N(0,1)-sized.
	if mean, sd := sum/float64(n), math.Sqrt(sum2/float64(n)); math.Abs(mean) > 0.05 || sd < 0.9 || sd > 1.1 {
		t.Errorf("seed %#x: K values mean %.3f rms %.3f over %d, want about 0 and 1", seed, mean, sd, n)
	}
	if !math.IsInf(float64(in.Sink[0]), 1) || !math.IsInf(float64(in.Sink[1]), -1) || math.IsInf(float64(in.Sink[2]), 0) {
		t.Errorf("seed %#x: sinks %v, want +Inf, -Inf, finite...", seed, in.Sink)
	}
}

func TestGenErrorsNameSeed(t *testing.T) {
	c := fp8Config()
	c.Layouts[0].Pages = 2 // 32 slots < K = 40
	_, err := GenMLA(c, MLAGenOptions{Seed: 0x1234})
	if err == nil || !strings.Contains(err.Error(), "seed 0x1234") || !strings.Contains(err.Error(), "raise Pages") {
		t.Errorf("GenMLA with too few pages: %v", err)
	}
	_, err = GenMLA(fp8Config(), MLAGenOptions{Seed: 7, EmptyRows: []int{3}})
	if err == nil || !strings.Contains(err.Error(), "seed 0x7") {
		t.Errorf("GenMLA with EmptyRows out of range: %v", err)
	}
	if _, _, err := GenGemm(GemmConfig{M: 1, N: 1, K: 0}, 9); err == nil || !strings.Contains(err.Error(), "seed 0x9") {
		t.Errorf("GenGemm bad config: %v", err)
	}
}

// TestGenMLAOutOfPool: every row's valid prefix holds Slots, Slots+1 and
// INT_MAX (rows of len >= 3), and Candidates drops them.
func TestGenMLAOutOfPool(t *testing.T) {
	const seed = 0x0b0b
	c := fp8Config()
	in := mustGen(t, c, MLAGenOptions{Seed: seed, OutOfPool: true, Poison: true})
	for s := range c.Segments {
		sc := c.Segment(s)
		si := in.Segments[s]
		for row := 0; row < c.T; row++ {
			n := min(max(int(si.Len[row]), 0), sc.K)
			prefix := si.Idx[row*sc.idxStride() : row*sc.idxStride()+n]
			for _, want := range []int32{int32(sc.Slots()), int32(sc.Slots()) + 1, math.MaxInt32}[:min(n, 3)] {
				if !slices.Contains(prefix, want) {
					t.Errorf("seed %#x: segment %d row %d: valid prefix %v lacks %d", seed, s, row, prefix, want)
				}
			}
			for _, id := range c.Candidates(in, s, row) {
				if id < 0 || int(id) >= sc.Slots() {
					t.Errorf("seed %#x: segment %d row %d: candidate %d outside [0, %d)", seed, s, row, id, sc.Slots())
				}
			}
		}
	}
}

// TestGenMLATailPages: with TailPages, every candidate lies in the last pages,
// and every byte GenMLA did not need (outside page 0 and those pages) is zero.
func TestGenMLATailPages(t *testing.T) {
	const seed = 0x7a11
	c := fp8Config()
	c.Layouts[0].Pages = 40
	c.Layouts[1].Pages = 300
	const tail = 20
	in := mustGen(t, c, MLAGenOptions{Seed: seed, TailPages: tail, Poison: true, InvalidFrac: 0.1})
	for s := range c.Segments {
		sc := c.Segment(s)
		first := sc.Pages - tail
		for row := 0; row < c.T; row++ {
			for _, id := range c.Candidates(in, s, row) {
				if int(id)/sc.PageSize < first {
					t.Errorf("seed %#x: segment %d row %d: candidate %d on page %d, want >= %d", seed, s, row, id, int(id)/sc.PageSize, first)
				}
			}
		}
		cache := in.Segments[s].Cache
		for i, b := range cache[sc.PageStride : first*sc.PageStride] {
			if b != 0 {
				t.Fatalf("seed %#x: segment %d: byte %d = %#x outside the written pages, want 0", seed, s, sc.PageStride+i, b)
			}
		}
		if slices.Max(cache[first*sc.PageStride:]) == 0 {
			t.Fatalf("seed %#x: segment %d: the tail pages are empty", seed, s)
		}
	}
	if _, err := GenMLA(c, MLAGenOptions{Seed: seed, TailPages: -1}); err == nil || !strings.Contains(err.Error(), "TailPages = -1") {
		t.Errorf("TailPages -1: err = %v", err)
	}
}
