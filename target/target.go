// Package target describes the GPU architectures ptxgen emits PTX for: their limits
// (shared memory, SMs), features, and the occupancy rule that both the kernel builders
// (kernels/) and the lowering (lower/) plan with.
package target

import (
	"fmt"
	"strconv"
	"strings"
)

// ID is a target's identity as PTX's .target names it: the compute capability and
// the suffix of architecture-specific code.
type ID struct {
	SM int // major*10 + minor: 80, 90, 120
	// Suffix is 0, 'a' (code for this exact chip, which may use its own features:
	// sm_90a's setmaxnreg and wgmma, sm_120a's block-scaled mma) or 'f' (code for the
	// chips of this family: same major version, same or later minor).
	Suffix byte
}

// MinSM and MaxSM bound the compute capabilities ParseID accepts: sm_80 (the first
// with bf16 mma.sync and cp.async) to sm_121.
const MinSM, MaxSM = 80, 121

// String is the PTX name: "sm_90", "sm_90a".
func (id ID) String() string {
	s := "sm_" + strconv.Itoa(id.SM)
	if id.Suffix != 0 {
		s += string(id.Suffix)
	}
	return s
}

// RunsOn reports whether code for id runs on a device of compute capability dev
// (major*10+minor): plain code on every later chip (the driver JIT-compiles PTX),
// 'a' code only on the chip it names, 'f' code on later chips of the same major.
func (id ID) RunsOn(dev int) bool {
	switch id.Suffix {
	case 'a':
		return id.SM == dev
	case 'f':
		return id.SM/10 == dev/10 && id.SM <= dev
	}
	return id.SM <= dev
}

// ParseID parses a target name, sm_NN with NN in MinSM..MaxSM, optionally followed by
// 'a' or 'f'. It is the one parser of target names: the lowering, the PTX validator
// and the runtime's choice of target all use it.
func ParseID(name string) (ID, error) {
	rest, ok := strings.CutPrefix(name, "sm_")
	var id ID
	if ok && rest != "" {
		if c := rest[len(rest)-1]; c == 'a' || c == 'f' {
			id.Suffix, rest = c, rest[:len(rest)-1]
		}
	}
	n, err := strconv.Atoi(rest)
	if !ok || err != nil || rest == "" || rest[0] < '1' || rest[0] > '9' || n < MinSM || n > MaxSM {
		return ID{}, fmt.Errorf("bad target %q: want sm_NN with NN in %d..%d, optionally followed by a or f (sm_90a)", name, MinSM, MaxSM)
	}
	id.SM = n
	return id, nil
}

// Target describes one GPU architecture ptxgen emits PTX for, and the limits it is
// planned under. Packages pass it as a value: only LookupTarget reads names.
type Target struct {
	Name string // "sm_90", "sm_90a": the PTX .target
	ID   ID     // Name, parsed
	// PlannedFor names the target whose limits these are when they are not Name's own
	// (WithLimitsOf, -plan-target); "" otherwise.
	PlannedFor string
	// MinVersion is the lowest PTX ISA version that accepts this .target, as
	// major*10+minor (7.8 = 78).
	MinVersion int
	// ArchVersion is the lowest PTX ISA version that accepts the architecture-specific
	// form (sm_90a: 8.0); 0 where the target has none.
	ArchVersion int
	// MaxSharedPerBlock is the dynamic shared memory a CTA may opt in to, in bytes.
	MaxSharedPerBlock int
	// SharedPerSM is the shared memory of one SM, which bounds resident CTAs.
	SharedPerSM int
	// SMs is the SM count launches are planned for: the target's typical part, or the
	// device's or -sms's (WithSMs). It is the only carrier of the SM count below the
	// launch plan (plan.Rule.SMs holds a count the user fixed).
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

// Targets lists the supported targets, oldest first. Those with an ArchVersion are
// also accepted in their architecture-specific form (sm_90a, sm_120a).
var Targets = []Target{
	{Name: "sm_80", ID: ID{SM: 80}, MinVersion: 70, MaxSharedPerBlock: 163 * 1024, SharedPerSM: 164 * 1024, SMs: 108, MaxThreadsPerSM: 2048, RegsPerSM: 65536},
	{Name: "sm_86", ID: ID{SM: 86}, MinVersion: 71, MaxSharedPerBlock: 99 * 1024, SharedPerSM: 100 * 1024, SMs: 84, MaxThreadsPerSM: 1536, RegsPerSM: 65536},
	{Name: "sm_89", ID: ID{SM: 89}, MinVersion: 78, MaxSharedPerBlock: 99 * 1024, SharedPerSM: 100 * 1024, SMs: 128, MaxThreadsPerSM: 1536, RegsPerSM: 65536, FP8Convert: true},
	{Name: "sm_90", ID: ID{SM: 90}, MinVersion: 78, ArchVersion: 80, MaxSharedPerBlock: 227 * 1024, SharedPerSM: 228 * 1024, SMs: 132, MaxThreadsPerSM: 2048, RegsPerSM: 65536, FP8Convert: true, GridDependency: true},
	{Name: "sm_120", ID: ID{SM: 120}, MinVersion: 87, ArchVersion: 87, MaxSharedPerBlock: 99 * 1024, SharedPerSM: 100 * 1024, SMs: 188, MaxThreadsPerSM: 1536, RegsPerSM: 65536, FP8Convert: true, GridDependency: true},
}

// WithLimitsOf returns t planned under p's limits: p's shared memory per block and
// per SM, threads and registers per SM and SM count, with t's name, PTX version and
// instruction features. Lowering it gives the kernel p would get (same tiling,
// register budget, shared-memory check), emitted for t: `-plan-target`, which lets
// an sm_90 GPU run the sm_120 plan.
func (t Target) WithLimitsOf(p Target) Target {
	t.MaxSharedPerBlock, t.SharedPerSM, t.SMs = p.MaxSharedPerBlock, p.SharedPerSM, p.SMs
	t.MaxThreadsPerSM, t.RegsPerSM = p.MaxThreadsPerSM, p.RegsPerSM
	t.PlannedFor = p.Name
	if p.Name == t.Name {
		t.PlannedFor = ""
	}
	return t
}

// WithSMs returns t planned for sms SMs; 0 keeps t's.
func (t Target) WithSMs(sms int) Target {
	if sms > 0 {
		t.SMs = sms
	}
	return t
}

// String names the target and, when planned under another's limits, that one:
// "sm_90 planned for sm_120".
func (t Target) String() string {
	if t.PlannedFor != "" {
		return t.Name + " planned for " + t.PlannedFor
	}
	return t.Name
}

// LookupTarget finds a target by name: one of Targets, or the architecture-specific
// form of one that has it.
func LookupTarget(name string) (Target, error) {
	id, err := ParseID(name)
	if err == nil {
		for _, t := range Targets {
			if t.ID.SM != id.SM {
				continue
			}
			switch {
			case id.Suffix == 0:
				return t, nil
			case id.Suffix == 'a' && t.ArchVersion > 0:
				t.Name, t.ID, t.MinVersion = name, id, max(t.MinVersion, t.ArchVersion)
				return t, nil
			}
		}
	}
	return Target{}, fmt.Errorf("unknown target %q: want one of %s", name, strings.Join(Names(), ", "))
}

// MustLookup is LookupTarget for names known to be valid (tests, built-in tables).
func MustLookup(name string) Target {
	t, err := LookupTarget(name)
	if err != nil {
		panic(err)
	}
	return t
}

// TargetNames returns the names of Targets, oldest first.
func TargetNames() []string {
	var s []string
	for _, t := range Targets {
		s = append(s, t.Name)
	}
	return s
}

// Names returns every name LookupTarget accepts, oldest first, each
// architecture-specific form after its target.
func Names() []string {
	var s []string
	for _, t := range Targets {
		s = append(s, t.Name)
		if t.ArchVersion > 0 {
			s = append(s, t.Name+"a")
		}
	}
	return s
}

// CUDA's grid limits on every architecture ptxgen targets: 2^31-1 CTAs in x, 65535 in
// y and z. ir.Verify and the runtime refuse larger grids, since such a kernel cannot be
// launched.
const MaxGridYZ = 65535

// MaxGrid is the largest grid extent per dimension.
var MaxGrid = [3]int{1<<31 - 1, MaxGridYZ, MaxGridYZ}

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

// SubPartitions is the SM's processing blocks (warp schedulers), each with a
// quarter of the register file: a CTA's warps are spread over them in turn, so a
// CTA of 9 or 10 warps puts 3 on some block and needs registers as if it had 12.
// Counted without it, a 10-warp CTA at 200 registers per thread failed to launch
// on the H200 (LaunchOutOfResources, run 42).
const SubPartitions = 4

// RegThreads is the threads a CTA of threads threads needs registers for: its
// warps rounded up to a multiple of SubPartitions.
func RegThreads(threads int) int {
	warps := (threads + 31) / 32
	return (warps + SubPartitions - 1) / SubPartitions * SubPartitions * 32
}

// CTAsPerSM is how many CTAs of threads threads, using smem bytes of shared memory
// and carrying carried registers of fragments in a loop (plus those of tiles
// replicated across warps), one SM of t holds at the register budget.
func (t Target) CTAsPerSM(threads, smem, carried int) int {
	need := min(max(carried+RegHeadroom, MinRegBudget), MaxRegBudget)
	ctas := min(t.RegsPerSM/(RegThreads(threads)*need), t.MaxThreadsPerSM/threads)
	if smem > 0 {
		ctas = min(ctas, t.SharedPerSM/smem)
	}
	return max(ctas, 1)
}

// LatencyBoundNum / LatencyBoundDen is the launch size, in waves of CTAs (CTAs /
// SMs), up to which a launch counts as latency-bound: plans then pick a family's Small
// kernels (replicated score tiles), and the lowering replicates the score tiles of a
// kernel that did not say which launches it is for (ir.LatencyAuto).
// Replicating everywhere made H=64 T=1 28.9 -> 14.7 us but H=64 T=64 99.7 -> 113 and
// T=256 318 -> 427 (docs/perf-notes.md v3); the launches that gained were at most
// 1.25 waves.
const LatencyBoundNum, LatencyBoundDen = 5, 4

// LatencyBound reports whether a launch of ctas CTAs on t's SMs is latency-bound.
func (t Target) LatencyBound(ctas int) bool {
	return LatencyBoundOn(ctas, t.SMs, LatencyBoundNum, LatencyBoundDen)
}

// LatencyBoundOn is the latency rule, its one statement: a launch of ctas CTAs on sms
// SMs is latency-bound when it is at most num/den waves of CTAs. Launch plans carry
// num and den as data (plan.Rule.SmallNum, SmallDen) so that other hosts apply the
// same numbers.
func LatencyBoundOn(ctas, sms, num, den int) bool { return den*ctas <= num*sms }
