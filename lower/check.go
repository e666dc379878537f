package lower

import (
	"fmt"
	"maps"
	"testing"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

// CheckPasses turns on the checks after every pass (Pass.check) for every
// compilation; Options.Check turns them on for one. It is on in test binaries;
// `ptxgen check` and `ptxgen dump -check` set it.
var CheckPasses = testing.Testing()

// checkIR re-verifies the kernel after a pass that rewrites it.
func checkIR(f *fn) error { return ir.Verify(f.Kernel) }

// checkRowReduced checks what rowreduce guarantees: the marked tiles are rank 2,
// and every tile a row reduction reads is marked.
func checkRowReduced(f *fn) error {
	for v := range f.rowReduced {
		if v.Type.Rank() != 2 {
			return fmt.Errorf("rowreduce check: %s of rank %d is marked", v, v.Type.Rank())
		}
	}
	var err error
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind == ir.OpReduce && o.Int == 1 && !f.rowReduced[o.Args[0]] && err == nil {
			err = fmt.Errorf("rowreduce check: %s reduces rows of an unmarked tile", o)
		}
	})
	return err
}

// checkLayouts checks what layout guarantees: every value has a layout that fits
// its type and the CTA's warps, and every store stores from a layout the emitter
// can store from. In a kernel with roles the fragments' warps are checked against
// their roles after the roles pass (checkRoles): an op reading another role's
// fragments inherits their split, and that pass refuses the read, naming it.
func checkLayouts(f *fn) error { return checkLayoutsRoles(f, len(f.Kernel.Roles) == 0) }

// checkLayoutsRoles is checkLayouts, with each fragment tile's warps checked
// against its role's where RoleWarps is set.
func checkLayoutsRoles(f *fn, RoleWarps bool) error {
	var err error
	fail := func(format string, args ...any) {
		if err == nil {
			err = fmt.Errorf("layout check: "+format, args...)
		}
	}
	ir.WalkValues(f.Kernel, func(v *ir.Value) {
		l, ok := f.Layouts[v]
		if !ok {
			fail("%s has no layout", v)
			return
		}
		isTile := v.Type.Kind == ir.Tile
		switch {
		case l.Kind == decision.Scalar && isTile:
			fail("tile %s is placed as a scalar", v)
		case l.Kind != decision.Scalar && !isTile:
			fail("scalar %s is placed as %v", v, l)
		case (l.Kind == decision.Rows || l.Kind == decision.Cols || l.Kind == decision.Threads) && v.Type.Rank() != 1:
			fail("%s of rank %d is placed as %v", v, v.Type.Rank(), l)
		case (l.Kind == decision.Acc || l.Kind == decision.Shared) && v.Type.Rank() != 2:
			fail("%s of rank %d is placed as %v", v, v.Type.Rank(), l)
		}
		if l.Kind == decision.Acc {
			warps := l.WM * l.WN * l.Copies()
			// A row view is its row vector's registers, on the warps that compute it.
			of := v
			if f.isRowView(v) {
				of = v.Def.Args[0]
			}
			// A row view's columns are its consumer's split (each element is its
			// row vector's, per row): only its rows must split.
			splitsCols := of == v
			if want := f.WarpsFor(of); RoleWarps && warps != want || l.Rep > 1 && l.WN != 1 {
				fail("%s is split over %dx%d warps with %d copies; its role has %d warps", v, l.WM, l.WN, l.Copies(), want)
			} else if s := v.Type.Shape; s[0]%(decision.GranuleM*l.WM) != 0 || splitsCols && s[1]%(decision.GranuleN*l.WN) != 0 {
				fail("%s (%v) does not split into whole m16n8 tiles over %dx%d warps", v, v.Type, l.WM, l.WN)
			}
		}
	})
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind == ir.OpStore {
			if e := f.checkStore(o); e != nil {
				fail("%v", e)
			}
		}
	})
	return err
}

// checkStaging checks what stage guarantees: every dot operand and transpose
// source can be read from shared memory or registers, and every row vector
// broadcast onto a tile split over other row groups has a rank-1 home.
func checkStaging(f *fn) error {
	if err := checkLayouts(f); err != nil {
		return err
	}
	var err error
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if err != nil {
			return
		}
		switch o.Kind {
		case ir.OpDot:
			if _, ok := f.SharedHome(o.Args[0]); !ok && !f.AInRegisters(o) && !f.AComputed(o) {
				err = fmt.Errorf("stage check: %s: operand a (%v) has no shared home", o, f.Layouts[o.Args[0]])
			}
			if _, ok := f.SharedHome(o.Args[1]); !ok && !f.BInRegisters(o) && !f.BComputed(o) {
				err = fmt.Errorf("stage check: %s: operand b (%v) has no shared home", o, f.Layouts[o.Args[1]])
			}
		case ir.OpTrans:
			if _, ok := f.SharedHome(o.Args[0]); !ok && f.Layouts[o.Result()].Kind != decision.Expr {
				err = fmt.Errorf("stage check: %s: the transposed tile has no shared home", o)
			}
		}
		for _, v := range f.rowVectorsOtherGroups(o) {
			if _, ok := f.Staged[v]; !ok {
				err = fmt.Errorf("stage check: %s: the row vector %s (%v) meets other row groups with no shared home", o, v, f.Layouts[v])
			}
		}
	})
	for v := range f.Staged {
		if f.Layouts[v].Kind == decision.Shared || f.Layouts[v].Kind == decision.Scalar {
			return fmt.Errorf("stage check: %s is staged but lives in %v", v, f.Layouts[v])
		}
	}
	return err
}

// sharedArray is one array of the shared-memory allocation, for checkShared.
type sharedArray struct {
	v          *ir.Value
	what       string
	start, end int
}

// checkShared checks what smem guarantees: every shared layout, staged home and
// reduction scratch lies inside the allocation, 128-byte aligned, with a pitch
// that holds a row (odd 16-byte units for dot operands, or dense swizzled rows of
// whole 128-byte groups); transposes view their
// source's bytes; arrays that share bytes are recorded as aliases; the total fits
// the target.
func checkShared(f *fn) error {
	if err := checkStaging(f); err != nil {
		return err
	}
	if f.SmemBytes > f.Target.MaxSharedPerBlock || f.SmemBytes%128 != 0 {
		return fmt.Errorf("smem check: %d bytes of shared memory (limit %d, must be a multiple of 128)", f.SmemBytes, f.Target.MaxSharedPerBlock)
	}
	mmaOperand := f.dotOperands()
	swizzles := f.swizzles(swizzleFragments)
	var arrays []sharedArray
	var err error
	home := func(v *ir.Value, h decision.Layout, what string) {
		rows, rowBytes := 1, v.Type.Elem.Size()*v.Type.Shape[0]
		if v.Type.Rank() == 2 {
			rows, rowBytes = v.Type.Shape[0], v.Type.Elem.Size()*v.Type.Shape[1]
		}
		size := h.Pitch * rows
		if v.Type.Rank() == 1 {
			size = rowBytes
		}
		if p := f.PipeTile(v); p != nil {
			size += (p.Stages - 1) * f.SlotBytes[p] // the ring's other slots
		}
		if p := f.Pipeline.ByIndex[v]; p != nil {
			if f.IndexSlotBytes[v] < size {
				err = fmt.Errorf("smem check: index tile %s of %d bytes has slots %d bytes apart", v, size, f.IndexSlotBytes[v])
			}
			size += (p.IndexSlots() - 1) * f.IndexSlotBytes[v]
		}
		switch {
		case h.Pitch <= 0 || v.Type.Rank() == 2 && (h.Pitch%16 != 0 || h.Pitch < rowBytes):
			err = fmt.Errorf("smem check: %s %s has pitch %d for rows of %d bytes", what, v, h.Pitch, rowBytes)
		case h.Swizzle && (!swizzles[v] || h.Pitch != rowBytes):
			err = fmt.Errorf("smem check: %s %s is swizzled with pitch %d for rows of %d bytes (want dense rows of whole 128-byte groups, only dot operands)", what, v, h.Pitch, rowBytes)
		case v.Type.Rank() == 2 && mmaOperand[v] && !h.Swizzle && h.Pitch/16%2 == 0:
			err = fmt.Errorf("smem check: dot operand %s has pitch %d, an even number of 16-byte units (bank conflicts)", v, h.Pitch)
		case h.Offset%128 != 0 || h.Offset < 0 || h.Offset+size > f.SmemBytes:
			err = fmt.Errorf("smem check: %s %s at shared[%d..%d] is outside the %d-byte allocation or not 128-byte aligned", what, v, h.Offset, h.Offset+size, f.SmemBytes)
		}
		arrays = append(arrays, sharedArray{v, what, h.Offset, h.Offset + size})
	}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		for _, r := range o.Results {
			if err != nil {
				return
			}
			l := f.Placed(r)
			switch {
			case o.Kind == ir.OpTrans && l.Kind == decision.Expr: // recomputed by `a computed` dots
			case o.Kind == ir.OpTrans:
				src, ok := f.SharedHome(o.Args[0])
				if !ok || l.Kind != decision.Shared || l.Offset != src.Offset || l.Pitch != src.Pitch || l.Swizzle != src.Swizzle || l.Trans == src.Trans {
					err = fmt.Errorf("smem check: transpose %s (%v) is not a view of its source (%v)", r, l, src)
				}
			case l.Kind == decision.Shared:
				home(r, l, "shared tile")
			}
			if _, ok := f.Staged[r]; ok {
				home(r, f.Homes[r], "staged tile")
			}
			if off, ok := f.Scratch[r]; ok {
				size := f.reduceScratch(o)
				if off%128 != 0 || off+size > f.SmemBytes {
					err = fmt.Errorf("smem check: reduction scratch of %s at shared[%d..%d] is outside the %d-byte allocation", r, off, off+size, f.SmemBytes)
				}
				arrays = append(arrays, sharedArray{r, "scratch", off, off + size})
			}
		}
	})
	if err != nil {
		return err
	}
	aliased := func(a, b *ir.Value) bool {
		for _, x := range f.Aliases[a] {
			if x == b {
				return true
			}
		}
		return false
	}
	for i, a := range arrays {
		for _, b := range arrays[i+1:] {
			if p := f.PipeTile(a.v); p != nil && p == f.PipeTile(b.v) {
				continue // tiles of one ring interleave by slot, each 128-byte aligned in it
			}
			if a.start < b.end && b.start < a.end && !aliased(a.v, b.v) && !aliased(b.v, a.v) {
				return fmt.Errorf("smem check: %s %s and %s %s share bytes but are not recorded as aliases (no barrier would separate them)", a.what, a.v, b.what, b.v)
			}
		}
	}
	return nil
}

// checkSchedule checks what schedule guarantees: each dot group is a run of
// consecutive ops of one block with at least two dots.
func checkSchedule(f *fn) error {
	if err := checkShared(f); err != nil {
		return err
	}
	var err error
	var visit func(b *ir.Block)
	visit = func(b *ir.Block) {
		for i, o := range b.Ops {
			if g := f.Schedule.DotGroups[o]; g != nil {
				dots := 0
				for j, x := range g {
					if i+j >= len(b.Ops) || b.Ops[i+j] != x {
						err = fmt.Errorf("schedule check: dot group at %s is not a run of consecutive ops", o)
						return
					}
					if x.Kind == ir.OpDot {
						dots++
					}
				}
				if dots < 2 {
					err = fmt.Errorf("schedule check: dot group at %s has %d dots", o, dots)
				}
			}
			if o.Body != nil {
				visit(o.Body)
			}
		}
	}
	visit(f.Kernel.Body)
	return err
}

// checkInstructions checks what emit guarantees: every instruction is a form of
// ptx.Forms with the operands it takes, supported by the target and the module's
// PTX version.
func checkInstructions(f *fn) error {
	if err := ptx.ValidateModule(f.out.Module); err != nil {
		return fmt.Errorf("emit check: %v", err)
	}
	return nil
}

// checkSync checks what sync guarantees, against the instructions it wrote (not
// its own bookkeeping): at every point where a thread reads a shared array, the
// cp.async group that filled it has been waited for and a bar.sync of the whole
// CTA (a named barrier of fewer threads does not count) separates the
// read from every write since; no array is written while another array whose bytes
// it reuses has reads not yet behind a bar.sync; a loop body that wrote shared
// memory leaves nothing pending at its back edge.
func checkSync(f *fn) error {
	if err := checkInstructions(f); err != nil {
		return err
	}
	for _, fnc := range f.out.Module.Funcs {
		if err := checkSyncBody(f, fnc.Body); err != nil {
			return fmt.Errorf("sync check: %v", err)
		}
	}
	return nil
}

// ctaWideBarrier reports whether in is a bar.sync of all threads threads of the
// CTA: no count, or an immediate count of all of them.
func ctaWideBarrier(in *ptx.Instr, threads int) bool {
	if len(in.Args) < 2 {
		return true
	}
	n, ok := in.Args[1].(ptx.Imm)
	return ok && int(n) == threads
}

// scopeBarrier reports whether in is the barrier of the scope role ("" = the
// CTA's bar.sync 0, else the role's named barrier of its threads).
func (f *fn) scopeBarrier(in *ptx.Instr, role string) bool {
	if in.Op != "bar.sync" || in.Guard != "" {
		return false
	}
	if role == "" {
		return ctaWideBarrier(in, 32*f.Kernel.Warps)
	}
	want := f.roleBarrier(role)
	return len(in.Args) == 2 && in.Args[0] == want[0] && in.Args[1] == want[1]
}

// closesRole reports whether st belongs to the sync pass's closeRoles: the warp
// number computed into its scratch register, compared, and the guarded barrier.
func closesRole(st ptx.Stmt) bool {
	in, ok := st.(*ptx.Instr)
	if !ok {
		return false
	}
	switch in.Op {
	case "bar.sync":
		return in.Guard != ""
	case "mov.u32", "shr.u32", "sub.s32", "setp.lt.u32":
		return in.Guard == ""
	}
	return false
}

// instrAt is body[i] if it is an instruction.
func instrAt(body []ptx.Stmt, i int) (*ptx.Instr, bool) {
	if i < 0 || i >= len(body) {
		return nil, false
	}
	in, ok := body[i].(*ptx.Instr)
	return in, ok
}

func checkSyncBody(f *fn, body []ptx.Stmt) error {
	type state struct {
		groups                   []*ir.Value
		waited, plain, readSince map[*ir.Value]bool
		wrote                    bool // a commit or write since the innermost loop began
		pipelined                bool // the innermost loop is pipelined
	}
	fresh := func() state {
		return state{waited: map[*ir.Value]bool{}, plain: map[*ir.Value]bool{}, readSince: map[*ir.Value]bool{}}
	}
	s := fresh()
	clone := func(x state) state {
		return state{append([]*ir.Value(nil), x.groups...), maps.Clone(x.waited), maps.Clone(x.plain), maps.Clone(x.readSince), x.wrote, x.pipelined}
	}
	// In a role's region the state is the role's own; a CTA barrier clears them all.
	role := ""
	var all state
	roles := map[string]state{}
	held := map[string]bool{} // the role holds its ring slot (acquired, not released)
	handoff := func(v *ir.Value) bool {
		p := f.PipeTile(ir.StorageOf(v))
		return p != nil && p.Handoff
	}
	// HandoffThreads is the thread count of the ring barriers role r meets on.
	HandoffThreads := func(r string) ptx.Operand {
		for _, p := range f.Roles.Handoffs {
			if p.Producer == r || p.Consumer == r {
				return f.HandoffThreads(p)
			}
		}
		return ptx.Imm(-1)
	}
	needSlot := func(v *ir.Value) error {
		if role != "" && v != nil && handoff(v) && !held[role] {
			return fmt.Errorf("role %s touches ring tile %s without holding its slot (no bar.sync on the slot's barrier before, or after its release)", role, ir.StorageOf(v))
		}
		return nil
	}
	var loops []state // the state at each enclosing loop's entry
	trace := f.syncTrace
	event := func(ev decision.SyncEvent, at int) error {
		switch ev.Kind {
		case decision.SyncCommit, decision.SyncWrote, decision.SyncReady, decision.SyncBeforeWrite:
			if err := needSlot(ev.V); err != nil {
				return err
			}
		}
		switch ev.Kind {
		case decision.SyncRoleEnter:
			all, role = s, ev.Role
			if r, ok := roles[ev.Role]; ok {
				s = r
			} else {
				s = fresh()
			}
		case decision.SyncRoleExit:
			roles[ev.Role], s, role = s, all, ""
		case decision.SyncAcquire:
			b, ok := instrAt(body, at-1)
			if !ok || b.Op != "bar.sync" || len(b.Args) != 2 || b.Args[1] != HandoffThreads(ev.Role) {
				return fmt.Errorf("role %s acquires its ring slot without a bar.sync of both roles' threads (%v) on the slot's barrier", ev.Role, HandoffThreads(ev.Role))
			}
			held[ev.Role] = true
		case decision.SyncRelease:
			found := false
			for i := at; i < at+4 && !found; i++ {
				b, ok := instrAt(body, i)
				found = ok && b.Op == "bar.arrive" && len(b.Args) == 2 && b.Args[1] == HandoffThreads(ev.Role)
			}
			if !found || !held[ev.Role] {
				return fmt.Errorf("role %s releases a ring slot it does not hold, or without a bar.arrive of both roles' threads (%v)", ev.Role, HandoffThreads(ev.Role))
			}
			if len(s.groups) > 0 || len(s.waited) > 0 || len(s.plain) > 0 {
				return fmt.Errorf("role %s releases its ring slot with writes not complete behind its barrier", ev.Role)
			}
			held[ev.Role] = false
		case decision.SyncPipeTop:
			// The stages issued ahead are the only groups a pipelined iteration
			// leaves in flight, and they are newer than every group tracked here:
			// its wait_group N-2 completes those, and its barrier must follow.
			// (Between the two, the sync pass may close roles' accesses: closeRoles.)
			j := at - 2
			for j > 0 && closesRole(body[j]) {
				j--
			}
			w, ok1 := instrAt(body, j)
			b, ok2 := instrAt(body, at-1)
			if !ok1 || !ok2 || w.Op != "cp.async.wait_group" || w.Args[0] != ptx.Imm(ev.N) || !f.scopeBarrier(b, role) {
				return fmt.Errorf("a pipelined iteration does not start with cp.async.wait_group %d; bar.sync 0", ev.N)
			}
			s.groups = nil
			s.pipelined = true
		case decision.SyncCommit:
			s.groups = append(s.groups, ev.V)
			s.wrote = true
		case decision.SyncWrote:
			s.plain[ev.V] = true
			s.wrote = true
		case decision.SyncReady:
			v := ir.StorageOf(ev.V)
			for _, g := range s.groups {
				if g == v {
					return fmt.Errorf("%s is read before a cp.async.wait_group covers the group that fills it", v)
				}
			}
			if s.waited[v] || s.plain[v] {
				return fmt.Errorf("%s is read with no bar.sync after its last write", v)
			}
		case decision.SyncRead:
			s.readSince[ir.StorageOf(ev.V)] = true
		case decision.SyncBeforeWrite:
			for _, a := range f.Aliases[ev.V] {
				if s.readSince[a] {
					return fmt.Errorf("%s reuses the bytes of %s, which is read with no bar.sync before the write", ev.V, a)
				}
			}
		case decision.SyncLoopEnter:
			loops = append(loops, clone(s))
			s.wrote, s.pipelined = false, false
		case decision.SyncLoopExit:
			// A pipelined body leaves reads and writes to the next iteration's
			// barrier, but none of its own cp.async groups in flight.
			if s.pipelined && len(s.groups) > 0 {
				return fmt.Errorf("a pipelined loop body leaves its own cp.async group of %s in flight at the back edge", s.groups[0])
			}
			if !s.pipelined && s.wrote && (len(s.groups) > 0 || len(s.waited) > 0 || len(s.plain) > 0 || len(s.readSince) > 0) {
				return fmt.Errorf("a loop body writes shared memory but its back edge leaves accesses pending (no wait_group 0; bar.sync 0)")
			}
			// The loop may run no iteration: what holds after it is what held at its
			// entry or at the end of its body.
			entry := loops[len(loops)-1]
			loops = loops[:len(loops)-1]
			maps.Copy(entry.waited, s.waited)
			maps.Copy(entry.plain, s.plain)
			maps.Copy(entry.readSince, s.readSince)
			entry.wrote = entry.wrote || s.wrote
			s = entry
		}
		return nil
	}
	for i := 0; i <= len(body); i++ {
		for len(trace) > 0 && trace[0].at == i {
			if err := event(trace[0].ev, i); err != nil {
				return err
			}
			trace = trace[1:]
		}
		if i == len(body) {
			break
		}
		in, ok := body[i].(*ptx.Instr)
		if !ok {
			continue
		}
		switch in.Op {
		case "cp.async.wait_group":
			n := int(in.Args[0].(ptx.Imm))
			if n < len(s.groups) {
				for _, g := range s.groups[:len(s.groups)-n] {
					s.waited[g] = true
				}
				s.groups = append([]*ir.Value(nil), s.groups[len(s.groups)-n:]...)
			}
		case "bar.sync":
			// Only the scope's barrier orders what the sync pass tracks: every
			// thread of the CTA outside a role's region, the role's threads inside
			// (clearing the role's own hazards); a ring slot's barrier, like
			// bar.arrive, orders nothing here (the slot checks above cover it).
			// A CTA-wide barrier orders everything (the settle a role's exit
			// emits is walked before the exit's event, still in the role's scope).
			if cta := ctaWideBarrier(in, 32*f.Kernel.Warps); cta || f.scopeBarrier(in, role) {
				clear(s.waited)
				clear(s.plain)
				clear(s.readSince)
				if cta {
					clear(roles)
				}
			}
		}
	}
	return nil
}
