package golden

import (
	"math"
	"testing"

	"github.com/ptxgen/ptxgen/mla"
)

func TestMLADecodeParallelMatches(t *testing.T) {
	c := NewMLAConfig(mla.Shape{T: 5, H: 3, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true},
		segment(33, 8, 8*mla.FP8DSTokenBytes, 12, 0, true), segment(7, 3, 3*mla.FP8DSTokenBytes, 9, 0, false))
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
