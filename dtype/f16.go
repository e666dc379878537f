package dtype

import "github.com/x448/float16"

// F16 is an IEEE binary16 value stored as its bit pattern.
type F16 uint16

// F32 returns the value of h exactly.
func (h F16) F32() float32 { return float16.Frombits(uint16(h)).Float32() }

// F64 returns the value of h exactly.
func (h F16) F64() float64 { return float64(h.F32()) }

// F16FromF32 rounds f to the nearest binary16, ties to even, as
// cvt.rn.f16.f32 does (overflow to ±Inf, NaN stays NaN).
func F16FromF32(f float32) F16 { return F16(float16.Fromfloat32(f).Bits()) }

// F16 returns e as a binary16. It is exact: every e4m3fn value fits in
// binary16, which is why PTX converts e4m3x2 to f16x2.
func (e E4M3) F16() F16 { return F16FromF32(e.F32()) }
