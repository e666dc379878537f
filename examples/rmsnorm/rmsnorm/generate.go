// Package rmsnorm is an RMSNorm kernel of this module's own, written in ptxgen's IR text
// form (rmsnorm.ir): rows of 1024 f32, y = x / sqrt(mean(x^2) + 1e-6) * w, one row per
// CTA, as many rows as a call passes (up to 4096). rmsnorm_gen.go and the PTX files beside
// it are generated from rmsnorm.ir for RTX PRO 6000 / RTX 5090 (sm_120) and H100 / H200
// (sm_90): edit rmsnorm.ir and run `go generate ./...` from the module root.
package rmsnorm

//go:generate go tool ptxgen gen -from rmsnorm.ir -targets sm_120,sm_90 -pkg rmsnorm -o rmsnorm_gen.go

// Width and Eps are the constants rmsnorm.ir is written for (its const ops); Reference
// and the test read them, so a change to the IR shows up as a failing test until they
// follow.
const (
	Width = 1024
	Eps   = 1e-6
)
