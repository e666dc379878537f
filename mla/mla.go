// Package mla holds the shape of a DeepSeek-V4 sparse MLA decode call
// (shared/spec/dsv4-sparse-mla-decode.md): the one description that the kernel
// generator (kernels.MLAConfig) and the float64 reference (golden.MLAConfig) both
// embed. It is plain data and imports nothing of the module, so that the generator
// does not depend on the reference nor the reference on the generator.
package mla

import "math"

// Shape is what a decode call computes: for each query row t and head h, softmax
// attention over the union of the candidates that one or two index lists
// (segments) select from paged KV caches, where V is the same vector as K.
type Shape struct {
	T int // query rows of the call: the one dump and check show or run, and the reference computes
	H int // query heads; all share one KV head
	// MaxT is the capacity: the most rows a call of the generated kernels may have.
	// The rows are a run-time argument (0..MaxT); generation plans the split, head
	// block and tile and sizes the workspace for MaxT rows. 0 means T. The
	// reference computes T rows and does not read it.
	MaxT int
	Nope int // dims of the quantized part of K/V (fp8ds: 448)
	Rope int // dims of the bf16 rope part of K/V (fp8ds: 64)
	// Cache is the layout of the KV caches.
	Cache CacheFormat
	Sink  bool // a per-head f32 attention sink is given
	// Scale is the softmax scale; 0 means 1/sqrt(Nope+Rope) (1/sqrt(512) for
	// DeepSeek-V4, the value the shared test vectors use).
	Scale float64
	// Segments are the candidate lists that feed one softmax: segment 0 the
	// sliding window, segment 1 (optional) the compressed cache.
	Segments []Segment
}

// Segment is one candidate list: K candidates per row into a cache of PageSize
// tokens per page; HasLen adds a per-row valid-prefix length.
type Segment struct {
	K        int  // candidates per row
	PageSize int  // tokens per page (B)
	HasLen   bool // a per-row valid-prefix length is given
}

// CacheFormat names a KV cache layout (spec section 4).
type CacheFormat string

// The cache layouts the decode reads.
const (
	// CacheFP8DS is FlashMLA's fp8_ds_mla layout for Nope=448, Rope=64: per
	// page, B records of 576 bytes (448 e4m3 nope values, then 64 bf16 rope
	// values), then B scale blocks of 8 bytes (7 UE8M0 exponents, one per 64
	// nope dims, and a padding byte): 584 bytes per token.
	CacheFP8DS CacheFormat = "fp8ds"
	// CacheBF16 is a plain [pages, B, Nope+Rope] bf16 layout.
	CacheBF16 CacheFormat = "bf16"
)

// fp8ds layout constants (spec section 4).
const (
	FP8DSNope        = 448 // e4m3 dims per token
	FP8DSRope        = 64  // bf16 dims per token
	FP8DSRecordBytes = 576 // nope bytes + rope bytes
	FP8DSScaleBytes  = 8   // 7 exponents + 1 padding byte
	FP8DSTokenBytes  = FP8DSRecordBytes + FP8DSScaleBytes
	FP8DSScaleBlock  = 64 // nope dims covered by one scale exponent
)

// D is the K/V width, Nope+Rope.
func (s Shape) D() int { return s.Nope + s.Rope }

// Capacity is the most rows a call may have: MaxT, or T when MaxT is 0.
func (s Shape) Capacity() int {
	if s.MaxT > 0 {
		return s.MaxT
	}
	return s.T
}

// SoftmaxScale is the scale applied to q·k: Scale, or 1/sqrt(D) when it is 0.
func (s Shape) SoftmaxScale() float64 {
	if s.Scale != 0 {
		return s.Scale
	}
	return 1 / math.Sqrt(float64(s.D()))
}

// PageBytes is the bytes one cache page of pageSize tokens holds: fp8ds records
// then their scales, or bf16 rows of D. It is the smallest page stride.
func (s Shape) PageBytes(pageSize int) int64 {
	if s.Cache == CacheBF16 {
		return int64(pageSize) * int64(s.D()) * 2
	}
	return int64(pageSize) * FP8DSTokenBytes
}
