package mla

import (
	"math"
	"testing"
)

// TestShapeDefaults holds the zero-value defaults both the generator and the
// reference read: Capacity (MaxT 0 means T), SoftmaxScale (0 means 1/sqrt(D)) and
// PageBytes (the smallest page stride of each cache format).
func TestShapeDefaults(t *testing.T) {
	fp8 := Shape{T: 3, H: 64, Nope: FP8DSNope, Rope: FP8DSRope, Cache: CacheFP8DS}
	if got := fp8.Capacity(); got != 3 {
		t.Errorf("Capacity with MaxT 0 = %d, want T = 3", got)
	}
	fp8.MaxT = 8
	if got := fp8.Capacity(); got != 8 {
		t.Errorf("Capacity with MaxT 8 = %d, want 8", got)
	}
	if got, want := fp8.SoftmaxScale(), 1/math.Sqrt(512); got != want {
		t.Errorf("SoftmaxScale with Scale 0 = %v, want 1/sqrt(512) = %v", got, want)
	}
	fp8.Scale = 0.25
	if got := fp8.SoftmaxScale(); got != 0.25 {
		t.Errorf("SoftmaxScale with Scale 0.25 = %v", got)
	}
	if got := fp8.PageBytes(64); got != 64*584 {
		t.Errorf("fp8ds PageBytes(64) = %d, want 64 tokens x 584 bytes = %d", got, 64*584)
	}
	bf := Shape{Nope: 200, Rope: 40, Cache: CacheBF16}
	if got := bf.PageBytes(3); got != 3*240*2 {
		t.Errorf("bf16 PageBytes(3) with D = 240 = %d, want %d", got, 3*240*2)
	}
	// Pages past 2^31 bytes: int64 throughout.
	if got := bf.PageBytes(1 << 24); got != int64(1<<24)*480 {
		t.Errorf("bf16 PageBytes(2^24) = %d, want %d", got, int64(1<<24)*480)
	}
}
