package lower

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/ir"
)

// dequantDots stages k = cast<bf16>(cast<f32>(raw e4m3) * 2^(e-127)) (e the first
// scale byte of each row, the fp8ds form) as the B operand of four dots whose A
// tiles are one-hot: y[j][i][n] = k[n][16j + i], each element read back exactly.
func dequantDots() *ir.Builder {
	b := ir.NewBuilder("dequant_dots")
	a := b.Param("a", ir.PtrTo(ir.BF16), 16, 2*64*64)
	k := b.Param("k", ir.PtrTo(ir.E4M3), 16, 32*64)
	s := b.Param("s", ir.PtrTo(ir.U8), 16, 32*8)
	y := f32Param(b, "y", 4*16*32)
	b.SetWarps(4)
	b.SetGrid(1, 1, 1)
	b.SetLatency(ir.LatencyLarge)
	r32 := b.Cast(b.Iota(32), ir.I64)
	raw := b.Load2(k, b.Mul(r32, b.I64(64)), b.I64(0), 64, nil, nil)
	sc := b.Load2(s, b.Mul(r32, b.I64(8)), b.I64(0), 8, nil, nil)
	f := b.Bitcast(b.Shl(b.Cast(b.Column(sc, 0), ir.I32), b.I32(23)), ir.F32)
	kb := b.Cast(b.Mul(b.Cast(raw, ir.F32), b.Broadcast(f, 1, 32, 64)), ir.BF16)
	r16 := b.Cast(b.Iota(16), ir.I64)
	for j := 0; j < 4; j++ {
		aj := b.Load2(a, b.Mul(b.Add(r16, b.I64(int64(16*j))), b.I64(64)), b.I64(0), 64, nil, nil)
		d := b.Dot(aj, b.Trans(kb), b.ConstFloat(0, ir.TileOf(ir.F32, 16, 32)))
		b.Store2(y, b.Mul(b.Add(r16, b.I64(int64(16*j))), b.I64(32)), b.I64(0), nil, nil, d)
	}
	return b
}

// TestPow2DequantExact: the integer dequantization (sm_90: prmt, shl, and,
// mul.rn.bf16x2) gives, bit for bit, what the f32 path rounds (the IR's meaning),
// for every non-NaN e4m3 byte at scale exponents 0 (factor 0) to 134; a warp
// whose rows hold larger exponents takes the f32 path by a vote, and is exact too.
func TestPow2DequantExact(t *testing.T) {
	for _, c := range []struct {
		name string
		exps []uint8 // row r gets exps[r/4]; warp w stages rows 4w..4w+3 and 16+4w..16+4w+3
	}{
		{"fast", []uint8{0, 1, 2, 7, 100, 120, 127, 134}},
		{"mixed", []uint8{1, 127, 200, 135, 120, 134, 140, 240}}, // warps 0, 1 fast; 2, 3 by f32
	} {
		t.Run(c.name, func(t *testing.T) {
			seed := uint64(len(c.name))
			rng := rand.New(rand.NewPCG(seed, 3))
			raw := make([]byte, 32*64)
			for i := range raw {
				v := byte(i % 256)
				if dtype.E4M3(v).IsNaN() {
					v = byte(rng.IntN(0x7f)) // NaN only in invalid slots (spec): no exact value to match
				}
				raw[i] = v
			}
			rng.Shuffle(len(raw), func(i, j int) { raw[i], raw[j] = raw[j], raw[i] })
			sc := make([]byte, 32*8)
			exp := make([]uint8, 32)
			for r := range exp {
				exp[r] = c.exps[r/4]
				sc[8*r] = exp[r]
			}
			a := make([]byte, 2*64*64)
			for i := 0; i < 64; i++ {
				binary.LittleEndian.PutUint16(a[2*(64*i+i):], uint16(dtype.BF16FromF64(1)))
			}
			b := dequantDots()
			got, pk := runUserKernelBytes(t, b, "sm_90", map[string][]byte{"a": a, "k": raw, "s": sc, "y": make([]byte, 4*4*16*32)}, nil)
			if !strings.Contains(pk.Module.Print(), "vote.sync.any.pred") {
				t.Fatalf("the integer path was not generated")
			}
			bad := 0
			for n := 0; n < 32; n++ {
				factor := math.Float32frombits(uint32(exp[n]) << 23)
				for d := 0; d < 64; d++ {
					x := dtype.E4M3(raw[64*n+d]).F32()
					want := dtype.BF16FromF32(x * factor).F32()
					g := got[32*d+n]
					if math.Float32bits(g) != math.Float32bits(want) && !(g == 0 && want == 0) {
						if bad < 5 {
							t.Errorf("row %d (e %d) byte %#02x: got %g (%#08x), want %g", n, exp[n], raw[64*n+d], g, math.Float32bits(g), want)
						}
						bad++
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d elements differ", bad, 32*64)
			}
		})
	}
}
