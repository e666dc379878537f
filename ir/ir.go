package ir

import (
	"fmt"
	"slices"
	"strings"
)

// Kernel is one GPU kernel: typed parameters, a launch grid, a CTA size in warps,
// and a body.
type Kernel struct {
	Name   string
	Params []*Param
	Grid   [3]int // CTAs per dimension, each in 1..target.MaxGrid[i]
	// GridParam binds grid dimensions to a run-time value: where GridParam[d] names an
	// i32 parameter, a launch's extent in d is that argument's value and Grid[d] is the
	// largest value accepted. The first bound dimension is the rows of the call
	// (RowsParam; 0 launches nothing; its extent is the capacity the kernel was
	// generated for); another may be bound to the split (the parameter marked
	// Param.Split), the number of candidate chunks the launcher's plan chose. "" keeps
	// Grid[d].
	GridParam [3]string
	Warps     int // warps per CTA
	// Latency tells the lowering whether the kernel's launches are latency-bound (a
	// wave or so of CTAs). LatencyAuto judges from Grid, which for a grid bound to
	// run-time values is only the largest launch; builders of kernels that a launch
	// plan picks for small or large launches say which.
	Latency Latency
	// Roles name disjoint ranges of the CTA's warps (DESIGN.md, warp roles); an op
	// placed on a role (Op.Role) runs on those warps only.
	Roles []Role
	Body  *Block
}

// Role is a named range of a CTA's warps: First .. First+Warps-1.
type Role struct {
	Name         string
	First, Warps int
}

// Role returns the role named name, or false.
func (k *Kernel) Role(name string) (Role, bool) {
	for _, r := range k.Roles {
		if r.Name == name {
			return r, true
		}
	}
	return Role{}, false
}

// Latency is a kernel's launch-size class (Kernel.Latency).
type Latency int

const (
	LatencyAuto  Latency = iota // from the grid
	LatencySmall                // launches of about a wave: latency-bound
	LatencyLarge                // launches of several waves
)

// RowsParam is the parameter the first bound grid dimension names ("" when the grid
// is fixed).
func (k *Kernel) RowsParam() string {
	for _, n := range k.GridParam {
		if n != "" {
			return n
		}
	}
	return ""
}

// Param is a kernel parameter. Pointers and 32/64-bit scalars only.
type Param struct {
	Value *Value
	// Div is what the generated code may assume about the parameter: for a pointer,
	// its address is a multiple of Div bytes; for an integer scalar, the value is a
	// multiple of Div. Launchers check it. 0 and 1 both mean "nothing".
	Div int
	// Bytes is, for a pointer, the minimum size of the buffer the kernel may touch,
	// as computed by the kernel's author (0 = unknown). Launchers check it.
	Bytes int64
	// PerRow is, for a pointer, what the minimum size grows by per row of the call:
	// the buffer must hold Bytes + PerRow * rows bytes, rows being the value of the
	// kernel's RowsParam. 0 for buffers whose size does not depend on the rows.
	PerRow int64
	// PerPart is, for a pointer, what the minimum size grows by per (row, chunk) pair:
	// the buffer must hold PerPart * rows * split more bytes, split being the value of
	// the kernel's split parameter.
	PerPart int64
	// Split marks the i32 parameter that holds the split: the number of chunks per row
	// a launch runs across CTAs (a launch plan's choice, or the caller's). It binds the
	// grid dimension after the rows, and PerPart sizes grow with it. The flag, not the
	// name, makes it the split: any parameter may be called "split".
	Split bool
	// Run and Strides say, for a pointer addressed through stride parameters, what the
	// kernel may touch: Run contiguous elements at each position, the positions
	// stepping by each of Strides (inner first) over its count. Launchers bound those
	// parameters by the buffer (ptx.KParam.CheckStrides). Run 0: no strides.
	Run     int64
	Strides []StrideDim
}

// SplitParam is the kernel's parameter marked Split, nil without one.
func (k *Kernel) SplitParam() *Param {
	for _, p := range k.Params {
		if p.Split {
			return p
		}
	}
	return nil
}

// StrideDim is one strided dimension of a pointer parameter: Count positions, Stride
// elements apart, Stride naming an integer parameter. Where CountParam names an i32
// parameter the count is its value divided by CountDiv, rounded up, instead.
type StrideDim struct {
	Stride     string
	Count      int64
	CountParam string
	CountDiv   int64
}

// Value is an SSA value: a kernel parameter, a block argument or an op result.
type Value struct {
	Name string // without the leading %
	Type Type
	Def  *Op // nil for parameters and block arguments
}

func (v *Value) String() string { return "%" + v.Name }

// Block is a list of ops with arguments (for loop bodies: the induction variable, then
// the loop-carried values) and the values it yields to its parent.
type Block struct {
	Args  []*Value
	Ops   []*Op
	Yield []*Value
}

// OpKind names an operation.
type OpKind string

// Operations. See the Builder for each op's operands and typing rules.
const (
	OpProgramID OpKind = "program_id" // Int = axis; result i32
	OpConst     OpKind = "const"      // Float or Int holds the value; scalar or splat tile
	OpIota      OpKind = "iota"       // result tile<N x i32> = 0..N-1
	OpAdd       OpKind = "add"
	OpSub       OpKind = "sub"
	OpMul       OpKind = "mul"
	OpDiv       OpKind = "div" // integer division truncates; float division is exact-rounded
	OpRem       OpKind = "rem"
	OpMax       OpKind = "max" // floats: NaN-ignoring
	OpMin       OpKind = "min"
	OpAnd       OpKind = "and"
	OpOr        OpKind = "or"
	OpXor       OpKind = "xor"
	OpShl       OpKind = "shl"
	OpShr       OpKind = "shr" // arithmetic for i32/i64, logical for u8
	OpExp2      OpKind = "exp2"
	OpLog2      OpKind = "log2"
	OpRcp       OpKind = "rcp"   // approximate 1/x (within 1 ulp), as exp2 and log2 are approximate
	OpSqrt      OpKind = "sqrt"  // IEEE square root, correctly rounded (sqrt.rn.f32)
	OpRsqrt     OpKind = "rsqrt" // approximate 1/sqrt(x) (rsqrt.approx.f32, relative error 2^-22.9)
	OpExp       OpKind = "exp"   // e^x as exp2(x * log2 e): ex2.approx.f32 (2 ulp) of the rounded product
	OpLog       OpKind = "log"   // ln x as log2(x) * ln 2: lg2.approx.f32 (2^-22.6 absolute), then one rounding
	OpNeg       OpKind = "neg"
	OpCmp       OpKind = "cmp"     // Pred names the comparison; result i1
	OpSelect    OpKind = "select"  // select c, a, b = c ? a : b
	OpCast      OpKind = "cast"    // value conversion (rounds to nearest even)
	OpBitcast   OpKind = "bitcast" // reinterpretation, same element size; on pointers it changes the element type
	OpBroadcast OpKind = "broadcast"
	OpReduce    OpKind = "reduce" // Pred is "max" or "sum"; Int = axis
	OpDot       OpKind = "dot"    // dot a, b, c = c + a·b with fp32 accumulation
	OpTrans     OpKind = "trans"
	OpColumn    OpKind = "column" // column x, c: the rank-1 tile x[:, c]
	OpSlice     OpKind = "slice"  // slice x, s, n: the rank-1 tile x[s : s+n] (s a scalar i32)
	OpLoad      OpKind = "load"
	OpStore     OpKind = "store"
	OpFor       OpKind = "for"
)

// Comparison predicates for OpCmp.
const (
	CmpLT = "lt"
	CmpLE = "le"
	CmpGT = "gt"
	CmpGE = "ge"
	CmpEQ = "eq"
	CmpNE = "ne"
)

// Op is one operation.
//
// Memory ops address a pointer with element offsets:
//   - rank-1 load:  load p[offs] mask(m)            result[i] = m[i] ? p[offs[i]] : 0
//   - rank-2 load:  load p[rows, col0] mask(m, n)   result[i][j] = m[i] && j < n ? p[rows[i]+col0+j] : 0
//
// The rows operand makes dense tiles (rows = r0*stride + iota*stride) and row
// gathers through an index tile (rows = idx*stride) the same op. Masks are optional
// and masked-off elements are never read. Stores take the same addressing with the
// value as the last operand; masked-off elements are not written.
type Op struct {
	Kind    OpKind
	Args    []*Value
	Results []*Value
	Int     int64   // axis, iota length, integer constant, loop step
	Float   float64 // float constant
	Pred    string  // comparison or reduction kind
	// Masked records which optional mask operands a load or store has.
	HasMask, HasBound bool
	Body              *Block // loop body (OpFor)
	// Stages asks the lowering to pipeline a loop (OpFor) over that many stages:
	// the loads it can stage ahead are issued Stages-1 iterations before the one
	// that reads them, into a ring of Stages slots (DESIGN.md, loops). 0 and 1
	// both mean no pipeline; at most MaxStages.
	Stages int
	// Ahead is how many iterations before the loads that read them a loop issues
	// the loads their addresses read (index tiles: a tile's candidate indices), into
	// a ring of Stages+Ahead slots, so that no gather waits for its indices' round
	// trip: before its pipelined loads, or in a loop of one stage before the
	// iteration's own. 0 leaves it to the lowering (which takes max(Stages-1, 1)
	// where the body has such a load); NoAhead keeps every such load in its own
	// iteration, and the loads it addresses unpipelined; at most MaxAhead.
	Ahead int
	// Role places the op on the warps of the kernel's role of that name ("" = every
	// warp). The body of a loop placed on a role runs on that role.
	Role string
	// Dot is a dot's schedule (OpDot): how its result is spread over the warps that
	// compute it. nil leaves every choice to the lowering, which states what it chose
	// in the kernel lower.Schedule returns.
	Dot *DotSchedule
}

// DotSchedule is a dot's schedule clauses: `warps RxC [replicate N] [splitk N]
// [a HOME] [b HOME] [atom NAME]` in the text form, after the operands. Warps decides the
// split and replicate and splitk refine it: a dot with Warps set is computed
// exactly as stated. `a HOME` (and `atom`) may also stand alone, the split then
// left to the lowering.
type DotSchedule struct {
	// Warps is the result's grid of warp groups: Warps[0] row groups x Warps[1]
	// column groups, each a block of the result's m16n8 tiles (`warps RxC`).
	Warps [2]int
	// Replicate is how many warps hold each element of the result (`replicate N`;
	// 0 and 1: one). A replicated result has whole rows per warp (Warps[1] = 1), so
	// reductions along its rows stay inside the warp.
	Replicate int
	// SplitK splits the reduction over the Replicate warps that hold each element,
	// whose partial sums are then all-reduced through shared memory (`splitk N`, N =
	// Replicate). 0: each of them computes the whole sum.
	SplitK int
	// AHome is where each warp reads its A fragments from (`a regs`, `a shared` or
	// `a computed`; "" leaves it to the lowering): "shared", through ldmatrix from
	// A's shared home at every use; "regs", from registers: the fragments that
	// computed A (whole rows of this warp's row group), or, for an A in shared
	// memory defined before the loop the dot is in, fragments loaded once before
	// that loop and held across its iterations (loop-invariant fragments: a query
	// tile); "computed", each fragment register evaluated from A's elementwise
	// definition where the dot reads it (a dequantization from the raw bytes in
	// shared memory), so A itself is never stored; a transposed A (`trans %x`) takes
	// the fragments of %x's blocks through movmatrix.
	AHome string
	// BHome is where each warp reads its B fragments from (`b computed`; "" leaves
	// it to the lowering): "computed", each fragment register evaluated from B's
	// elementwise definition where the dot reads it, as AHome's; B = `trans %x` (Kᵀ
	// of q·kᵀ) reads %x's pairs directly, an untransposed B (V of p·v) takes them
	// through movmatrix, so a dot of each over the same tile evaluates each pair once.
	BHome string
	// KPerm reads a `b computed` operand's pairs in the order that makes a thread's
	// fragments contiguous bytes (`kperm`): within each 16 of B's rows, the logical
	// row 2t+8q+j is the stored row 4t+2q+j, so one 4-byte read gives a thread both
	// registers of a k16 step (and both n8 tiles of 16 output columns). For B =
	// `trans %x` (Kᵀ of q·kᵀ) it permutes the reduction, and A is held in registers
	// across the loop and loaded in the same order; for an untransposed B (V of p·v)
	// it permutes the result's columns the same way, which its layout records and its
	// consumers follow.
	KPerm bool
	// Atom is the tensor-core instruction shape the dot is built from (`atom NAME`;
	// "" is the target's default, today always m16n8k16).
	Atom string
}

// Operand homes a DotSchedule's AHome may name.
const (
	HomeRegs     = "regs"
	HomeShared   = "shared"
	HomeComputed = "computed"
)

// DotAtoms are the instruction shapes a DotSchedule's Atom may name.
var DotAtoms = []string{"m16n8k16"}

// WarpCount is the number of warps the schedule spreads the dot over.
func (s DotSchedule) WarpCount() int { return s.Warps[0] * s.Warps[1] * max(s.Replicate, 1) }

// String is the clauses' text form (without a leading space).
func (s DotSchedule) String() string {
	var clauses []string
	if s.Warps != [2]int{} {
		clauses = append(clauses, fmt.Sprintf("warps %dx%d", s.Warps[0], s.Warps[1]))
	}
	if s.Replicate > 1 {
		clauses = append(clauses, fmt.Sprintf("replicate %d", s.Replicate))
	}
	if s.SplitK > 0 {
		clauses = append(clauses, fmt.Sprintf("splitk %d", s.SplitK))
	}
	if s.AHome != "" {
		clauses = append(clauses, "a "+s.AHome)
	}
	if s.BHome != "" {
		clauses = append(clauses, "b "+s.BHome)
	}
	if s.KPerm {
		clauses = append(clauses, "kperm")
	}
	if s.Atom != "" {
		clauses = append(clauses, "atom "+s.Atom)
	}
	return strings.Join(clauses, " ")
}

// MaxDotWarps bounds each of a dot schedule's counts (a CTA has at most 32 warps).
const MaxDotWarps = 32

// check reports what is wrong with the clauses on their own (the warps they must
// cover are the kernel's, checked by Verify).
func (s DotSchedule) check() error {
	if s.Warps == [2]int{} {
		if s.Replicate != 0 || s.SplitK != 0 {
			return fmt.Errorf("%s: replicate and splitk refine the warp grid, so a schedule with them states warps RxC", s)
		}
		if s.AHome == "" && s.BHome == "" && s.Atom == "" {
			return fmt.Errorf("an empty dot schedule: state warps RxC, a HOME, b HOME or atom NAME")
		}
	} else if s.Warps[0] < 1 || s.Warps[1] < 1 || s.Warps[0] > MaxDotWarps || s.Warps[1] > MaxDotWarps {
		return fmt.Errorf("warps %dx%d: want RxC with R and C in 1..%d", s.Warps[0], s.Warps[1], MaxDotWarps)
	}
	if s.Replicate < 0 || s.Replicate > MaxDotWarps {
		return fmt.Errorf("replicate %d: want 1..%d", s.Replicate, MaxDotWarps)
	}
	if s.Replicate > 1 && s.Warps[1] != 1 {
		return fmt.Errorf("warps %dx%d replicate %d: a replicated result has whole rows per warp, want warps %dx1", s.Warps[0], s.Warps[1], s.Replicate, s.Warps[0])
	}
	if s.SplitK != 0 && s.Replicate < 2 {
		return fmt.Errorf("splitk %d: the reduction is split over the warps that hold each element: state replicate %d too", s.SplitK, s.SplitK)
	}
	if s.SplitK != 0 && s.SplitK != s.Replicate {
		return fmt.Errorf("splitk %d: the reduction is split over the %d warps that hold each element (replicate %d), want splitk %d", s.SplitK, s.Replicate, s.Replicate, s.Replicate)
	}
	if s.AHome != "" && s.AHome != HomeRegs && s.AHome != HomeShared && s.AHome != HomeComputed {
		return fmt.Errorf("a %q: want a %s, a %s or a %s", s.AHome, HomeRegs, HomeShared, HomeComputed)
	}
	if s.BHome != "" && s.BHome != HomeComputed {
		return fmt.Errorf("b %q: want b %s (or no b clause: the lowering's choice)", s.BHome, HomeComputed)
	}
	if s.KPerm && s.BHome != HomeComputed {
		return fmt.Errorf("kperm: it orders the pairs of a computed B; state b %s", HomeComputed)
	}
	if s.Atom != "" && !slices.Contains(DotAtoms, s.Atom) {
		return fmt.Errorf("atom %q: want one of %s", s.Atom, strings.Join(DotAtoms, ", "))
	}
	return nil
}

// MaxStages bounds a loop's pipeline depth (Op.Stages).
const MaxStages = 4

// MaxAhead bounds how far ahead a pipelined loop issues its index tiles (Op.Ahead);
// NoAhead is the stated `ahead 0`: none issued ahead.
const (
	MaxAhead = 3
	NoAhead  = -1
)

// MaxLoopDepth bounds how deep loops nest. Kernels nest a few; the bound keeps the
// text form (each level indented) and the lowering's walks linear in the kernel's
// size (40,000 nested loops took 8 GB to copy through the text form).
const MaxLoopDepth = 32

// Result returns the single result of op.
func (o *Op) Result() *Value { return o.Results[0] }

// Program is what one configuration generates: kernels launched in order, and the
// scratch buffers they share (package plan adds the rule that picks, per call, which
// of them run). A kernel parameter whose name matches a workspace
// buffer is bound to it; every other parameter is the caller's.
type Program struct {
	Name      string
	Kernels   []*Kernel
	Workspace []Workspace
	// SMs is the SM count the program was planned for, as the text form records it
	// (`sms N`; 0: the target's). It is not a second carrier: whoever compiles a program
	// read from text applies it to the target once (target.Target.WithSMs), and the
	// lowering reads only the target's.
	SMs int
}

// Only is p with just the named kernels, in p's order: what one call runs.
func (p *Program) Only(names []string) *Program {
	q := *p
	q.Kernels = nil
	for _, k := range p.Kernels {
		for _, n := range names {
			if k.Name == n {
				q.Kernels = append(q.Kernels, k)
				break
			}
		}
	}
	return &q
}

// Workspace is a device scratch buffer a program needs between its kernels.
type Workspace struct {
	Name  string
	Bytes int64
	// PerPart is what the size grows by per (row, chunk) pair: a launcher allocates
	// Bytes + PerPart x the launch plan's most (row, chunk) pairs.
	PerPart int64
}

// BytesFor is the buffer's size for parts (row, chunk) pairs.
func (w Workspace) BytesFor(parts int) int64 { return w.Bytes + w.PerPart*int64(parts) }
