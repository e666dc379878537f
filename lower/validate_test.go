package lower

import (
	"strings"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/target"
)

// TestCompileProgramValidates: CompileProgram refuses PTX that ptx.ValidateModule
// refuses even with the pass checks off (as gen runs), naming the instruction. The
// invalid PTX comes from a target whose GridDependency flag claims griddepcontrol on
// sm_89, which Forms say needs sm_90.
func TestCompileProgramValidates(t *testing.T) {
	defer func(c bool) { CheckPasses = c }(CheckPasses)
	CheckPasses = false
	p := &ir.Program{Name: "two", Kernels: []*ir.Kernel{tinyKernel(t, 16), tinyKernel(t, 16)}}
	if _, err := CompileProgram(p, nil, target.MustLookup("sm_89")); err != nil {
		t.Fatalf("sm_89 as it is: %v", err)
	}
	wrong := target.MustLookup("sm_89")
	wrong.GridDependency = true
	_, err := CompileProgram(p, nil, wrong)
	if err == nil || !strings.Contains(err.Error(), "griddepcontrol.launch_dependents needs sm_90 or later (target sm_89)") {
		t.Errorf("error %v, want the validator's refusal of griddepcontrol.launch_dependents on sm_89", err)
	}
}
