package golden

import (
	"math"
	"testing"

	"github.com/ptxgen/ptxgen/mla"
)

// TestWriteVectorsRoundTrip: a folder written by WriteVectors loads back to the
// same configuration, inputs and outputs.
func TestWriteVectorsRoundTrip(t *testing.T) {
	c := NewMLAConfig(mla.Shape{T: 2, H: 4, Nope: 448, Rope: 64, Cache: mla.CacheFP8DS, Sink: true},
		segment(40, 16, 16*mla.FP8DSTokenBytes, 8, 0, true), segment(9, 2, 1168, 12, 0, false))
	in, err := GenMLA(c, MLAGenOptions{Seed: 7, InvalidFrac: 0.2, Poison: true})
	if err != nil {
		t.Fatal(err)
	}
	out, lse, err := MLADecode(c, in)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := WriteVectors(dir, c, in, out, lse); err != nil {
		t.Fatal(err)
	}
	v, err := LoadVectors(dir)
	if err != nil {
		t.Fatal(err)
	}
	if v.Config.T != c.T || v.Config.H != c.H || len(v.Config.Segments) != 2 || v.Config.Layouts[1].PageStride != 1168 || v.Config.Segments[1].HasLen {
		t.Errorf("config came back as %+v", v.Config)
	}
	if v.Config.SoftmaxScale() != c.SoftmaxScale() {
		t.Errorf("scale %v, want %v", v.Config.SoftmaxScale(), c.SoftmaxScale())
	}
	for i := range out {
		if math.Float64bits(v.Out[i]) != math.Float64bits(out[i]) {
			t.Fatalf("out[%d] = %v, want %v", i, v.Out[i], out[i])
		}
	}
	got, gotLSE, err := MLADecode(v.Config, v.Inputs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(out[i]) {
			t.Fatalf("reference on the loaded inputs differs at %d", i)
		}
	}
	for i := range gotLSE {
		if math.Float64bits(gotLSE[i]) != math.Float64bits(lse[i]) {
			t.Fatalf("lse differs at %d", i)
		}
	}
}
