package rmsnorm

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/target"
)

// TestEmulator compiles rmsnorm.ir for each target this package is generated for, runs it
// in ptxgen's emulator on seeded random rows and compares with Reference: the check a
// downstream module can run in `go test`, without a GPU.
func TestEmulator(t *testing.T) {
	src, err := os.ReadFile("rmsnorm.ir")
	if err != nil {
		t.Fatal(err)
	}
	k, err := ir.Parse(string(src))
	if err != nil {
		t.Fatal(err)
	}
	for _, arch := range []string{"sm_120", "sm_90"} {
		tg, err := target.LookupTarget(arch)
		if err != nil {
			t.Fatal(err)
		}
		res, err := lower.Compile(k, tg, lower.Options{Check: true})
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		for _, rows := range []int{1, 7} {
			seed := uint64(100*rows) + uint64(len(arch))
			rng := rand.New(rand.NewPCG(seed, 0))
			x := make([]float32, rows*Width)
			for i := range x {
				x[i] = float32(rng.NormFloat64() * 3)
			}
			w := make([]float32, Width)
			for i := range w {
				w[i] = float32(0.5 + rng.Float64())
			}
			mem := emu.NewMemory()
			args := []any{int32(rows), mem.Alloc("x", f32Bytes(x)), mem.Alloc("w", f32Bytes(w)), mem.Alloc("y", make([]byte, 4*len(x)))}
			if err := emu.RunKernel(res.Kernel, args, mem); err != nil {
				t.Fatalf("%s rows %d: %v", arch, rows, err)
			}
			got := mem.Bytes("y")
			want := Reference(x, w, rows)
			bad := 0
			for i, wv := range want {
				g := float64(math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:])))
				if d := math.Abs(g - wv); !(d <= Abs+Rel*math.Abs(wv)) {
					if bad < 5 {
						t.Errorf("%s rows %d (seed %d): y[%d] = %g, want %g", arch, rows, seed, i, g, wv)
					}
					bad++
				}
			}
			if bad > 0 {
				t.Fatalf("%s rows %d (seed %d): %d of %d elements outside tolerance", arch, rows, seed, bad, len(want))
			}
		}
	}
}

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}
