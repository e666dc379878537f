// Package golden holds what ptxgen's kernels are judged against: float64
// reference implementations of the tile GEMM and the DeepSeek-V4 sparse MLA
// decode (spec/dsv4-sparse-mla-decode.md section 5), seeded input generators,
// error metrics with the spec's thresholds, the loader for the shared
// independent test vectors, and golden output files that pin the generators
// and references against unintended change.
//
// The references compute in float64 from the exact values of the bf16/e4m3
// inputs and return unrounded float64 outputs; RoundBF16 and RoundF32 give
// what a kernel's output format can hold.
package golden
