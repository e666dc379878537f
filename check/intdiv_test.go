package check

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower"
)

// TestIntDivRem: i32 division and remainder by constants truncate toward zero as
// in Go (and PTX div.s32), for negative dividends too. Powers of two are lowered
// to shifts, other divisors to a multiplication by a magic reciprocal; both must
// agree with Go, at the extremes of i32 too.
func TestIntDivRem(t *testing.T) {
	const n = 256
	x := []int32{math.MinInt32, math.MinInt32 + 1, -65, -64, -63, -2, -1, 0, 1, 2, 63, 64, 65, math.MaxInt32 - 1, math.MaxInt32}
	seed := uint64(7)
	rng := rand.New(rand.NewPCG(seed, 1))
	for len(x) < n {
		x = append(x, int32(rng.Uint32()))
	}
	for _, d := range []int32{2, 64, 256, 1 << 30, 3, 7, 53, 100, 576, 641, 1<<30 + 1, math.MaxInt32} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			b := ir.NewBuilder("divrem")
			b.SetGrid(1, 1, 1)
			b.SetWarps(4)
			i32 := ir.PtrTo(ir.I32)
			px, pq, pr := b.Param("x", i32, 4, 4*n), b.Param("q", i32, 4, 4*n), b.Param("r", i32, 4, 4*n)
			rows := b.Cast(b.Iota(n), ir.I64)
			v := b.Load1(px, rows, nil)
			b.Store1(pq, rows, nil, b.Div(v, b.I32(int64(d))))
			b.Store1(pr, rows, nil, b.Rem(v, b.I32(int64(d))))
			k, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			comp, err := lower.CompileProgram(&ir.Program{Name: "divrem", Kernels: []*ir.Kernel{k}}, "sm_90")
			if err != nil {
				t.Fatal(err)
			}
			in := make([]byte, 4*n)
			wantQ, wantR := make([]float64, n), make([]float64, n)
			for i, xi := range x {
				binary.LittleEndian.PutUint32(in[4*i:], uint32(xi))
				wantQ[i], wantR[i] = float64(xi/d), float64(xi%d)
			}
			c := &Case{
				Name:     fmt.Sprintf("divrem d=%d seed=%d", d, seed),
				Compiled: comp,
				Buffers:  map[string][]byte{"x": in, "q": poison(4 * n), "r": poison(4 * n)},
			}
			c.Compare = func(final map[string][]byte) []golden.Report {
				return []golden.Report{
					golden.Compare("q", i32s(final["q"]), wantQ, nil, golden.Tolerance{}),
					golden.Compare("r", i32s(final["r"]), wantR, nil, golden.Tolerance{}),
				}
			}
			passesInEmulator(t, c)
		})
	}
}

func i32s(b []byte) []float64 {
	out := make([]float64, len(b)/4)
	for i := range out {
		out[i] = float64(int32(binary.LittleEndian.Uint32(b[4*i:])))
	}
	return out
}

// TestInt64DivRemPow2: i64 division and remainder by powers of two are shifts
// (div.s64 became a call to a 64-bit division routine per gathered candidate);
// they must truncate toward zero like div.s64. Other i64 divisors stay div.s64.
func TestInt64DivRemPow2(t *testing.T) {
	const n = 256
	x := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 40, -65, -64, -63, -2, -1, 0, 1, 2, 63, 64, 65, 1 << 40, math.MaxInt64 - 1, math.MaxInt64}
	seed := uint64(11)
	rng := rand.New(rand.NewPCG(seed, 1))
	for len(x) < n {
		x = append(x, rng.Int64N(1<<41)-1<<40)
	}
	for _, d := range []int64{2, 64, 1 << 30, 3} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			b := ir.NewBuilder("divrem64")
			b.SetGrid(1, 1, 1)
			b.SetWarps(4)
			i64 := ir.PtrTo(ir.I64)
			px, pq, pr := b.Param("x", i64, 8, 8*n), b.Param("q", i64, 8, 8*n), b.Param("r", i64, 8, 8*n)
			rows := b.Cast(b.Iota(n), ir.I64)
			v := b.Load1(px, rows, nil)
			b.Store1(pq, rows, nil, b.Div(v, b.I64(d)))
			b.Store1(pr, rows, nil, b.Rem(v, b.I64(d)))
			k, err := b.Finish()
			if err != nil {
				t.Fatal(err)
			}
			comp, err := lower.CompileProgram(&ir.Program{Name: "divrem64", Kernels: []*ir.Kernel{k}}, "sm_90")
			if err != nil {
				t.Fatal(err)
			}
			if pow2 := d&(d-1) == 0; pow2 == strings.Contains(comp.Module.Print(), "div.s64") {
				t.Errorf("d=%d: div.s64 in the PTX is %v, want %v", d, !pow2, !pow2)
			}
			in := make([]byte, 8*n)
			wantQ, wantR := make([]float64, n), make([]float64, n)
			for i, xi := range x {
				binary.LittleEndian.PutUint64(in[8*i:], uint64(xi))
				wantQ[i], wantR[i] = float64(xi/d), float64(xi%d)
			}
			c := &Case{
				Name:     fmt.Sprintf("divrem64 d=%d seed=%d", d, seed),
				Compiled: comp,
				Buffers:  map[string][]byte{"x": in, "q": poison(8 * n), "r": poison(8 * n)},
			}
			c.Compare = func(final map[string][]byte) []golden.Report {
				return []golden.Report{
					golden.Compare("q", i64s(final["q"]), wantQ, nil, golden.Tolerance{}),
					golden.Compare("r", i64s(final["r"]), wantR, nil, golden.Tolerance{}),
				}
			}
			passesInEmulator(t, c)
		})
	}
}

// i64s reads little-endian int64s as float64 (exact below 2^53, where the test's
// remainders and most quotients are).
func i64s(b []byte) []float64 {
	out := make([]float64, len(b)/8)
	for i := range out {
		out[i] = float64(int64(binary.LittleEndian.Uint64(b[8*i:])))
	}
	return out
}
