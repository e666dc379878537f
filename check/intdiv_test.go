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
	x := []int64{math.MinInt32, math.MinInt32 + 1, -65, -64, -63, -2, -1, 0, 1, 2, 63, 64, 65, math.MaxInt32 - 1, math.MaxInt32}
	const seed = 7
	rng := rand.New(rand.NewPCG(seed, 1))
	for len(x) < divRemN {
		x = append(x, int64(int32(rng.Uint32())))
	}
	for _, d := range []int64{2, 64, 256, 1 << 30, 3, 7, 53, 100, 576, 641, 1<<30 + 1, math.MaxInt32} {
		t.Run(fmt.Sprint(d), func(t *testing.T) { checkDivRem(t, ir.I32, x, d, seed) })
	}
}

// TestInt64DivRemPow2: i64 division and remainder by powers of two are shifts
// (div.s64 became a call to a 64-bit division routine per gathered candidate);
// they must truncate toward zero like div.s64. Other i64 divisors stay div.s64.
func TestInt64DivRemPow2(t *testing.T) {
	x := []int64{math.MinInt64, math.MinInt64 + 1, -1 << 40, -65, -64, -63, -2, -1, 0, 1, 2, 63, 64, 65, 1 << 40, math.MaxInt64 - 1, math.MaxInt64}
	const seed = 11
	rng := rand.New(rand.NewPCG(seed, 1))
	for len(x) < divRemN {
		x = append(x, rng.Int64N(1<<41)-1<<40)
	}
	for _, d := range []int64{2, 64, 1 << 30, 3} {
		t.Run(fmt.Sprint(d), func(t *testing.T) {
			comp := checkDivRem(t, ir.I64, x, d, seed)
			if pow2 := d&(d-1) == 0; pow2 == strings.Contains(comp.Module.Print(), "div.s64") {
				t.Errorf("d=%d: div.s64 in the PTX is %v, want %v", d, !pow2, !pow2)
			}
		})
	}
}

const divRemN = 256

// checkDivRem runs q = x / d and r = x % d over x (elem i32 or i64) in the
// emulator and compares them with Go's, exactly. Results are compared as float64:
// exact for i32, and for i64 below 2^53, where the remainders and most quotients
// of the i64 test are.
func checkDivRem(t *testing.T, elem ir.Elem, x []int64, d int64, seed uint64) *lower.Compiled {
	t.Helper()
	size := elem.Size()
	b := ir.NewBuilder("divrem")
	b.SetGrid(1, 1, 1)
	b.SetWarps(4)
	p := ir.PtrTo(elem)
	n := int64(len(x))
	px, pq, pr := b.Param("x", p, size, int64(size)*n), b.Param("q", p, size, int64(size)*n), b.Param("r", p, size, int64(size)*n)
	rows := b.Cast(b.Iota(len(x)), ir.I64)
	v := b.Load1(px, rows, nil)
	dv := b.I32(d)
	if elem == ir.I64 {
		dv = b.I64(d)
	}
	b.Store1(pq, rows, nil, b.Div(v, dv))
	b.Store1(pr, rows, nil, b.Rem(v, dv))
	k, err := b.Finish()
	if err != nil {
		t.Fatal(err)
	}
	comp, err := lower.CompileProgram(&ir.Program{Name: "divrem", Kernels: []*ir.Kernel{k}}, nil, tgt("sm_90"))
	if err != nil {
		t.Fatal(err)
	}
	in := make([]byte, size*len(x))
	wantQ, wantR := make([]float64, len(x)), make([]float64, len(x))
	for i, xi := range x {
		if elem == ir.I32 {
			binary.LittleEndian.PutUint32(in[4*i:], uint32(xi))
			wantQ[i], wantR[i] = float64(int32(xi)/int32(d)), float64(int32(xi)%int32(d))
		} else {
			binary.LittleEndian.PutUint64(in[8*i:], uint64(xi))
			wantQ[i], wantR[i] = float64(xi/d), float64(xi%d)
		}
	}
	c := &Case{
		Name:     fmt.Sprintf("divrem %s d=%d seed=%d", elem, d, seed),
		Compiled: comp,
		Buffers:  map[string][]byte{"x": in, "q": poison(int64(size * len(x))), "r": poison(int64(size * len(x)))},
	}
	c.Compare = func(final map[string][]byte) []golden.Report {
		return []golden.Report{
			golden.Compare("q", ints(final["q"], size), wantQ, nil, golden.Tolerance{}),
			golden.Compare("r", ints(final["r"], size), wantR, nil, golden.Tolerance{}),
		}
	}
	passesInEmulator(t, c)
	return comp
}

// ints reads little-endian signed integers of size bytes as float64.
func ints(b []byte, size int) []float64 {
	out := make([]float64, len(b)/size)
	for i := range out {
		if size == 4 {
			out[i] = float64(int32(binary.LittleEndian.Uint32(b[4*i:])))
		} else {
			out[i] = float64(int64(binary.LittleEndian.Uint64(b[8*i:])))
		}
	}
	return out
}
