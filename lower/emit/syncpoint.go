package emit

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/ptx"
)

// sync leaves a sync point in the body.
func (e *emitter) sync(k decision.SyncKind, v *ir.Value) {
	text := "sync: " + decision.SyncKindNames[k]
	if v != nil {
		text += " " + v.String()
	}
	c := &ptx.Comment{Text: text}
	e.body = append(e.body, c)
	e.points[c] = decision.SyncEvent{Kind: k, V: v}
}

// pipeTop leaves the sync point that starts a pipelined iteration: wait until at
// most inFlight groups are pending, then a barrier.
func (e *emitter) pipeTop(inFlight int) {
	c := &ptx.Comment{Text: fmt.Sprintf("sync: %s %d", decision.SyncKindNames[decision.SyncPipeTop], inFlight)}
	e.body = append(e.body, c)
	e.points[c] = decision.SyncEvent{Kind: decision.SyncPipeTop, N: inFlight}
}

// syncRole leaves a sync point about role r; concurrent marks the regions of a
// split loop's copies, which run alongside each other.
func (e *emitter) syncRole(k decision.SyncKind, r string, concurrent bool) {
	text := "sync: " + decision.SyncKindNames[k] + " " + r
	n := 0
	if concurrent {
		text += " (concurrent)"
		n = 1
	}
	c := &ptx.Comment{Text: text}
	e.body = append(e.body, c)
	e.points[c] = decision.SyncEvent{Kind: k, Role: r, N: n}
}

func (e *emitter) ready(v *ir.Value)       { e.sync(decision.SyncReady, v) }
func (e *emitter) noteRead(v *ir.Value)    { e.sync(decision.SyncRead, v) }
func (e *emitter) beforeWrite(v *ir.Value) { e.sync(decision.SyncBeforeWrite, v) }
func (e *emitter) flushAll()               { e.sync(decision.SyncFlush, nil) }
