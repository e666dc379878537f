package lower

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

// The sync points this pass replaces, and how the emitter leaves them, are in lower/decision/sync.go and lower/emit/syncpoint.go.

// insertSync is the sync pass: barrier and wait insertion.
//
// Requires: the emitted body with its sync points (emit) and f.aliases (smem).
// Guarantees: no sync point is left; every read of a shared array is preceded by
// a cp.async.wait_group covering the group that filled it (all outstanding groups
// in CTAs of waitAllWarps warps or more) and, when any thread wrote it since the
// last barrier, a bar.sync 0; an array that reuses the bytes of another that some
// thread read since the last barrier is written only after a bar.sync 0; a loop
// iteration that wrote shared memory ends with wait_group 0 and bar.sync 0; after
// a loop the hazards are those at its entry joined with those at the end of its
// body (a zero-trip loop leaves the first, a body that only reads the second).
// A pipelined loop's iteration instead starts with cp.async.wait_group N-2 and
// bar.sync 0 (its stage landed and is visible; every read of the slot it
// refills is done) and ends waiting only for the body's own groups, if any:
// the stages issued ahead stay in flight across the back edge. The emitter
// commits those stages without sync points, so a wait the walk counts may see
// fewer groups after the one it waits for than there are, which only makes it
// wait for more, never less.
func insertSync(f *fn) error {
	s := &syncState{f: f, hazardState: newHazardState(), roleStates: map[string]hazardState{}}
	for _, fnc := range f.out.Module.Funcs {
		s.fnc, s.named, s.unclosed, s.scratch, s.lastBar, s.traceFrom = fnc, map[string]bool{}, map[string]bool{}, nil, -1, len(f.syncTrace)
		var saved []hazardState
		for at, st := range fnc.Body {
			c, ok := st.(*ptx.Comment)
			ev, isPoint := f.syncPoints[c]
			if !ok || !isPoint {
				s.out = append(s.out, st)
				s.passed(st)
				continue
			}
			switch ev.Kind {
			case decision.SyncCommit, decision.SyncWrote, decision.SyncRead:
				s.accessed()
			}
			if ev.Kind != decision.SyncReady && ev.Kind != decision.SyncPipeTop && ev.Kind != decision.SyncSettle && ev.Kind != decision.SyncFlush && ev.Kind != decision.SyncPipeDrain {
				s.lastBar = -1 // an access, a loop's or region's edge: the last barrier is needed
			}
			switch ev.Kind {
			case decision.SyncCommit:
				s.outstanding = append(s.outstanding, ev.V)
			case decision.SyncWrote:
				s.plainPending[ev.V] = true
			case decision.SyncReady:
				s.ready(ev.V)
			case decision.SyncRead:
				s.readSince[ir.StorageOf(ev.V)] = true
			case decision.SyncBeforeWrite:
				s.beforeWrite(ev.V)
			case decision.SyncFlush:
				s.flushAll()
			case decision.SyncPipeTop:
				// The groups left in flight are the pipeline's later stages: every
				// group the walk tracks is older (committed before the prologue, or
				// drained at the back edge), so it is complete too.
				s.add(ptx.CpAsyncWaitGroup(ptx.Imm(ev.N)))
				s.outstanding = nil
				s.barrier()
			case decision.SyncPipeDrain:
				// The body's own loads were committed after this iteration's stage:
				// waiting for them waits for everything, but only when one is left.
				if len(s.outstanding) > 0 {
					s.add(ptx.CpAsyncWaitGroup(0))
					for _, v := range s.outstanding {
						s.waited[v] = true
					}
					s.outstanding = nil
				}
			case decision.SyncSettle:
				if s.pending() {
					s.flushAll()
				}
			case decision.SyncRoleEnter:
				// The region's warps go on alone: what every warp did before must be
				// complete and visible first (so the settle precedes the branch).
				// Other roles' hazards are theirs: a role exit outside a split loop
				// settled them, and inside one the ring orders what crosses.
				// A region that touches no shared memory (register constants) needs
				// none of it: what is pending stays pending for every warp after it.
				if s.hazardState.any() && f.regionTouchesShared(fnc.Body[at+1:]) {
					s.flushAll()
				}
				s.allState, s.role = s.hazardState, ev.Role
				if h, ok := s.roleStates[ev.Role]; ok {
					s.hazardState = h
				} else {
					s.hazardState = newHazardState()
				}
			case decision.SyncRoleExit:
				s.roleStates[ev.Role], s.hazardState, s.role = s.hazardState, s.allState, ""
				// Every warp runs on from here, unless the region is a split loop's
				// copy (the other roles' copies run alongside; the loop's end settles
				// them all): settle what the role left pending.
				if ev.N == 0 && s.roleStates[ev.Role].any() {
					s.flushAll()
				}
			case decision.SyncAcquire, decision.SyncRelease:
				// The emitter's bar.sync / bar.arrive hand the slot over; the roles'
				// hazards are their own (checkSync checks the pair is there). The
				// arrival closes the role's accesses as its named barrier does.
				s.named[ev.Role], s.unclosed[ev.Role] = true, false
			case decision.SyncLoopEnter:
				saved = append(saved, s.hazards())
				// From its second iteration on, a loop starts where its body ended: a
				// role with a region in it comes back having used its barrier, and
				// with accesses since (closeRoles).
				for _, r := range f.regionsIn(fnc.Body[at+1:]) {
					s.named[r], s.unclosed[r] = true, true
				}
			case decision.SyncLoopExit:
				// The loop may run no iteration or several: what holds after it is
				// what held at its entry or at the end of its body. (A body that
				// writes shared memory ends flushed, so that is the entry state; a
				// body that only reads leaves its reads pending.)
				entry := saved[len(saved)-1]
				maps.Copy(entry.waited, s.waited)
				maps.Copy(entry.plainPending, s.plainPending)
				maps.Copy(entry.readSince, s.readSince)
				s.restoreHazards(entry)
				saved = saved[:len(saved)-1]
			}
			f.syncTrace = append(f.syncTrace, syncTracePoint{at: len(s.out), ev: ev})
		}
		if len(saved) != 0 {
			return fmt.Errorf("%d loops entered but not left", len(saved))
		}
		fnc.Body, s.out = s.out, nil
	}
	f.syncPoints = nil
	return nil
}

// syncTracePoint is a sync point's event and where it sat in the final body
// (before statement at), kept for checkSync.
type syncTracePoint struct {
	at int
	ev decision.SyncEvent
}

// syncState tracks the shared-memory hazards along the body: cp.async writes not
// yet waited for, plain writes not yet followed by a barrier, and arrays read
// since the last barrier (an array whose bytes are reused must not be overwritten
// before all reads are done).
type syncState struct {
	f   *fn
	out []ptx.Stmt
	hazardState
	// role is the open role region ("" = every warp); there hazardState is the
	// role's own, allState every warp's, and roleStates keeps each role's between
	// its regions (a CTA barrier clears them all).
	role       string
	allState   hazardState
	roleStates map[string]hazardState
	// named: the role's warps have arrived at a named barrier of fewer threads
	// than the CTA; unclosed: they accessed shared memory since their last such
	// arrival. A CTA barrier outside regions first takes, on such a role's warps,
	// the role's barrier (syncState.barrier says why).
	named, unclosed map[string]bool
	fnc             *ptx.Func
	scratch         []ptx.Reg // a b32 and a predicate register of the sync pass's own
	// lastBar is where in out the last CTA barrier is while nothing but register
	// code and waits has followed it in its basic block; -1 otherwise. A barrier
	// emitted then makes it redundant (barrier).
	lastBar   int
	traceFrom int // the first of f.syncTrace's points that are fnc's
}

// passed notes a statement of the emitter's: a label, a branch, a barrier or a
// shared-memory access of its own ends the straight run after the last barrier.
func (s *syncState) passed(st ptx.Stmt) {
	switch st := st.(type) {
	case *ptx.Label:
		s.lastBar = -1
	case *ptx.Instr:
		op := st.Op
		if strings.HasPrefix(op, "bra") || strings.HasPrefix(op, "bar") || strings.HasPrefix(op, "ret") || strings.HasPrefix(op, "exit") ||
			strings.Contains(op, ".shared") || strings.HasPrefix(op, "ldmatrix") || strings.HasPrefix(op, "stmatrix") ||
			strings.HasPrefix(op, "cp.async.") && !strings.HasPrefix(op, "cp.async.wait") {
			s.lastBar = -1
		}
	}
}

// accessed notes a shared access by the open region's role, or by every warp.
func (s *syncState) accessed() {
	if s.role != "" {
		s.unclosed[s.role] = true
		return
	}
	for _, r := range s.f.Kernel.Roles {
		s.unclosed[r.Name] = true
	}
}

// roleBarrier emits role r's named barrier, which closes its warps' accesses.
func (s *syncState) roleBarrier(r string) {
	s.add(s.roleBarSync(r))
	s.named[r], s.unclosed[r] = true, false
}

// closeRoles emits, before a CTA barrier outside regions, the named barrier of
// each role whose warps used one and accessed shared memory since, taken by that
// role's warps only (a guard of the warp number, in registers of the pass's own).
func (s *syncState) closeRoles() {
	for _, r := range s.f.Kernel.Roles {
		if !s.named[r.Name] || !s.unclosed[r.Name] {
			continue
		}
		if s.scratch == nil {
			s.scratch = []ptx.Reg{s.newReg("b32", "%r"), s.newReg("pred", "%p")}
		}
		w, in := s.scratch[0], s.scratch[1]
		s.add(ptx.MovU32(w, ptx.Reg("%tid.x")))
		s.add(ptx.ShrU32(w, w, ptx.Imm(5)))
		if r.First > 0 {
			s.add(ptx.SubS32(w, w, ptx.Imm(r.First)))
		}
		s.add(ptx.SetpLtU32(in, w, ptx.Imm(r.Warps)))
		b := s.roleBarSync(r.Name)
		b.Guard = string(in)
		s.add(b)
		s.unclosed[r.Name] = false
	}
}

// newReg declares one more register of the function's file with prefix p.
func (s *syncState) newReg(typ ptx.Type, p string) ptx.Reg {
	for i := range s.fnc.Regs {
		if d := &s.fnc.Regs[i]; d.Prefix == p {
			d.Count++
			return ptx.Reg(p + strconv.Itoa(d.Count-1))
		}
	}
	s.fnc.Regs = append(s.fnc.Regs, ptx.RegDecl{Type: typ, Prefix: p, Count: 1})
	return ptx.Reg(p + "0")
}

func newHazardState() hazardState {
	return hazardState{waited: map[*ir.Value]bool{}, plainPending: map[*ir.Value]bool{}, readSince: map[*ir.Value]bool{}}
}

// any reports whether anything is pending: a group in flight, a write not behind
// a barrier, a read a later write must wait for.
func (h hazardState) any() bool {
	return len(h.outstanding) > 0 || len(h.waited) > 0 || len(h.plainPending) > 0 || len(h.readSince) > 0
}

// pending reports whether the open scope, or outside a region any role, has
// anything pending.
func (s *syncState) pending() bool {
	if s.hazardState.any() {
		return true
	}
	if s.role == "" {
		for _, h := range s.roleStates {
			if h.any() {
				return true
			}
		}
	}
	return false
}

// hazardState is a copy of the shared-memory hazard tracking.
type hazardState struct {
	outstanding  []*ir.Value        // cp.async groups not yet waited for, oldest first
	waited       map[*ir.Value]bool // cp.async data waited for, not yet behind a barrier
	plainPending map[*ir.Value]bool // written with st.shared since the last barrier
	readSince    map[*ir.Value]bool
}

func (s *syncState) hazards() hazardState {
	return hazardState{append([]*ir.Value(nil), s.outstanding...), maps.Clone(s.waited), maps.Clone(s.plainPending), maps.Clone(s.readSince)}
}

func (s *syncState) restoreHazards(h hazardState) { s.hazardState = h }

func (s *syncState) add(in *ptx.Instr) { s.out = append(s.out, in) }

// roleBarSync is role r's named barrier: bar.sync of its id and its threads.
func (s *syncState) roleBarSync(r string) *ptx.Instr {
	b := s.f.roleBarrier(r)
	return ptx.BarSync(b[0], b[1])
}

// ready makes v's shared bytes readable by every thread: waiting for its cp.async
// group if still outstanding, then a barrier if any thread wrote them since the
// last one.
func (s *syncState) ready(v *ir.Value) {
	v = ir.StorageOf(v)
	for j, w := range s.outstanding {
		if w == v {
			if s.f.Kernel.Warps >= waitAllWarps {
				j = len(s.outstanding) - 1
			}
			s.add(ptx.CpAsyncWaitGroup(ptx.Imm(len(s.outstanding) - j - 1)))
			for _, done := range s.outstanding[:j+1] {
				s.waited[done] = true
			}
			s.outstanding = append([]*ir.Value(nil), s.outstanding[j+1:]...)
			break
		}
	}
	if s.waited[v] || s.plainPending[v] {
		s.barrier()
	}
}

// flushAll makes every shared write visible and orders every access before the
// code that follows (end of a loop iteration).
func (s *syncState) flushAll() {
	inFlight := len(s.outstanding) > 0
	if s.role == "" {
		for _, h := range s.roleStates {
			inFlight = inFlight || len(h.outstanding) > 0
		}
	}
	if inFlight {
		s.add(ptx.CpAsyncWaitGroup(0))
		s.outstanding = nil
	}
	s.barrier()
}

// barrier emits bar.sync 0: every earlier shared access of the CTA is done, and
// every write that its thread has waited for is visible. In a role's region it is
// the role's named barrier, which orders the role's accesses only. Outside regions
// it is first, on the warps of each role that used its named barrier and accessed
// shared memory since, that barrier again (closeRoles): once a warp has arrived at
// a named barrier of fewer threads than the CTA, compute-sanitizer's racecheck
// orders its later accesses before other warps' only through its next arrival at
// one, not through a CTA barrier alone (runs 52-57, issue 29's hazards;
// scripts/proto/named_barrier_race.cu). PTX orders them by the CTA barrier; the
// kernels keep to racecheck's rule so that the tool users run reports nothing,
// and the emulator holds them to it (emu's cta.reaches).
func (s *syncState) barrier() {
	if s.role != "" {
		s.roleBarrier(s.role)
		s.lastBar = -1
	} else {
		s.closeRoles()
		last := s.lastBar
		if last >= 0 {
			// Nothing of the CTA's shared memory was touched since the last barrier,
			// in straight-line code every thread runs: this one orders all it did
			// (and publishes the waits since), so the last one goes.
			s.out = slices.Delete(s.out, last, last+1)
		}
		s.lastBar = len(s.out)
		s.add(ptx.BarSync(ptx.Imm(0)))
		if last >= 0 {
			// The sync points met since (a tile made ready for reads that come
			// later) now stand after this barrier, which took the last one's place.
			for i := s.traceFrom; i < len(s.f.syncTrace); i++ {
				if t := &s.f.syncTrace[i]; t.at > last {
					t.at = len(s.out)
				}
			}
		}
		clear(s.roleStates)
	}
	clear(s.waited)
	clear(s.plainPending)
	clear(s.readSince)
}

// regionTouchesShared reports whether the region starting at body[0] accesses
// shared memory.
func (f *fn) regionTouchesShared(body []ptx.Stmt) bool {
	for _, st := range body {
		c, ok := st.(*ptx.Comment)
		switch ev, isPoint := f.syncPoints[c]; {
		case !ok || !isPoint:
		case ev.Kind == decision.SyncRoleExit:
			return false
		case ev.Kind != decision.SyncRoleEnter:
			return true
		}
	}
	return false
}

// regionsIn lists the roles with a region in the loop whose body starts at body[0].
func (f *fn) regionsIn(body []ptx.Stmt) []string {
	var roles []string
	depth := 0
	for _, st := range body {
		c, ok := st.(*ptx.Comment)
		switch ev, isPoint := f.syncPoints[c]; {
		case !ok || !isPoint:
		case ev.Kind == decision.SyncLoopEnter:
			depth++
		case ev.Kind == decision.SyncLoopExit && depth == 0:
			return roles
		case ev.Kind == decision.SyncLoopExit:
			depth--
		case ev.Kind == decision.SyncRoleEnter && !slices.Contains(roles, ev.Role):
			roles = append(roles, ev.Role)
		}
	}
	return roles
}

// beforeWrite precedes a write of v's shared array: if the bytes were used by
// another array that some thread read since the last barrier, wait for those reads.
func (s *syncState) beforeWrite(v *ir.Value) {
	for _, a := range s.f.Aliases[v] {
		if s.readSince[a] {
			s.out = append(s.out, &ptx.Comment{Text: fmt.Sprintf("%s reuses the bytes of %s", v, a)})
			s.barrier()
			return
		}
	}
}
