package lower

// Questions later passes ask of what earlier passes decided, answered in one
// place so that no pass reads another's fields for them.

import "github.com/ptxgen/ptxgen/ir"

// sharedHome is where v's elements live in shared memory, if anywhere: its own
// layout, or its staging area; placed (offset, pitch, swizzle) once smem placed it.
func (f *fn) sharedHome(v *ir.Value) (layout, bool) {
	if h, ok := f.homes[v]; ok {
		return h, true
	}
	if l := f.layouts[v]; l.kind == lShared {
		return l, true
	}
	h, ok := f.staged[v]
	return h, ok
}

// placed is v's layout, a shared one with its home as smem placed it.
func (f *fn) placed(v *ir.Value) layout {
	l := f.layouts[v]
	if h, ok := f.homes[v]; ok && l.kind == lShared {
		return h
	}
	return l
}

// splitScratch is the shared scratch a split dot's all-reduce needs (0 for none).
func (f *fn) splitScratch(o *ir.Op) int {
	parts := f.splitK[o]
	if parts < 2 || f.splitPartial[o.Result()] {
		return 0
	}
	// Each row group's warps write one f32 per element of the group's rows.
	r := o.Result()
	return parts * r.Type.Shape[0] * r.Type.Shape[1] * 4
}

// roleWarps is the number of warps that run ops of role r ("" = the CTA's).
func (f *fn) roleWarps(r string) int {
	if role, ok := f.k.Role(r); ok {
		return role.Warps
	}
	return f.k.Warps
}

// warpsFor is the number of warps a tile computed by v's defining op is split over.
func (f *fn) warpsFor(v *ir.Value) int { return f.roleWarps(f.valueRole(v)) }

// valueRole is the role that computes v: the kernel's (valueRoles), or for a
// value a pass added (legalize's masks), its op's.
func (f *fn) valueRole(v *ir.Value) string {
	if r, ok := f.roleOf[v]; ok {
		return r
	}
	if v.Def != nil {
		return v.Def.Role
	}
	return ""
}

// pipeTile is the ring of a tile that a pipelined loop issues ahead (pipeline)
// or that one role hands to another (roles), or nil.
func (f *fn) pipeTile(v *ir.Value) *loopPipeline {
	if p := f.pipeline.pipeTile[v]; p != nil {
		return p
	}
	return f.roles.handoffTile[v]
}
