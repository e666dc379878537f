package lower

import (
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
)

// ready makes v's shared bytes readable by every thread: waiting for its cp.async
// group if still outstanding, then a barrier if any thread wrote them since the
// last one.
func (e *emitter) ready(v *ir.Value) {
	v = storageOf(v)
	for j, w := range e.outstanding {
		if w == v {
			if e.f.k.Warps >= waitAllWarps {
				j = len(e.outstanding) - 1
			}
			e.ins("cp.async.wait_group", ptx.Imm(len(e.outstanding)-j-1))
			for _, done := range e.outstanding[:j+1] {
				e.waited[done] = true
			}
			e.outstanding = append([]*ir.Value(nil), e.outstanding[j+1:]...)
			break
		}
	}
	if e.waited[v] || e.plainPending[v] {
		e.barrier()
	}
}

// flushAll makes every shared write visible and orders every access before the
// code that follows (end of a loop iteration).
func (e *emitter) flushAll() {
	if len(e.outstanding) > 0 {
		e.ins("cp.async.wait_group", ptx.Imm(0))
		e.outstanding = nil
	}
	e.barrier()
}

// barrier emits bar.sync 0: every earlier shared access of the CTA is done, and
// every write that its thread has waited for is visible.
func (e *emitter) barrier() {
	e.ins("bar.sync", ptx.Imm(0))
	clear(e.waited)
	clear(e.plainPending)
	clear(e.readSince)
}

// storageOf is the value that owns v's shared bytes (a transpose is a view).
func storageOf(v *ir.Value) *ir.Value {
	for v.Def != nil && v.Def.Kind == ir.OpTrans {
		v = v.Def.Args[0]
	}
	return v
}

// beforeWrite is called before writing v's shared array: if the bytes were used by
// another array that some thread read since the last barrier, wait for those reads.
func (e *emitter) beforeWrite(v *ir.Value) {
	for _, a := range e.f.aliases[v] {
		if e.readSince[a] {
			e.comment("%s reuses the bytes of %s", v, a)
			e.barrier()
			return
		}
	}
}

func (e *emitter) noteRead(v *ir.Value) { e.readSince[storageOf(v)] = true }
