package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
)

// Shared-memory writes become visible to the other threads in two steps: a
// cp.async's data once its issuing thread waits for its group, and any write once
// a barrier follows. Every load to shared memory commits its own cp.async group,
// so a read of one tile waits only for the groups up to that tile's
// (cp.async.wait_group N), and the gathers issued after it stay in flight.
//
// The emitter does not decide any of this: it leaves a sync point (a marked
// comment, visible in `dump -after emit`) wherever it commits a group, writes,
// reads or is about to write a shared array, at the end of a loop iteration that
// wrote shared memory, and around each loop. The sync pass then walks the body in
// order and replaces each point with the waits and barriers it needs.

// syncKind is what happens at a sync point.
type syncKind uint8

const (
	syncCommit      syncKind = iota // a cp.async group filling v was committed
	syncWrote                       // v was written with st.shared
	syncReady                       // v is about to be read: wait and barrier as needed
	syncRead                        // v was read
	syncBeforeWrite                 // v's bytes are about to be written
	syncFlush                       // every access done and visible (end of a loop iteration)
	syncLoopEnter                   // a loop starts: save the hazards
	syncLoopExit                    // the loop ended: its entry hazards hold again
	syncPipeTop                     // a pipelined iteration starts: wait_group n (its stage landed), then a barrier
	syncPipeDrain                   // a pipelined iteration ends: wait for the body's own groups, not the pipeline's
	syncSettle                      // every warp is here: wait and barrier if anything is pending
	syncRoleEnter                   // a role's region starts (before its branch): its hazards are its own
	syncRoleExit                    // a role's region ended (after its label)
	syncAcquire                     // a role took its ring slot (after the bar.sync)
	syncRelease                     // a role hands its ring slot over (before the bar.arrive)
)

var syncKindNames = [...]string{"commit", "wrote", "ready", "read", "before-write", "flush", "loop-enter", "loop-exit", "pipeline-top", "pipeline-drain", "settle", "role-enter", "role-exit", "acquire", "release"}

// syncTracePoint is a sync point's event and where it sat in the final body
// (before statement at), kept for checkSync.
type syncTracePoint struct {
	at int
	ev syncEvent
}

type syncEvent struct {
	kind syncKind
	v    *ir.Value
	n    int    // syncPipeTop: the groups left in flight; syncRole*: 1 for a split loop's copy
	role string // syncRole*, syncAcquire, syncRelease
}

// sync leaves a sync point in the body.
func (e *emitter) sync(k syncKind, v *ir.Value) {
	text := "sync: " + syncKindNames[k]
	if v != nil {
		text += " " + v.String()
	}
	c := &ptx.Comment{Text: text}
	e.body = append(e.body, c)
	e.f.syncPoints[c] = syncEvent{kind: k, v: v}
}

// pipeTop leaves the sync point that starts a pipelined iteration: wait until at
// most inFlight groups are pending, then a barrier.
func (e *emitter) pipeTop(inFlight int) {
	c := &ptx.Comment{Text: fmt.Sprintf("sync: %s %d", syncKindNames[syncPipeTop], inFlight)}
	e.body = append(e.body, c)
	e.f.syncPoints[c] = syncEvent{kind: syncPipeTop, n: inFlight}
}

// syncRole leaves a sync point about role r; concurrent marks the regions of a
// split loop's copies, which run alongside each other.
func (e *emitter) syncRole(k syncKind, r string, concurrent bool) {
	text := "sync: " + syncKindNames[k] + " " + r
	n := 0
	if concurrent {
		text += " (concurrent)"
		n = 1
	}
	c := &ptx.Comment{Text: text}
	e.body = append(e.body, c)
	e.f.syncPoints[c] = syncEvent{kind: k, role: r, n: n}
}

func (e *emitter) ready(v *ir.Value)       { e.sync(syncReady, v) }
func (e *emitter) noteRead(v *ir.Value)    { e.sync(syncRead, v) }
func (e *emitter) beforeWrite(v *ir.Value) { e.sync(syncBeforeWrite, v) }
func (e *emitter) flushAll()               { e.sync(syncFlush, nil) }
