package decision

import "github.com/ptxgen/ptxgen/ir"

// LoopPipeline is what the pipeline pass decided for one loop.
type LoopPipeline struct {
	Loop   *ir.Op
	Stages int
	// Tiles are the rank-2 loads of the body issued ahead, in body order.
	Tiles []*ir.Value
	// Deps are the body's scalar ops the tiles' addresses need, in body order: the
	// emitter re-evaluates them with the induction variable of the iteration it
	// issues.
	Deps []*ir.Op
	// Reads are the shared arrays, defined before the loop, that the tiles'
	// addresses read (a staged index tile): made visible once, before the
	// prologue, so that no wait or barrier lands in a stage's guarded branch.
	Reads []*ir.Value
	// Ahead is how many iterations before its tiles the loop issues its Indices
	// (0: it has none). Index tile j is issued with tile j-Ahead (in the prologue's
	// first Ahead groups alone) into slot j mod (Stages+Ahead) of its own ring, and
	// read by tile j's address math and by iteration j's body: an iteration then
	// waits until at most min(Stages-2, Ahead-1) groups are in flight.
	Ahead int
	// Indices are the index tiles: the rank-1 loads of the body (staged, 4-byte
	// elements) whose values the tiles' addresses read, in body order.
	Indices []*ir.Value
	// IndexDeps are the body's scalar ops the indices' own addresses need, in body
	// order, re-evaluated as Deps are for the iteration whose indices are issued.
	IndexDeps []*ir.Op
	// Handoff marks the ring of a loop split by roles (roles.go): its tiles are
	// written by the producer role in the iteration that reads them, not issued
	// ahead; slots are handed over with named barriers.
	Handoff            bool
	Producer, Consumer string
}

// PipelineRecord is what the pipeline pass decided.
type PipelineRecord struct {
	// Pipelines are the pipelined loops' decisions, by loop; PipeTile maps each
	// tile issued ahead to its loop's; notPipelined says why a load of a
	// pipelined loop (or the loop) is not.
	Pipelines    map[*ir.Op]*LoopPipeline
	ByTile       map[*ir.Value]*LoopPipeline
	ByIndex      map[*ir.Value]*LoopPipeline // each index tile's loop
	NotPipelined map[*ir.Op]string
}

// LayoutRecord is what the layout pass decided.
type LayoutRecord struct {
	// Layouts places every value defined in the kernel (shared homes without
	// offset or pitch: smem places them).
	Layouts map[*ir.Value]Layout
	// SplitK maps each dot whose reduction is split across the warps of its row
	// group to that warp count; SplitPartial marks the split dots' results that
	// only feed the next split dot's accumulator, so they stay per-warp partial
	// sums: the others are all-reduced where the dot is emitted.
	SplitK       map[*ir.Op]int
	SplitPartial map[*ir.Value]bool
	// HeldA maps each loop to the dots of its body that hold their loop-invariant
	// A operand in registers across it (`a regs`: holdOperands), in body order.
	HeldA map[*ir.Op][]*ir.Op
	// ReduceSources is, for each reduction, the split it reads its operand in
	// (reduceSource on the final layouts).
	ReduceSources map[*ir.Op]Layout
}

// StageRecord is what the stage pass decided: staged maps each tile it gives a
// shared home besides its layout to that home, without offset or pitch (smem
// places it).
type StageRecord struct {
	Staged map[*ir.Value]Layout
}

// RoleRecord is what the roles pass decided: handoffs are the split loops'
// rings, by loop; handoffTile maps each tile handed off to its loop's ring. (The
// role computing each value is no decision but a fact of the kernel, f.roleOf,
// which legalize and layout need before this pass: valueRoles.)
type RoleRecord struct {
	Handoffs    map[*ir.Op]*LoopPipeline
	HandoffTile map[*ir.Value]*LoopPipeline
}

// SmemRecord is what the smem pass decided. It places the shared homes layout
// and stage gave without changing their records: homes holds each placed home
// (a shared layout, a transposed view of one, a staged home) with its offset,
// pitch and swizzle, which f.SharedHome and f.placed read.
type SmemRecord struct {
	Homes     map[*ir.Value]Layout
	Scratch   map[*ir.Value]int // offset of a cross-warp reduction's or split dot's scratch
	Aliases   map[*ir.Value][]*ir.Value
	SlotBytes map[*LoopPipeline]int // a ring's distance between slots: slot s of tile t is at t's offset + s x SlotBytes
	// IndexSlotBytes is an index tile's distance between the slots of its ring
	// (LoopPipeline.Indices): slot s is at its offset + s x IndexSlotBytes.
	IndexSlotBytes map[*ir.Value]int
	SmemBytes      int // dynamic shared memory bytes
}

// BudgetRecord is what the budget pass decided: the kernel's register budget and
// the width of each copy into shared memory and of each tile store. Measure reports it (Figures) and the
// emitter writes it, so the plan and the PTX never hold two copies of the rule.
type BudgetRecord struct {
	Threads int
	// CarriedRegs are the registers per thread that loop-carried fragments hold
	// (CarriedRegs) and A fragments held across a loop (heldRegs), from which the
	// budget is set.
	CarriedRegs int
	// MaxNReg is the .maxnreg: the most registers per thread that keep CTAsPerSM
	// CTAs resident (regBudget), the CTAs per SM shared memory allows.
	MaxNReg, CTAsPerSM int
	// CopyBytes is, for each rank-2 load into shared memory, the bytes one copy
	// moves: 16, 8 or 4 (a cp.async chunk: the widest every row start is aligned
	// to), or less (the rows' alignment; element copies through registers).
	CopyBytes map[*ir.Op]int
	// StoreBytes is, for each store of a rank-2 tile held in mma fragments or
	// written from shared memory or per element, the bytes one st.global writes:
	// a fragment row's two adjacent elements together (2 x the element) or one;
	// a 16-byte run of a row, or one element.
	StoreBytes map[*ir.Op]int
	// StageRun is, for each recomputed rank-2 tile staged in shared memory, the
	// elements a thread computes and writes together: 16 bytes of a row where the
	// row length allows (one vector store), else 1.
	StageRun map[*ir.Value]int
}

// ScheduleRecord is what the schedule pass decided: DotGroups maps the first op
// of each fused dot group to its ops.
type ScheduleRecord struct {
	DotGroups map[*ir.Op][]*ir.Op
}

// InFlight is how many cp.async groups an iteration of the pipelined loop leaves in
// flight when it starts: its own tile's group must be complete (Stages-2 issued after
// it), and so must the group that brought the indices of the tile it issues (Ahead-1
// issued after that one).
func (p *LoopPipeline) InFlight() int {
	switch {
	case len(p.Tiles) == 0: // one stage: only the indices of this iteration's own loads
		return p.Ahead - 1
	case p.Ahead > 0:
		return min(p.Stages-2, p.Ahead-1)
	}
	return p.Stages - 2
}

// IndexSlots is the number of slots of each index tile's ring: index tile j is
// written Stages-1+Ahead iterations before iteration j, whose body reads it last.
func (p *LoopPipeline) IndexSlots() int { return p.Stages + p.Ahead }
