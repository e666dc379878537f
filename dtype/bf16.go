package dtype

import "math"

// BF16 is a bfloat16 value stored as its bit pattern: 1 sign bit, 8 exponent
// bits (bias 127, as float32) and 7 mantissa bits. It is the upper half of a
// float32.
type BF16 uint16

// BF16NaN is the canonical quiet NaN the encoders in this package produce
// (with the input's sign bit added). PTX leaves the NaN bits of
// cvt.rn.bf16.f32 unspecified, so callers must compare NaN-ness, not bits.
const BF16NaN BF16 = 0x7FC0

// BF16 bit patterns worth naming.
const (
	BF16Inf       BF16 = 0x7F80 // +Inf
	BF16MaxFinite BF16 = 0x7F7F // 3.3895314e38
)

// F32 returns the value of b exactly (bfloat16 is a truncated float32).
// A NaN stays a NaN with its payload.
func (b BF16) F32() float32 { return math.Float32frombits(uint32(b) << 16) }

// F64 returns the value of b exactly.
func (b BF16) F64() float64 { return float64(b.F32()) }

// IsNaN reports whether b is a NaN.
func (b BF16) IsNaN() bool { return b&0x7FFF > 0x7F80 }

// BF16FromF32 rounds f to the nearest bfloat16, ties to even, as
// cvt.rn.bf16.f32 does: overflow gives ±Inf, subnormals are kept (no flush),
// and a NaN becomes BF16NaN with f's sign.
func BF16FromF32(f float32) BF16 {
	u := math.Float32bits(f)
	if u&0x7FFFFFFF > 0x7F800000 {
		return BF16NaN | BF16(u>>16&0x8000)
	}
	// Adding 0x7FFF plus the lowest kept bit carries into bit 16 exactly when
	// the dropped half is above one half ulp, or equal to it and the kept
	// part is odd. A carry out of the largest finite value lands on Inf.
	u += 0x7FFF + (u >> 16 & 1)
	return BF16(u >> 16)
}

// BF16FromF64 rounds x to the nearest bfloat16, ties to even, in one step
// (going through float32 would round twice and can miss a tie-breaking bit).
// Overflow gives ±Inf; a NaN becomes BF16NaN with x's sign.
func BF16FromF64(x float64) BF16 {
	sign := BF16(0)
	if math.Signbit(x) {
		sign = 0x8000
	}
	a := math.Abs(x)
	switch {
	case math.IsNaN(x):
		return BF16NaN | sign
	case a == 0:
		return sign
	}
	var r float64
	if a < 0x1p-126 {
		// Subnormal bfloat16: a fixed grid of 2^-133. Scaling by a power of two
		// is exact here, and so is RoundToEven of a float64.
		r = math.Ldexp(math.RoundToEven(math.Ldexp(a, 133)), -133)
	} else {
		// a = frac * 2^exp with frac in [0.5, 1): keep 8 significant bits.
		frac, exp := math.Frexp(a)
		r = math.Ldexp(math.RoundToEven(frac*256), exp-8)
	}
	if r >= 0x1p128 {
		return BF16Inf | sign
	}
	// r is a bfloat16 value, so float32(r) is exact and has 16 zero low bits.
	return BF16(math.Float32bits(float32(r))>>16) | sign
}
