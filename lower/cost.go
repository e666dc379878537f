package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/target"
)

// versionString renders 78 as "7.8".
func versionString(v int) string { return fmt.Sprintf("%d.%d", v/10, v%10) }

// Feature minimum PTX versions per instruction family, from the PTX ISA notes
// (see shared/notes/ptx.md section 1). The emitter raises the module's version to
// the largest minimum among the instructions it wrote.
var featureVersion = map[string]int{
	"cvt.f32.bf16":   71,
	"cvt.e4m3":       78, // cvt.rn.f16x2.e4m3x2 on sm_90; sm_89 needs 8.1
	"cvt.e4m3.sm_89": 81,
	"griddepcontrol": 78, // sm_90 and later
}

// regBudget is the .maxnreg that keeps CTAsPerSM resident.
func regBudget(t target.Target, threads, smem, carried int) int {
	return min(target.RegsPerSM/(threads*t.CTAsPerSM(threads, smem, carried))/8*8, target.MaxRegBudget)
}
