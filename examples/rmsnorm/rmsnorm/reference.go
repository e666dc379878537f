package rmsnorm

import "math"

// Reference is the float64 RMSNorm of rows x Width values x with weights w (Width):
// what the kernel computes, in float64.
func Reference(x, w []float32, rows int) []float64 {
	y := make([]float64, rows*Width)
	for r := 0; r < rows; r++ {
		row := x[r*Width : (r+1)*Width]
		ss := 0.0
		for _, v := range row {
			ss += float64(v) * float64(v)
		}
		s := 1 / math.Sqrt(ss/Width+Eps)
		for j, v := range row {
			y[r*Width+j] = float64(v) * s * float64(w[j])
		}
	}
	return y
}

// Tolerance is the bound the test and the GPU run hold the kernel to, per element:
// |got - want| <= Abs + Rel*|want|. The kernel sums 1024 squares in f32 (a relative
// error of a few 1e-7 x log2(1024)) and takes rsqrt.approx.f32 (2^-22.9 relative).
const (
	Abs = 1e-6
	Rel = 2e-6
)
