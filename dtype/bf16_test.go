package dtype

import (
	"math"
	"math/big"
	"runtime"
	"sync"
	"testing"
)

// TestBF16DecodeEncodeAll checks every one of the 65536 patterns: the decode
// is the upper half of a float32, and encoding the decode gives the pattern
// back (NaNs come back as the canonical NaN with their sign).
func TestBF16DecodeEncodeAll(t *testing.T) {
	for i := 0; i < 1<<16; i++ {
		b := BF16(i)
		f := b.F32()
		if got := math.Float32bits(f); got != uint32(i)<<16 {
			t.Fatalf("BF16(%#04x).F32() bits = %#08x, want %#08x", i, got, uint32(i)<<16)
		}
		if b.F64() != float64(f) && !b.IsNaN() {
			t.Fatalf("BF16(%#04x).F64() = %v, want %v", i, b.F64(), f)
		}
		want := b
		if b.IsNaN() {
			if !math.IsNaN(float64(f)) {
				t.Fatalf("BF16(%#04x).IsNaN() but F32() = %v", i, f)
			}
			want = BF16NaN | b&0x8000
		} else if math.IsNaN(float64(f)) {
			t.Fatalf("BF16(%#04x).F32() = NaN but IsNaN() is false", i)
		}
		if got := BF16FromF32(f); got != want {
			t.Fatalf("BF16FromF32(BF16(%#04x).F32()) = %#04x, want %#04x", i, got, want)
		}
		if got := BF16FromF64(b.F64()); got != want {
			t.Fatalf("BF16FromF64(BF16(%#04x).F64()) = %#04x, want %#04x", i, got, want)
		}
	}
}

// nextUp returns the next bfloat16 above the non-negative finite b as a float64,
// treating the step past the largest finite value as 2^128 (IEEE rounds as if
// the exponent range were unbounded, then overflows).
func bf16NextUp(b BF16) float64 {
	if b == BF16MaxFinite {
		return 0x1p128
	}
	return (b + 1).F64()
}

// TestBF16Ties builds, for every finite non-negative pattern b, the exact
// midpoint between b and the next value up, and checks the tie goes to the
// even one while a single bit of excess either way decides it. The float64
// cases include bits below float32 precision, which catch double rounding.
func TestBF16Ties(t *testing.T) {
	for i := 0; i < 0x7F80; i++ {
		lo := BF16(i)
		hi := lo + 1 // as bits; 0x7F80 is +Inf
		even := lo
		if lo&1 != 0 {
			even = hi
		}
		mid := (lo.F64() + bf16NextUp(lo)) / 2 // exact in float64
		for _, s := range []float64{1, -1} {
			sb := BF16(0)
			if s < 0 {
				sb = 0x8000
			}
			m := s * mid
			// float32 holds the midpoint exactly (it has 16 more bits).
			if got := BF16FromF32(float32(m)); got != even|sb {
				t.Fatalf("BF16FromF32(%v) = %#04x, want tie to even %#04x", m, got, even|sb)
			}
			if got := BF16FromF64(m); got != even|sb {
				t.Fatalf("BF16FromF64(%v) = %#04x, want tie to even %#04x", m, got, even|sb)
			}
			// One float32 ulp off the midpoint.
			m32 := math.Float32bits(float32(mid))
			above := s * float64(math.Float32frombits(m32+1))
			below := s * float64(math.Float32frombits(m32-1))
			if got := BF16FromF32(float32(above)); got != hi|sb {
				t.Fatalf("BF16FromF32(%v) = %#04x, want %#04x", above, got, hi|sb)
			}
			if got := BF16FromF32(float32(below)); got != lo|sb {
				t.Fatalf("BF16FromF32(%v) = %#04x, want %#04x", below, got, lo|sb)
			}
			// One float64 ulp off the midpoint: float32 cannot see it, so a
			// conversion through float32 would wrongly tie to even here.
			a64 := s * math.Nextafter(mid, math.Inf(1))
			b64 := s * math.Nextafter(mid, 0)
			if got := BF16FromF64(a64); got != hi|sb {
				t.Fatalf("BF16FromF64(%v) = %#04x, want %#04x", a64, got, hi|sb)
			}
			if got := BF16FromF64(b64); got != lo|sb {
				t.Fatalf("BF16FromF64(%v) = %#04x, want %#04x", b64, got, lo|sb)
			}
		}
	}
}

func TestBF16FromF64Edges(t *testing.T) {
	cases := []struct {
		x    float64
		want BF16
	}{
		{0, 0},
		{math.Copysign(0, -1), 0x8000},
		{1, 0x3F80},
		{-2, 0xC000},
		{math.Inf(1), 0x7F80},
		{math.Inf(-1), 0xFF80},
		{math.NaN(), 0x7FC0},
		{math.Copysign(math.NaN(), -1), 0xFFC0},
		{1e300, 0x7F80},  // far beyond float32
		{-1e300, 0xFF80}, //
		{5e-324, 0},      // smallest float64 subnormal rounds to zero
		{0x1p-134, 0},    // half the smallest bf16 subnormal: tie to even (0)
		{math.Nextafter(0x1p-134, 1), 1},
		{0x1p-133, 1},
		{3 * 0x1p-134, 2}, // tie between 1 and 2 ulps: even is 2
		{0x1p-126, 0x0080},
		{math.Nextafter(0x1p-126, 0), 0x0080}, // rounds up into the normals
		{0x1.FEp127, 0x7F7F},                  // max finite
		{0x1.FFp127, 0x7F80},                  // tie above max finite: odd 0x7F7F loses, overflow
		{math.Nextafter(0x1.FFp127, 0), 0x7F7F},
		{1 + 0x1p-8 + 0x1p-40, 0x3F81}, // double rounding trap: float32 drops 2^-40
	}
	for _, c := range cases {
		if got := BF16FromF64(c.x); got != c.want {
			t.Errorf("BF16FromF64(%v) = %#04x, want %#04x", c.x, got, c.want)
		}
	}
	// NaN payloads from float32 all map to the canonical NaN with sign.
	for _, u := range []uint32{0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0xFF800001, 0xFFFFFFFF} {
		want := BF16NaN | BF16(u>>16&0x8000)
		if got := BF16FromF32(math.Float32frombits(u)); got != want {
			t.Errorf("BF16FromF32(bits %#08x) = %#04x, want %#04x", u, got, want)
		}
	}
}

// refBF16FromF32 is an independent reference: it finds the two bfloat16
// neighbours of f and picks the nearer by comparing the distances (exact in
// float64), the even one on a tie.
func refBF16FromF32(f float32) BF16 {
	u := math.Float32bits(f)
	if math.IsNaN(float64(f)) {
		return BF16NaN | BF16(u>>16&0x8000)
	}
	sign := BF16(u >> 16 & 0x8000)
	lo := BF16(u>>16) &^ 0x8000 // truncation toward zero
	a := math.Abs(float64(f))
	if math.IsInf(a, 0) {
		return BF16Inf | sign
	}
	dlo := a - lo.F64()
	dhi := bf16NextUp(lo) - a
	switch {
	case dlo < dhi:
		return lo | sign
	case dlo > dhi:
		return (lo + 1) | sign
	case lo&1 == 0:
		return lo | sign
	default:
		return (lo + 1) | sign
	}
}

// TestBF16FromF32Sweep compares BF16FromF32 with the reference over all 2^32
// float32 patterns (a prime stride under -short), spread over the CPUs.
func TestBF16FromF32Sweep(t *testing.T) {
	stride := uint64(1)
	if testing.Short() {
		stride = 997 // prime: hits every residue of the low 16 bits
	}
	workers := runtime.GOMAXPROCS(0)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstBad []uint32
	chunk := uint64(1<<32) / uint64(workers)
	for w := 0; w < workers; w++ {
		start := uint64(w) * chunk
		end := start + chunk
		if w == workers-1 {
			end = 1 << 32
		}
		start += (stride - start%stride) % stride
		wg.Add(1)
		go func() {
			defer wg.Done()
			for u := start; u < end; u += stride {
				f := math.Float32frombits(uint32(u))
				if BF16FromF32(f) != refBF16FromF32(f) {
					mu.Lock()
					firstBad = append(firstBad, uint32(u))
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, u := range firstBad {
		f := math.Float32frombits(u)
		t.Errorf("BF16FromF32(bits %#08x = %v) = %#04x, reference %#04x", u, f, BF16FromF32(f), refBF16FromF32(f))
	}
}

// TestBF16FromF64Big checks BF16FromF64 against math/big rounding (8-bit
// precision, nearest even) on random float64 values in the normal bf16 range,
// which big.Float handles without the subnormal/overflow cases.
func TestBF16FromF64Big(t *testing.T) {
	var seed uint64 = 0x5eed_b16
	x := seed
	for i := 0; i < 200000; i++ {
		// splitmix64: cheap, deterministic bits.
		x += 0x9E3779B97F4A7C15
		z := x
		z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
		z = (z ^ z>>27) * 0x94D049BB133111EB
		z ^= z >> 31
		// Exponent in [-126, 127], random mantissa and sign.
		e := int(z>>52&0xFF) - 126
		if e > 127 {
			continue
		}
		v := math.Ldexp(1+float64(z&(1<<52-1))/(1<<52), e)
		if z>>63 != 0 {
			v = -v
		}
		r, _ := new(big.Float).SetMode(big.ToNearestEven).SetPrec(8).SetFloat64(v).Float64()
		want := BF16(math.Float32bits(float32(r)) >> 16)
		if math.Abs(r) >= 0x1p128 {
			want = BF16Inf | BF16(math.Float32bits(float32(v))>>16&0x8000)
		}
		if got := BF16FromF64(v); got != want {
			t.Fatalf("seed %#x: BF16FromF64(%v) = %#04x, want %#04x", seed, v, got, want)
		}
	}
}
