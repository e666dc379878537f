// Package target describes the GPU architectures ptxgen emits PTX for: their limits
// (shared memory, SMs), features, and the occupancy rule that both the kernel builders
// (kernels/) and the lowering (lower/) plan with.
package target

import (
	"fmt"
	"strings"
)

// Target describes one GPU architecture ptxgen emits PTX for.
type Target struct {
	Name string // "sm_90"
	// MinVersion is the lowest PTX ISA version that accepts this .target, as
	// major*10+minor (7.8 = 78).
	MinVersion int
	// MaxSharedPerBlock is the dynamic shared memory a CTA may opt in to, in bytes.
	MaxSharedPerBlock int
	// SharedPerSM is the shared memory of one SM, which bounds resident CTAs.
	SharedPerSM int
	// SMs is the default SM count used for split decisions (flag -sms overrides).
	SMs int
	// MaxThreadsPerSM and RegsPerSM bound the resident CTAs with SharedPerSM (CUDA
	// programming guide, table of compute capabilities).
	MaxThreadsPerSM int
	RegsPerSM       int
	// FP8Convert reports native cvt between e4m3x2 and f16x2 (sm_89 and later).
	FP8Convert bool
	// GridDependency reports griddepcontrol (programmatic dependent launch, sm_90 and
	// later): a kernel can start while the one before it finishes.
	GridDependency bool
}

// Targets lists the supported targets, oldest first.
var Targets = []Target{
	{Name: "sm_80", MinVersion: 70, MaxSharedPerBlock: 163 * 1024, SharedPerSM: 164 * 1024, SMs: 108, MaxThreadsPerSM: 2048, RegsPerSM: 65536},
	{Name: "sm_86", MinVersion: 71, MaxSharedPerBlock: 99 * 1024, SharedPerSM: 100 * 1024, SMs: 84, MaxThreadsPerSM: 1536, RegsPerSM: 65536},
	{Name: "sm_89", MinVersion: 78, MaxSharedPerBlock: 99 * 1024, SharedPerSM: 100 * 1024, SMs: 128, MaxThreadsPerSM: 1536, RegsPerSM: 65536, FP8Convert: true},
	{Name: "sm_90", MinVersion: 78, MaxSharedPerBlock: 227 * 1024, SharedPerSM: 228 * 1024, SMs: 132, MaxThreadsPerSM: 2048, RegsPerSM: 65536, FP8Convert: true, GridDependency: true},
	{Name: "sm_120", MinVersion: 87, MaxSharedPerBlock: 99 * 1024, SharedPerSM: 100 * 1024, SMs: 188, MaxThreadsPerSM: 1536, RegsPerSM: 65536, FP8Convert: true, GridDependency: true},
}

// WithLimitsOf returns t planned under p's limits: p's shared memory per block and
// per SM, threads and registers per SM and SM count, with t's name, PTX version and
// instruction features. Lowering it gives the kernel p would get (same tiling,
// register budget, shared-memory check), emitted for t: `-plan-target`, which lets
// an sm_90 GPU run the sm_120 plan.
func (t Target) WithLimitsOf(p Target) Target {
	t.MaxSharedPerBlock, t.SharedPerSM, t.SMs = p.MaxSharedPerBlock, p.SharedPerSM, p.SMs
	t.MaxThreadsPerSM, t.RegsPerSM = p.MaxThreadsPerSM, p.RegsPerSM
	return t
}

// PlanSep joins an emitted target and a planning target in one target name:
// "sm_90@sm_120" is sm_90 code planned under sm_120's limits (WithLimitsOf).
const PlanSep = "@"

// LookupTarget finds a target by name.
func LookupTarget(name string) (Target, error) {
	if emit, plan, ok := strings.Cut(name, PlanSep); ok {
		e, err := LookupTarget(emit)
		if err != nil || strings.Contains(plan, PlanSep) {
			return Target{}, fmt.Errorf("unknown target %q: want one of %s, optionally followed by %s and the target to plan for", name, strings.Join(TargetNames(), ", "), PlanSep)
		}
		p, err := LookupTarget(plan)
		if err != nil {
			return Target{}, err
		}
		return e.WithLimitsOf(p), nil
	}
	for _, t := range Targets {
		if t.Name == name {
			return t, nil
		}
	}
	return Target{}, fmt.Errorf("unknown target %q: want one of %s", name, strings.Join(TargetNames(), ", "))
}

// TargetNames returns the target names, oldest first.
func TargetNames() []string {
	var s []string
	for _, t := range Targets {
		s = append(s, t.Name)
	}
	return s
}

// Register budget. ptxas left to itself sometimes caps a kernel at 128
// registers for occupancy and spills a few bytes; the generator instead sets
// .maxnreg so that registers never cost the CTAs per SM that shared memory
// allows, yet leave room for the kernel's loop-carried fragments plus
// RegHeadroom for everything else (fragments being loaded, addresses, softmax
// state): the headroom at which mla_decode's variants assemble without spills
// (ptxas 11.8 and CUDA 13). With 100, the default decode gets 168 registers and
// three CTAs per SM on sm_90 (v5 in docs/perf-notes.md).
const (
	RegHeadroom  = 100
	MinRegBudget = 128
	MaxRegBudget = 255
)

// LatencyBoundNum / LatencyBoundDen is the launch size, in waves of CTAs (CTAs /
// SMs), up to which a launch counts as latency-bound: the lowering then replicates
// score tiles across warps, and launch plans pick kernels built that way (Small).
// Replicating everywhere made H=64 T=1 28.9 -> 14.7 us but H=64 T=64 99.7 -> 113 and
// T=256 318 -> 427 (docs/perf-notes.md v3); the launches that gained were at most
// 1.25 waves.
const LatencyBoundNum, LatencyBoundDen = 5, 4

// CTAsPerSM is how many CTAs of threads threads, using smem bytes of shared memory
// and carrying carried registers of fragments in a loop (plus those of tiles
// replicated across warps), one SM of t holds at the register budget.
func (t Target) CTAsPerSM(threads, smem, carried int) int {
	need := min(max(carried+RegHeadroom, MinRegBudget), MaxRegBudget)
	ctas := min(t.RegsPerSM/(threads*need), t.MaxThreadsPerSM/threads)
	if smem > 0 {
		ctas = min(ctas, t.SharedPerSM/smem)
	}
	return max(ctas, 1)
}
