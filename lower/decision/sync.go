package decision

import "github.com/ptxgen/ptxgen/ir"

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

// SyncKind is what happens at a sync point.
type SyncKind uint8

const (
	SyncCommit      SyncKind = iota // a cp.async group filling v was committed
	SyncWrote                       // v was written with st.shared
	SyncReady                       // v is about to be read: wait and barrier as needed
	SyncRead                        // v was read
	SyncBeforeWrite                 // v's bytes are about to be written
	SyncFlush                       // every access done and visible (end of a loop iteration)
	SyncLoopEnter                   // a loop starts: save the hazards
	SyncLoopExit                    // the loop ended: its entry hazards hold again
	SyncPipeTop                     // a pipelined iteration starts: wait_group n (its stage landed), then a barrier
	SyncPipeDrain                   // a pipelined iteration ends: wait for the body's own groups, not the pipeline's
	SyncSettle                      // every warp is here: wait and barrier if anything is pending
	SyncRoleEnter                   // a role's region starts (before its branch): its hazards are its own
	SyncRoleExit                    // a role's region ended (after its label)
	SyncAcquire                     // a role took its ring slot (after the bar.sync)
	SyncRelease                     // a role hands its ring slot over (before the bar.arrive)
)

var SyncKindNames = [...]string{"commit", "wrote", "ready", "read", "before-write", "flush", "loop-enter", "loop-exit", "pipeline-top", "pipeline-drain", "settle", "role-enter", "role-exit", "acquire", "release"}

type SyncEvent struct {
	Kind SyncKind
	V    *ir.Value
	N    int    // syncPipeTop: the groups left in flight; syncRole*: 1 for a split loop's copy
	Role string // syncRole*, syncAcquire, syncRelease
}
