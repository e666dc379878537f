package dtype

import (
	"math"
	"testing"
)

// formulaE4M3 decodes from the OCP definition, written independently of the
// package code: (-1)^s * 2^(1-7) * m/8 for e = 0, (-1)^s * 2^(e-7) * (1+m/8)
// otherwise, NaN for S.1111.111.
func formulaE4M3(b uint8) float64 {
	s, e, m := b>>7, int(b>>3&15), float64(b&7)
	if e == 15 && m == 7 {
		return math.NaN()
	}
	v := math.Pow(2, float64(e-7)) * (1 + m/8)
	if e == 0 {
		v = math.Pow(2, -6) * (m / 8)
	}
	if s == 1 {
		return -v
	}
	return v
}

func TestE4M3All(t *testing.T) {
	finite := 0
	for i := 0; i < 256; i++ {
		e := E4M3(i)
		want := formulaE4M3(uint8(i))
		got := e.F64()
		if math.IsNaN(want) {
			if !math.IsNaN(got) || !math.IsNaN(float64(e.F32())) || !e.IsNaN() {
				t.Errorf("E4M3(%#02x) = %v (IsNaN %v), want NaN", i, got, e.IsNaN())
			}
			if r := E4M3FromF32(e.F32()); r != E4M3(i) {
				t.Errorf("E4M3FromF32(NaN from %#02x) = %#02x, want %#02x", i, r, i)
			}
			continue
		}
		finite++
		if e.IsNaN() {
			t.Errorf("E4M3(%#02x).IsNaN() = true", i)
		}
		if got != want || math.Signbit(got) != math.Signbit(want) || float64(e.F32()) != want {
			t.Errorf("E4M3(%#02x) = %v / %v, want %v", i, got, e.F32(), want)
		}
		if r := E4M3FromF32(e.F32()); r != e {
			t.Errorf("E4M3FromF32(%v) = %#02x, want %#02x", got, r, i)
		}
		if r := E4M3FromF64(got); r != e {
			t.Errorf("E4M3FromF64(%v) = %#02x, want %#02x", got, r, i)
		}
		if h := e.F16(); h.F64() != want {
			t.Errorf("E4M3(%#02x).F16() = %v, want %v", i, h.F64(), want)
		}
	}
	if finite != 254 {
		t.Errorf("%d finite patterns, want 254", finite)
	}
	if E4M3(0x7E).F64() != 448 || E4M3(0x01).F64() != 0x1p-9 || E4M3(0x08).F64() != 0x1p-6 {
		t.Errorf("landmarks: max %v, min subnormal %v, min normal %v", E4M3(0x7E).F64(), E4M3(0x01).F64(), E4M3(0x08).F64())
	}
}

// TestE4M3Ties checks rounding at and around the midpoint of every pair of
// adjacent non-negative finite values (0x00..0x7E), both signs.
func TestE4M3Ties(t *testing.T) {
	for i := 0; i < 0x7E; i++ {
		lo, hi := E4M3(i), E4M3(i+1)
		even := lo
		if i&1 != 0 {
			even = hi
		}
		mid := (lo.F64() + hi.F64()) / 2
		for _, neg := range []bool{false, true} {
			s, sb := 1.0, E4M3(0)
			if neg {
				s, sb = -1, 0x80
			}
			check := func(x float64, want E4M3) {
				t.Helper()
				if got := E4M3FromF32(float32(x)); got != want {
					t.Errorf("E4M3FromF32(%v) = %#02x, want %#02x", x, got, want)
				}
				if got := E4M3FromF64(x); got != want {
					t.Errorf("E4M3FromF64(%v) = %#02x, want %#02x", x, got, want)
				}
			}
			check(s*mid, even|sb)
			m32 := math.Float32bits(float32(mid))
			check(s*float64(math.Float32frombits(m32+1)), hi|sb)
			check(s*float64(math.Float32frombits(m32-1)), lo|sb)
			if got := E4M3FromF64(s * math.Nextafter(mid, math.Inf(1))); got != hi|sb {
				t.Errorf("E4M3FromF64(just above %v) = %#02x, want %#02x", s*mid, got, hi|sb)
			}
		}
	}
}

func TestE4M3Saturate(t *testing.T) {
	cases := []struct {
		x    float64
		want E4M3
	}{
		{448, 0x7E},
		{449, 0x7E},
		{464, 0x7E}, // midpoint to the (non-existent) 480: RNE would pick the NaN pattern
		{479.9, 0x7E},
		{480, 0x7E},
		{1e30, 0x7E},
		{math.Inf(1), 0x7E},
		{math.Inf(-1), 0xFE},
		{-500, 0xFE},
		{math.NaN(), 0x7F},
		{math.Copysign(math.NaN(), -1), 0xFF},
		{0, 0x00},
		{math.Copysign(0, -1), 0x80},
		{0x1p-10, 0x00}, // half the smallest subnormal: ties to 0
		{0x1p-10 * 3, 0x02},
		{1e-30, 0x00},
		{-1e-30, 0x80},
		{0.5 * (0x1p-6 - 0x1p-9 + 0x1p-6), 0x08}, // tie between 7/8*2^-6 (odd) and 2^-6
	}
	for _, c := range cases {
		if got := E4M3FromF64(c.x); got != c.want {
			t.Errorf("E4M3FromF64(%v) = %#02x, want %#02x", c.x, got, c.want)
		}
		if got := E4M3FromF32(float32(c.x)); got != c.want {
			t.Errorf("E4M3FromF32(%v) = %#02x, want %#02x", c.x, got, c.want)
		}
	}
}
