package kernels_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/internal/ptxas"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/mla"
	"github.com/ptxgen/ptxgen/target"
)

// TestPrecisionValidated: the precision is one of its two names; anything else is
// refused naming -precision, the value and both names.
func TestPrecisionValidated(t *testing.T) {
	for _, p := range []kernels.MLAPrecision{kernels.PrecisionExact, kernels.PrecisionBF16P} {
		got, err := kernels.ParseMLAPrecision(p.String())
		if err != nil || got != p {
			t.Errorf("ParseMLAPrecision(%q) = %v, %v", p.String(), got, err)
		}
	}
	for _, s := range []string{"", "Exact", "bf16", "fp8"} {
		_, err := kernels.ParseMLAPrecision(s)
		var ce *kernels.ConfigError
		if !errors.As(err, &ce) || ce.Flag != "precision" || !strings.Contains(ce.Want, "exact") || !strings.Contains(ce.Want, "bf16p") {
			t.Errorf("ParseMLAPrecision(%q): %v", s, err)
		}
	}
	c := mlaDefault()
	c.Precision = 2
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "-precision MLAPrecision(2)") {
		t.Errorf("Validate with precision 2: %v", err)
	}
}

// TestPrecisionBF16PAssembles: the bf16p decode of the default shape and a
// 16-head split shape assembles with ptxas without warnings, spills or local
// memory on sm_80 and sm_90, as the exact goldens do (TestPTXAssembles).
func TestPrecisionBF16PAssembles(t *testing.T) {
	ptxas.Require(t)
	small := mlaDefault()
	small.H, small.Segments = 16, []mla.Segment{{K: 2048, PageSize: 64, HasLen: true}}
	for _, c := range []kernels.MLAConfig{mlaDefault(), small} {
		c.Precision = kernels.PrecisionBF16P
		for _, arch := range []string{"sm_80", "sm_90"} {
			p, err := kernels.MLA(c, target.MustLookup(arch))
			if err != nil {
				t.Fatal(err)
			}
			comp, err := lower.CompileProgram(p.Program, p.Sequences(), target.MustLookup(arch))
			if err != nil {
				t.Fatal(err)
			}
			res, err := ptxas.Assemble(comp.Module.Print(), arch)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Warnings) > 0 || res.SpillStores+res.SpillLoads+res.LocalBytes > 0 {
				t.Errorf("H=%d %s: warnings %q, spills %d+%d bytes, local %d bytes", c.H, arch, res.Warnings, res.SpillStores, res.SpillLoads, res.LocalBytes)
			}
		}
	}
}
