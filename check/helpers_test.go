package check

import (
	"errors"
	"fmt"
	"strings"

	"github.com/ptxgen/ptxgen/dtype"
	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/golden"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/ptx"
)

// Verdict kinds: how a run of a case ended.
const (
	verdictPass     = "pass"
	verdictMismatch = "numeric mismatch"
	verdictRace     = "emu: data race"
	verdictPending  = "emu: read of a pending cp.async byte"
	verdictOOB      = "emu: out of bounds"
	verdictAlign    = "emu: misaligned"
	verdictUninit   = "emu: uninitialized shared read"
	verdictDeadlock = "emu: deadlock"
	verdictBudget   = "emu: instruction budget"
	verdictReadOnly = "emu: read-only buffer written"
	verdictDecode   = "emu: decode error"
	verdictOther    = "emu: other error"
)

// verdict is the outcome of running a case in the emulator: its kind (one of the
// verdict constants) and the error or the failing comparison.
type verdict struct {
	kind   string
	detail string
}

// runEmu runs c in the emulator and classifies the outcome.
func runEmu(c *Case) verdict {
	res, err := Run(Emulator{}, c)
	if err != nil {
		return verdict{classifyEmuError(err), err.Error()}
	}
	if !res.OK() {
		return verdict{verdictMismatch, res.String()}
	}
	return verdict{verdictPass, res.String()}
}

// classifyEmuError names the emulator check behind err.
func classifyEmuError(err error) string {
	var de *emu.DecodeError
	if errors.As(err, &de) {
		return verdictDecode
	}
	msg := err.Error()
	var ee *emu.Error
	if errors.As(err, &ee) {
		msg = ee.Msg
	}
	switch {
	case strings.Contains(msg, "data race"):
		return verdictRace
	case strings.Contains(msg, "still pending"):
		return verdictPending
	case strings.Contains(msg, "out of bounds"):
		return verdictOOB
	case strings.Contains(msg, "misaligned"):
		return verdictAlign
	case strings.Contains(msg, "no thread of this CTA has written"):
		return verdictUninit
	case strings.Contains(msg, "deadlock"):
		return verdictDeadlock
	case strings.Contains(msg, "warp instructions executed"):
		return verdictBudget
	case strings.Contains(msg, "of read-only parameter"):
		return verdictReadOnly
	}
	return verdictOther
}

// withText returns a copy of c whose kernels run the module parsed from text, so
// that what runs is exactly what a user would ship as a .ptx file.
func withText(c *Case, text string) (*Case, error) {
	mod, err := ptx.Parse(text)
	if err != nil {
		return nil, err
	}
	comp := *c.Compiled
	comp.Module = mod
	comp.Kernels = nil
	for _, k := range c.Compiled.Kernels {
		k2 := *k
		k2.Module = mod
		comp.Kernels = append(comp.Kernels, &k2)
	}
	c2 := *c
	c2.Compiled = &comp
	return &c2, nil
}

// shortDetail keeps the first line of a verdict's detail, and for a numeric
// mismatch the summary lines, for test logs.
func shortDetail(v verdict) string {
	if v.kind != verdictMismatch {
		s, _, _ := strings.Cut(v.detail, "\n")
		return s
	}
	var keep []string
	for _, l := range strings.Split(v.detail, "\n") {
		if strings.Contains(l, "outside tol") || strings.Contains(l, "NaN in got") || strings.Contains(l, "elements, shape") {
			keep = append(keep, strings.TrimSpace(l))
		}
	}
	return fmt.Sprint(strings.Join(keep, "; "))
}

// gemmStrided is a gemm case whose A and B have row strides lda > K and ldb > N:
// golden.GenGemm fills the gaps with NaN, so a kernel that lets a byte outside
// the logical matrix reach an output produces NaN.
func gemmStrided(cfg kernels.GEMMConfig, target string, seed uint64, lda, ldb int) (*Case, error) {
	c, err := GEMM(cfg, target, seed)
	if err != nil {
		return nil, err
	}
	for _, p := range c.Compiled.Kernels[0].Params {
		for name, v := range map[string]int{"lda": lda, "ldb": ldb} {
			if p.Name == name && p.Align > 0 && v%p.Align != 0 {
				return nil, fmt.Errorf("%s = %d is not a multiple of %d, which the kernel assumes", name, v, p.Align)
			}
		}
	}
	gc := golden.GemmConfig{M: cfg.M, N: cfg.N, K: cfg.K, LDA: lda, LDB: ldb}
	a, b, err := golden.GenGemm(gc, seed)
	if err != nil {
		return nil, err
	}
	want, err := golden.Gemm(gc, a, b)
	if err != nil {
		return nil, err
	}
	c.Name = fmt.Sprintf("%s lda=%d ldb=%d", c.Name, lda, ldb)
	c.Buffers["a"], c.Buffers["b"] = bytesOf(a), bytesOf(b)
	c.Scalars["lda"], c.Scalars["ldb"] = int64(lda), int64(ldb)
	bf16Out := cfg.Out == ir.BF16
	tol := golden.GemmTolerance(cfg.K, 1, bf16Out)
	shape := []int{cfg.M, cfg.N}
	c.Compare = func(final map[string][]byte) []golden.Report {
		if bf16Out {
			got := make([]dtype.BF16, cfg.M*cfg.N)
			for i, u := range u16s(final["c"]) {
				got[i] = dtype.BF16(u)
			}
			return []golden.Report{golden.Compare("c", got, want, shape, tol)}
		}
		return []golden.Report{golden.Compare("c", f32s(final["c"]), want, shape, tol)}
	}
	return c, nil
}
