package lower

import (
	"fmt"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

// Warp roles (ir.Kernel.Roles, ir.Op.Role) place ops on a range of the CTA's
// warps. An op on a role runs on those warps only: its tiles are split over the
// role's warps, its loads are issued by the role's threads and its barriers are
// the role's named barrier (bar.sync id, 32 x warps), so warps of other roles
// never wait for it. A loop with no role of its own whose body places ops on
// roles is *split by roles*: each role runs its own copy of the loop, with its
// ops of every iteration, alongside the others. Tiles one role computes and
// another reads in the same iteration are *handed off* through a ring of stages
// slots (the loop's `stages N`, at least one): the producer fills slot j mod N
// and arrives on the slot's full barrier, the consumer syncs on it, reads, and
// arrives on the slot's empty barrier, which the producer syncs on before it
// refills the slot N iterations later. So the producer runs up to N iterations
// ahead of the consumer, and neither waits for the other's other work.

// roleBarrier is the operands of role r's own barrier, bar.sync id, threads: id
// 1 + the role's index (0 is the CTA's), every thread of the role.
func (f *fn) roleBarrier(r string) []ptx.Operand {
	for i, role := range f.Kernel.Roles {
		if role.Name == r {
			return []ptx.Operand{ptx.Imm(1 + i), ptx.Imm(32 * role.Warps)}
		}
	}
	return nil
}

// maxBarriers is the named barriers a CTA has (bar.sync's id is 0..15).
const maxBarriers = 16

// assignRoles is the roles pass.
//
// Requires: layouts (layout), staged homes (stage) and the pipeline decisions.
// Guarantees: every value one role computes and an op of another role (or of no
// role) reads is a scalar or recomputed value whose operands are readable there
// too, or a tile with a shared home: in a loop split by roles, computed in the
// same iteration, it is handed off through the loop's ring (handoffs,
// handoffTile), one producer role and one consumer role per loop; every op of a
// split loop's body that is not scalar or recomputed is on a role, and nested
// loops there are on one; the roles' barriers and the rings' fit in the CTA's 16.
func assignRoles(f *fn) (decision.RoleRecord, error) {
	rec := decision.RoleRecord{Handoffs: map[*ir.Op]*decision.LoopPipeline{}, HandoffTile: map[*ir.Value]*decision.LoopPipeline{}}
	if len(f.Kernel.Roles) == 0 {
		return rec, nil
	}
	stages := 0
	var err error
	fail := func(format string, args ...any) {
		if err == nil {
			err = fmt.Errorf(format, args...)
		}
	}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if err != nil || !ir.SplitByRoles(o) {
			return
		}
		defined := map[*ir.Value]bool{}
		for _, bo := range o.Body.Ops {
			for _, r := range bo.Results {
				defined[r] = true
			}
		}
		p := &decision.LoopPipeline{Loop: o, Stages: max(o.Stages, 1), Handoff: true}
		seen := map[*ir.Value]bool{}
		for _, bo := range o.Body.Ops {
			r := bo.Role
			if r == "" && !f.roleless(bo) {
				fail("%s: a loop split by roles runs every op that is not index arithmetic on a role; place this one on one (ir.Builder.OnRole)", bo)
				return
			}
			ir.WalkOps(&ir.Block{Ops: []*ir.Op{bo}}, func(u *ir.Op) {
				for _, a := range u.Args {
					for _, src := range f.crossings(a, u.Role, defined) {
						if seen[src] {
							continue
						}
						seen[src] = true
						if _, ok := f.SharedHome(src); !ok || src.Type.Rank() != 2 {
							fail("%s computed on role %q is read on role %q in the same iteration: only tiles with a shared home (loaded to shared memory, or staged) cross roles, and this one lives in %v", src, f.ValueRole(src), u.Role, f.Layouts[src])
							return
						}
						from, to := f.ValueRole(src), u.Role
						if p.Producer == "" {
							p.Producer, p.Consumer = from, to
						}
						if p.Producer != from || p.Consumer != to {
							fail("loop %s hands tiles from role %s to %s and from %s to %s: one producer and one consumer role per loop", o.Body.Args[0], p.Producer, p.Consumer, from, to)
							return
						}
						p.Tiles = append(p.Tiles, src)
					}
				}
			})
		}
		if len(p.Tiles) == 0 {
			return
		}
		for _, t := range p.Tiles {
			rec.HandoffTile[t] = p
		}
		rec.Handoffs[o] = p
		stages = max(stages, p.Stages)
	})
	if err != nil {
		return rec, err
	}
	// A role's registers are its own: anywhere, a value read on another role must
	// be in shared memory (outside split loops the sync pass orders it with a CTA
	// barrier; inside, the tiles above are the ring's).
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if err != nil || o.Kind == ir.OpFor && ir.SplitByRoles(o) {
			return
		}
		for i, a := range o.Args {
			reader := o.Role
			if o.Kind == ir.OpFor && i >= 2 {
				reader = f.ValueRole(o.Body.Args[i-1]) // an initial value: its carried value's role reads it
			}
			for _, src := range f.crossings(a, reader, nil) {
				if _, ok := f.SharedHome(src); !ok {
					on := " on " + roleDesc(reader)
					if reader == o.Role && reader != "" {
						on = "" // the op prints its role
					}
					fail("%s computed on %s is read by %s%s: across roles only tiles with a shared home are visible, and this one lives in %v", src, roleDesc(f.ValueRole(src)), o, on, f.Layouts[src])
					return
				}
			}
		}
	})
	if err != nil {
		return rec, err
	}
	if n := f.HandoffBarrierBase() + 2*stages; n > maxBarriers {
		return rec, fmt.Errorf("%d roles and a %d-slot handoff ring need %d named barriers; a CTA has %d", len(f.Kernel.Roles), stages, n, maxBarriers)
	}
	return rec, nil
}

// roleless reports whether an op may run on every warp in a split loop: it emits
// no shared-memory access (scalar arithmetic, or a recomputed value evaluated
// where it is used).
func (f *fn) roleless(o *ir.Op) bool {
	if o.Kind == ir.OpFor || o.Kind == ir.OpStore || len(o.Results) != 1 {
		return false
	}
	if _, staged := f.Staged[o.Result()]; staged {
		return false
	}
	k := f.Layouts[o.Result()].Kind
	return k == decision.Scalar || k == decision.Expr
}

// crossings are the values computed on another role than reader that reading a
// (on role reader) reads: a itself, or, where a is recomputed where it is used,
// the values its recomputation reads, transitively. in limits them to values
// defined in a split loop's body (nil: anywhere); values of no role are read by
// every warp.
func (f *fn) crossings(a *ir.Value, reader string, in map[*ir.Value]bool) []*ir.Value {
	var out []*ir.Value
	seen := map[*ir.Value]bool{}
	var visit func(v *ir.Value)
	visit = func(v *ir.Value) {
		if seen[v] {
			return
		}
		seen[v] = true
		if v.Def != nil && v.Def.Kind == ir.OpTrans {
			visit(v.Def.Args[0]) // a view of its operand's bytes
			return
		}
		r := f.ValueRole(v)
		if _, home := f.SharedHome(v); !home && v.Def != nil && v.Def.Kind != ir.OpFor && f.Layouts[v].Kind == decision.Expr {
			// Evaluated by the reader: what it reads is what crosses.
			for _, x := range v.Def.Args {
				visit(x)
			}
			return
		}
		// Scalar arithmetic is emitted outside any role's region, so every warp
		// holds it (emit: placeOn).
		if r == reader || in != nil && !in[v] || f.Layouts[v].Kind == decision.Scalar {
			return
		}
		// A value of no role is every warp's, but registers split over the CTA's
		// warps (fragments, their row or column vectors, per-thread elements) are
		// not all held by a role of fewer warps.
		if r == "" && (!f.splitInRegisters(v) || f.RoleWarps(reader) == f.Kernel.Warps) {
			return
		}
		out = append(out, v)
	}
	visit(a)
	return out
}

// roleDesc names role r in a message: `role "r"`, or every warp for "".
func roleDesc(r string) string {
	if r == "" {
		return "every warp (no role)"
	}
	return fmt.Sprintf("role %q", r)
}

// splitInRegisters reports whether v lives in registers split over warps.
func (f *fn) splitInRegisters(v *ir.Value) bool {
	switch f.Layouts[v].Kind {
	case decision.Acc, decision.Rows, decision.Cols, decision.Threads:
		return true
	}
	return false
}

// checkRoles checks the handoffs: every ring belongs to a loop split by roles and
// joins two roles, and every ring tile is a shared tile its producer computes.
func checkRoles(f *fn) error {
	if err := checkLayoutsRoles(f, true); err != nil {
		return err
	}
	for loop, p := range f.Roles.Handoffs {
		if !ir.SplitByRoles(loop) || p.Producer == p.Consumer {
			return fmt.Errorf("handoff ring of a loop not split by roles, or from %q to itself", p.Producer)
		}
		for _, t := range p.Tiles {
			if _, ok := f.SharedHome(t); !ok || f.ValueRole(t) != p.Producer {
				return fmt.Errorf("handoff tile %s is not a shared tile of role %s", t, p.Producer)
			}
		}
	}
	return nil
}

// roleNote annotates `dump -after roles` with each split loop's ring (the ops'
// roles print with the ops).
func (f *fn) roleNote(o *ir.Op) string {
	if p := f.Roles.Handoffs[o]; p != nil {
		var names []string
		for _, t := range p.Tiles {
			names = append(names, t.String())
		}
		return fmt.Sprintf("split by roles: %s hands %s to %s through %d slots", p.Producer, strings.Join(names, ", "), p.Consumer, p.Stages)
	}
	return ""
}
