package golden

import (
	"math"
	"testing"
)

func TestMLADecodeParallelMatches(t *testing.T) {
	c := MLAConfig{T: 5, H: 3, Nope: 448, Rope: 64, Cache: CacheFP8DS, Sink: true,
		Segments: []SegmentConfig{{K: 33, PageSize: 8, PageStride: 8 * FP8DSTokenBytes, Pages: 12, HasLen: true}, {K: 7, PageSize: 3, PageStride: 3 * FP8DSTokenBytes, Pages: 9}}}
	in, err := GenMLA(c, MLAGenOptions{Seed: 9, InvalidFrac: 0.2, EmptyRows: []int{2}})
	if err != nil {
		t.Fatal(err)
	}
	o1, l1, err := MLADecode(c, in)
	if err != nil {
		t.Fatal(err)
	}
	o2, l2, err := MLADecodeParallel(c, in)
	if err != nil {
		t.Fatal(err)
	}
	for i := range o1 {
		if math.Float64bits(o1[i]) != math.Float64bits(o2[i]) {
			t.Fatalf("out[%d]: %v vs %v", i, o1[i], o2[i])
		}
	}
	for i := range l1 {
		if math.Float64bits(l1[i]) != math.Float64bits(l2[i]) {
			t.Fatalf("lse[%d]: %v vs %v", i, l1[i], l2[i])
		}
	}
}
