package check

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/ptx"
	arch "github.com/ptxgen/ptxgen/target"
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

// passesInEmulator runs c in the emulator and fails t on an emulator error (fatal,
// naming the case and its seed) or on an output outside its tolerance.
func passesInEmulator(t *testing.T, c *Case) {
	t.Helper()
	res, err := Run(Emulator{}, c)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK() {
		t.Errorf("%s", res)
	}
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

// tgt is the target named name.
func tgt(name string) arch.Target { return arch.MustLookup(name) }
