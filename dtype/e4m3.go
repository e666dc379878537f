package dtype

import "math"

// E4M3 is an OCP float8 "e4m3fn" value stored as its bit pattern: 1 sign
// bit, 4 exponent bits (bias 7) and 3 mantissa bits. It has no infinities;
// S.1111.111 (0x7F, 0xFF) is NaN, the largest finite value is ±448
// (S.1111.110) and the smallest subnormal 2^-9.
type E4M3 uint8

// E4M3 bit patterns worth naming.
const (
	E4M3NaN       E4M3 = 0x7F // the only NaN (with sign bit 0)
	E4M3MaxFinite E4M3 = 0x7E // 448
)

// E4M3Max is the largest finite e4m3fn magnitude.
const E4M3Max = 448.0

// e4m3Values caches the 256 exact decodes: the emulator decodes in hot loops.
var e4m3Values = func() (t [256]float32) {
	for i := range t {
		t[i] = float32(decodeE4M3(E4M3(i)))
	}
	return t
}()

func decodeE4M3(e E4M3) float64 {
	exp := int(e >> 3 & 0xF)
	man := float64(e & 7)
	var v float64
	switch {
	case exp == 15 && e&7 == 7:
		v = math.NaN()
	case exp == 0:
		v = math.Ldexp(man, -9) // subnormal: m/8 * 2^-6
	default:
		v = math.Ldexp(8+man, exp-10) // (1 + m/8) * 2^(exp-7)
	}
	if e&0x80 != 0 {
		v = -v
	}
	return v
}

// F32 returns the value of e exactly; 0x7F and 0xFF give a NaN.
func (e E4M3) F32() float32 { return e4m3Values[e] }

// F64 returns the value of e exactly; 0x7F and 0xFF give a NaN.
func (e E4M3) F64() float64 { return float64(e4m3Values[e]) }

// IsNaN reports whether e is one of the two NaN patterns.
func (e E4M3) IsNaN() bool { return e&0x7F == 0x7F }

// E4M3FromF32 rounds f to e4m3fn as cvt.rn.satfinite.e4m3x2.f32 does:
// nearest, ties to even; a magnitude beyond 448 (including Inf) saturates to
// ±448; a NaN gives 0x7F with f's sign (0xFF for a negative NaN).
func E4M3FromF32(f float32) E4M3 { return E4M3FromF64(float64(f)) }

// E4M3FromF64 rounds x to e4m3fn in one step with the same rules as
// E4M3FromF32.
func E4M3FromF64(x float64) E4M3 {
	sign := E4M3(0)
	if math.Signbit(x) {
		sign = 0x80
	}
	a := math.Abs(x)
	switch {
	case math.IsNaN(x):
		return E4M3NaN | sign
	case a >= E4M3Max:
		// RNE alone would round (464, 480) up to the NaN pattern; satfinite
		// clamps everything past the largest finite value.
		return E4M3MaxFinite | sign
	case a < 0x1p-6:
		// Subnormals are multiples of 2^-9; n = 8 encodes the smallest normal,
		// so the carry needs no special case.
		return E4M3(math.RoundToEven(math.Ldexp(a, 9))) | sign
	}
	frac, exp := math.Frexp(a)            // a = frac * 2^exp, frac in [0.5, 1)
	n := int(math.RoundToEven(frac * 16)) // 8..16: 4 significant bits
	// The encoding is linear in (exponent, mantissa): n = 16 carries into the
	// next exponent by itself.
	return E4M3((exp-1+7)<<3+n-8) | sign
}
