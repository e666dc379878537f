package lower

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/target"
)

// rolesCase is one warp-specialized matmul: y[m x n] = a[m x k] times the
// dequantized b (e4m3 times a scale, rounded to bf16), k walked in chunks by a
// loop split by roles: a "load" role copies the chunk of a and dequantizes the
// chunk of b into shared memory, an "mma" role multiplies them.
type rolesCase struct {
	m, n, k, chunk, stages int
	mmaWarps, loadWarps    int
	loadFirst              bool // the load role takes the CTA's first warps
}

func (c rolesCase) String() string {
	return fmt.Sprintf("m%d_n%d_k%d_c%d_s%d_mma%d_load%d_first%v", c.m, c.n, c.k, c.chunk, c.stages, c.mmaWarps, c.loadWarps, c.loadFirst)
}

func rolesMatmul(c rolesCase) *ir.Builder {
	b := ir.NewBuilder("roles_matmul")
	a := b.Param("a", ir.PtrTo(ir.BF16), 16, int64(2*c.m*c.k))
	bq := b.Param("bq", ir.PtrTo(ir.E4M3), 16, int64(c.k*c.n))
	y := f32Param(b, "y", c.m*c.n)
	scale := b.Param("scale", ir.ScalarOf(ir.F32), 0, 0)
	b.SetWarps(c.mmaWarps + c.loadWarps)
	if c.loadFirst {
		b.DeclareRole("load", 0, c.loadWarps)
		b.DeclareRole("mma", c.loadWarps, c.mmaWarps)
	} else {
		b.DeclareRole("mma", 0, c.mmaWarps)
		b.DeclareRole("load", c.mmaWarps, c.loadWarps)
	}
	rows := b.Cast(b.Iota(c.m), ir.I64)
	acc := b.ConstFloat(0, ir.TileOf(ir.F32, c.m, c.n))
	res := b.ForStages(b.I32(0), b.I32(int64(c.k/c.chunk)), 1, c.stages, []*ir.Value{acc}, func(j *ir.Value, carried []*ir.Value) []*ir.Value {
		var at, bt *ir.Value
		b.OnRole("load", func() {
			k0 := b.Cast(b.Mul(j, b.I32(int64(c.chunk))), ir.I64)
			at = b.Load2(a, b.Mul(rows, b.I64(int64(c.k))), k0, c.chunk, nil, nil)
			brows := b.Mul(b.Add(b.Cast(b.Iota(c.chunk), ir.I64), k0), b.I64(int64(c.n)))
			raw := b.Load2(bq, brows, b.I64(0), c.n, nil, nil)
			bt = b.Cast(b.Mul(b.Cast(raw, ir.F32), scale), ir.BF16)
		})
		var next *ir.Value
		b.OnRole("mma", func() { next = b.Dot(at, bt, carried[0]) })
		return []*ir.Value{next}
	})
	b.OnRole("mma", func() {
		b.Store2(y, b.Mul(rows, b.I64(int64(c.n))), b.I64(0), nil, nil, res[0])
	})
	return b
}

// rolesInputs are seeded random a (bf16) and b (e4m3) and the float64 product
// of a with b dequantized as the kernel does.
func rolesInputs(c rolesCase, seed uint64, scale float32) (map[string][]byte, []float64) {
	rng := rand.New(rand.NewPCG(seed, 21))
	ab, av := randomBF16(rng, c.m*c.k, 1)
	bb := make([]byte, c.k*c.n)
	bv := make([]float64, c.k*c.n)
	for i := range bb {
		e := dtype.E4M3FromF64(rng.NormFloat64() * 4)
		bb[i] = byte(e)
		bv[i] = dtype.BF16FromF32(e.F32() * scale).F64()
	}
	want := make([]float64, c.m*c.n)
	for i := 0; i < c.m; i++ {
		for j := 0; j < c.n; j++ {
			for l := 0; l < c.k; l++ {
				want[i*c.n+j] += av[i*c.k+l] * bv[l*c.n+j]
			}
		}
	}
	return map[string][]byte{"a": ab, "bq": bb, "y": make([]byte, 4*c.m*c.n)}, want
}

var rolesCases = []rolesCase{
	{64, 64, 256, 64, 2, 4, 2, false},
	{64, 64, 256, 64, 2, 4, 2, true},
	{32, 64, 192, 64, 1, 2, 1, false},
	{64, 32, 320, 64, 3, 4, 4, true},
	{16, 64, 128, 32, 2, 1, 1, false},
}

// TestRolesMatmul: the warp-specialized matmul in the emulator against float64,
// with the producer before and after the consumer among the CTA's warps, rings of
// 1 to 3 slots and as many iterations as slots or more.
func TestRolesMatmul(t *testing.T) {
	for i, c := range rolesCases {
		t.Run(c.String(), func(t *testing.T) {
			seed := uint64(2100 + i)
			bufs, want := rolesInputs(c, seed, 0.25)
			got, pk := runUserKernelOn(t, rolesMatmul(c), target.MustLookup("sm_90"), bufs, map[string]float32{"scale": 0.25})
			compare(t, "roles matmul", seed, got, want, 1e-4, 1e-5)
			text := pk.Module.Print()
			// The roles synchronize on their own barriers, never on the CTA's
			// inside the loop: one bar.sync 0 where they rejoin after it.
			if n := strings.Count(text, "bar.sync 0;"); n != 1 {
				t.Errorf("%d CTA-wide barriers, want 1 (after the loop)", n)
			}
			if !strings.Contains(text, "bar.arrive") {
				t.Errorf("no bar.arrive: the ring is not handed over")
			}
		})
	}
}
