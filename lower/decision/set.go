// Package decision holds what the lowering's passes decide about a kernel (the
// records, the Layout type, the sync points' events, the simplify rules) and the
// questions later passes and the emitter ask of them. The passes (package lower)
// write it; the emitter (package emit) reads it.
package decision

import (
	"math/bits"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// Set is a kernel as the passes left it and everything they decided about it:
// what the emitter carries out (lower/emit) and the later passes read. Each
// record is written by its pass alone (lower/pipeline.go's Passes); the queries
// below answer, in one place, what several records decide together.
type Set struct {
	Kernel *ir.Kernel
	Target target.Target
	// Follows and Precedes place the kernel in its program (lower.Options).
	Follows, Precedes bool
	// RoleOf is the role computing each value of the kernel as given
	// (lower's valueRoles), a fact legalize and layout read before the roles pass.
	RoleOf map[*ir.Value]string
	// The records, in pipeline order. Layout's, stage's and smem's are embedded,
	// so that d.Layouts, d.Staged, d.Scratch, d.SmemBytes, ... read them.
	LayoutRecord
	StageRecord
	Pipeline PipelineRecord
	Roles    RoleRecord
	SmemRecord
	Budget   BudgetRecord
	Schedule ScheduleRecord
	Simplify SimplifyRecord
}

// SharedHome is where v's elements live in shared memory, if anywhere: its own
// layout, or its staging area; placed (offset, pitch, swizzle) once smem placed it.
func (d *Set) SharedHome(v *ir.Value) (Layout, bool) {
	if h, ok := d.Homes[v]; ok {
		return h, true
	}
	if l := d.Layouts[v]; l.Kind == Shared {
		return l, true
	}
	h, ok := d.Staged[v]
	return h, ok
}

// Placed is v's layout, a shared one with its home as smem Placed it.
func (d *Set) Placed(v *ir.Value) Layout {
	l := d.Layouts[v]
	if h, ok := d.Homes[v]; ok && l.Kind == Shared {
		return h
	}
	return l
}

// RoleWarps is the number of warps that run ops of role r ("" = the CTA's).
func (d *Set) RoleWarps(r string) int {
	if role, ok := d.Kernel.Role(r); ok {
		return role.Warps
	}
	return d.Kernel.Warps
}

// WarpsFor is the number of warps a tile computed by v's defining op is split over.
func (d *Set) WarpsFor(v *ir.Value) int { return d.RoleWarps(d.ValueRole(v)) }

// ValueRole is the role that computes v: the kernel's (valueRoles), or for a
// value a pass added (legalize's masks), its op's.
func (d *Set) ValueRole(v *ir.Value) string {
	if r, ok := d.RoleOf[v]; ok {
		return r
	}
	if v.Def != nil {
		return v.Def.Role
	}
	return ""
}

// PipeTile is the ring of a tile that a pipelined loop issues ahead (pipeline)
// or that one role hands to another (roles), or nil.
func (d *Set) PipeTile(v *ir.Value) *LoopPipeline {
	if p := d.Pipeline.ByTile[v]; p != nil {
		return p
	}
	return d.Roles.HandoffTile[v]
}

// AInRegisters reports whether dot o reads its A operand from the fragments
// that hold it: whole rows split like the result's, on the same warps.
func (d *Set) AInRegisters(o *ir.Op) bool { return d.AHeldFor(o, d.Layouts[o.Result()].WM) }

// AHeldFor reports whether dot o's A operand is held as a result split over wm
// row groups needs it: in fragments of whole rows in wm row groups, computed by
// the same warps.
func (d *Set) AHeldFor(o *ir.Op, wm int) bool {
	if o.Dot != nil && o.Dot.AHome == ir.HomeShared {
		return false // stated: read through its shared home (staged if need be)
	}
	a := d.Layouts[o.Args[0]]
	return a.Kind == Acc && a.WN == 1 && a.WM == wm && d.ValueRole(o.Args[0]) == d.ValueRole(o.Result())
}

// BInRegisters reports whether dot o reads its B operand from the fragments that
// hold it: a 16-bit result held whole by every warp that computes o (one group,
// replicated over all of them), on the same warps. Each k16 step's B fragments
// are then the transposes of B's m16 tile k, two movmatrix per n8 tile
// (emit_dot's bFrags): the heads-in-N decode's Pᵀ, which would otherwise go
// through shared memory.
func (d *Set) BInRegisters(o *ir.Op) bool {
	b, r := d.Layouts[o.Args[1]], d.Layouts[o.Result()]
	return b.Kind == Acc && b.WM == 1 && b.WN == 1 && b.Copies() == d.WarpsFor(o.Result()) && r.Kind == Acc &&
		o.Args[1].Type.Elem.Size() == 2 && d.ValueRole(o.Args[1]) == d.ValueRole(o.Result())
}

// RowElsewhere reports whether a thread of role reader, in an op split as l,
// does not hold the elements of row vector v it needs: v is split over other row
// groups, or computed by other warps (another role's registers are not the
// reader's). It reads them from v's shared home.
func (d *Set) RowElsewhere(v *ir.Value, l Layout, reader string) bool {
	return d.Layouts[v].WM != l.WM || d.ValueRole(v) != reader
}

// AComputed reports whether dot o evaluates its A fragments from A's definition:
// it states `a computed` and A is recomputed (Expr).
func (d *Set) AComputed(o *ir.Op) bool {
	return StatesComputed(o, 0) && d.Layouts[o.Args[0]].Kind == Expr
}

// BComputed is AComputed for B (`b computed`); with `kperm` a B in shared memory
// too (the rope slice), read pair by pair in that order: ldmatrix would give its
// fragments in the natural one.
func (d *Set) BComputed(o *ir.Op) bool {
	return StatesComputed(o, 1) && (d.Layouts[o.Args[1]].Kind == Expr || o.Dot.KPerm)
}

// StatesComputed reports whether o is a dot whose operand i (0: A, 1: B) states
// the home `computed`.
func StatesComputed(o *ir.Op, i int) bool {
	if o.Kind != ir.OpDot || o.Dot == nil {
		return false
	}
	switch i {
	case 0:
		return o.Dot.AHome == ir.HomeComputed
	case 1:
		return o.Dot.BHome == ir.HomeComputed
	}
	return false
}

// TransposedB reports whether dot o's B is a transpose (Kᵀ of q·kᵀ), whose `kperm`
// permutes the reduction rather than the result's columns.
func TransposedB(o *ir.Op) bool { return o.Args[1].Def != nil && o.Args[1].Def.Kind == ir.OpTrans }

// divisor returns a power of two that the integer value v (every element of it) is
// known to be a multiple of. It drives the width of vector copies: a gather whose
// row offsets are multiples of 8 bf16 elements can move 16 bytes per cp.async.
func (d *Set) divisor(v *ir.Value) int64 {
	const limit = 1 << 16
	if v.Def == nil {
		for _, p := range d.Kernel.Params {
			if p.Value == v && p.Div > 1 {
				return int64(p.Div)
			}
		}
		return 1
	}
	o := v.Def
	switch o.Kind {
	case ir.OpConst:
		if o.Int == 0 {
			return limit
		}
		return min(int64(1)<<bits.TrailingZeros64(uint64(o.Int)), limit)
	case ir.OpMul:
		return min(d.divisor(o.Args[0])*d.divisor(o.Args[1]), limit)
	case ir.OpAdd, ir.OpSub, ir.OpMin, ir.OpMax:
		return min(d.divisor(o.Args[0]), d.divisor(o.Args[1]))
	case ir.OpCast, ir.OpBroadcast:
		return d.divisor(o.Args[0])
	case ir.OpDiv:
		if c := o.Args[1].Def; c != nil && c.Kind == ir.OpConst && c.Int > 0 {
			if x := d.divisor(o.Args[0]); x%c.Int == 0 {
				return x / c.Int
			}
		}
	case ir.OpShl:
		if c := o.Args[1].Def; c != nil && c.Kind == ir.OpConst && c.Int >= 0 && c.Int < 16 {
			return min(d.divisor(o.Args[0])<<c.Int, limit)
		}
	case ir.OpSelect:
		return min(d.divisor(o.Args[1]), d.divisor(o.Args[2]))
	}
	return 1
}

// ptrAlign is the byte alignment known for a pointer value: the least of the
// parameters it may be.
func (d *Set) ptrAlign(p *ir.Value) int64 {
	ps := ir.PointerParams(d.Kernel, p)
	if ps == nil {
		return 1
	}
	a := int64(1 << 16)
	for _, i := range ps {
		a = min(a, int64(max(d.Kernel.Params[i].Div, 1)))
	}
	return a
}

// MemAlign is the byte alignment known for the address of every element of a
// load or store whose elements are esize bytes: the pointer's and its offsets'.
func (d *Set) MemAlign(m ir.MemOps, esize int64) int64 {
	return gcd64(d.ptrAlign(m.Ptr), gcd64(d.divisor(m.Offs)*esize, d.divisor(m.Col0)*esize))
}

func gcd64(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// HandoffThreads is the thread count of a ring's barriers: both roles'.
func (d *Set) HandoffThreads(p *LoopPipeline) ptx.Imm {
	return ptx.Imm(32 * (d.RoleWarps(p.Producer) + d.RoleWarps(p.Consumer)))
}

// HandoffBarrierBase is the first barrier id of the split loops' rings: slot s's
// full barrier is base + s, its empty barrier base + stages + s.
func (d *Set) HandoffBarrierBase() int { return 1 + len(d.Kernel.Roles) }
