package dtype

import (
	"math"
	"testing"
)

func TestF16(t *testing.T) {
	// Every finite binary16 pattern decodes to the formula value and encodes
	// back to itself.
	for i := 0; i < 1<<16; i++ {
		h := F16(i)
		e, m := i>>10&31, float64(i&1023)
		if e == 31 {
			if m == 0 != math.IsInf(h.F64(), 0) || m != 0 != math.IsNaN(h.F64()) {
				t.Fatalf("F16(%#04x) = %v", i, h.F64())
			}
			continue
		}
		want := math.Ldexp(1+m/1024, e-15)
		if e == 0 {
			want = math.Ldexp(m/1024, -14)
		}
		if i&0x8000 != 0 {
			want = -want
		}
		if h.F64() != want || math.Signbit(h.F64()) != math.Signbit(want) {
			t.Fatalf("F16(%#04x) = %v, want %v", i, h.F64(), want)
		}
		if got := F16FromF32(h.F32()); got != h {
			t.Fatalf("F16FromF32(%v) = %#04x, want %#04x", want, got, i)
		}
	}
	// Ties to even: 1 + 2^-11 lies halfway between 1 and 1 + 2^-10.
	if got := F16FromF32(1 + 0x1p-11); got != 0x3C00 {
		t.Errorf("F16FromF32(1+2^-11) = %#04x, want 0x3c00", got)
	}
	if got := F16FromF32(1 + 3*0x1p-11); got != 0x3C02 {
		t.Errorf("F16FromF32(1+3*2^-11) = %#04x, want 0x3c02", got)
	}
	if got := F16FromF32(70000); got != 0x7C00 {
		t.Errorf("F16FromF32(70000) = %#04x, want +Inf 0x7c00", got)
	}
}
