package lower

import (
	"fmt"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
)

// A pipelined loop (`for ... stages N`, ir.Op.Stages) issues the cp.async copies
// of iteration j+N-1 while iteration j computes. Each pipelined tile gets a ring
// of N slots in shared memory (iteration j reads slot j mod N); a prologue issues
// iterations 0..N-2 before the loop, one cp.async group per iteration (empty past
// the end, so the count of groups in flight is the same in every iteration). An
// iteration starts with cp.async.wait_group N-2 (its own group complete, the N-2
// issued after it still in flight) and one bar.sync 0, which makes the slot
// visible to every thread and also orders every read of the slot the previous
// iteration used before the copies that now refill it; then it issues iteration
// j+N-1 into that slot and computes. The back edge does not flush the pipeline:
// it waits only for the body's other cp.async groups (loads that are not
// pipelined), and the next iteration's barrier orders everything else.

// pipelineLoops is the pipeline pass.
//
// Requires: layouts (layout) and staged homes (stage).
// Guarantees: the record's pipelines hold, for every loop with Stages > 1 and at least one
// load it can issue ahead, the loads to issue ahead: rank-2 loads of the loop's own
// body that land in shared memory through cp.async (4-byte chunks or wider), are
// neither staged nor yielded, and whose operands depend only on the induction
// variable, values defined before the loop and scalar or recomputed ops of the
// body (no load, no loop-carried value); its notPipelined says for each other
// load of such a loop, and for such a loop without any, why not.
func pipelineLoops(f *fn) decision.PipelineRecord {
	rec := decision.PipelineRecord{Pipelines: map[*ir.Op]*decision.LoopPipeline{}, ByTile: map[*ir.Value]*decision.LoopPipeline{}, NotPipelined: map[*ir.Op]string{}}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if o.Kind != ir.OpFor || o.Stages <= 1 {
			return
		}
		if ir.SplitByRoles(o) {
			rec.NotPipelined[o] = "split by roles: the producer role runs ahead through the handoff ring instead"
			return
		}
		p := &decision.LoopPipeline{Loop: o, Stages: o.Stages}
		deps := map[*ir.Op]bool{}
		reads := map[*ir.Value]bool{}
		for _, bo := range o.Body.Ops {
			if bo.Kind != ir.OpLoad || bo.Result().Type.Rank() != 2 {
				continue
			}
			why := f.whyNotPipelined(o, bo, deps, reads)
			if why != "" {
				rec.NotPipelined[bo] = why
				continue
			}
			p.Tiles = append(p.Tiles, bo.Result())
		}
		if len(p.Tiles) == 0 {
			rec.NotPipelined[o] = "no load to issue ahead"
			return
		}
		for _, bo := range o.Body.Ops {
			if deps[bo] {
				p.Deps = append(p.Deps, bo)
			}
		}
		ir.WalkOps(f.Kernel.Body, func(x *ir.Op) {
			for _, r := range x.Results {
				if reads[r] {
					p.Reads = append(p.Reads, r)
				}
			}
		})
		rec.Pipelines[o] = p
		for _, t := range p.Tiles {
			rec.ByTile[t] = p
		}
	})
	return rec
}

// whyNotPipelined says why the load ld of loop's body cannot be issued ahead ("" if
// it can), adding the body's scalar ops its operands need to deps and the shared
// arrays defined before the loop that they read to reads.
func (f *fn) whyNotPipelined(loop, ld *ir.Op, deps map[*ir.Op]bool, reads map[*ir.Value]bool) string {
	v := ld.Result()
	if l := f.Layouts[v]; l.Kind != decision.Shared {
		return "not copied to shared memory (" + l.String() + ")"
	}
	if _, ok := f.Staged[v]; ok {
		return "staged"
	}
	for _, y := range loop.Body.Yield {
		if y == v {
			return "yielded by the loop"
		}
	}
	inBody := map[*ir.Value]bool{}
	for _, bo := range loop.Body.Ops {
		for _, r := range bo.Results {
			inBody[r] = true
		}
	}
	carried := map[*ir.Value]bool{}
	for _, a := range loop.Body.Args[1:] {
		carried[a] = true
	}
	seen := map[*ir.Value]bool{}
	var found []*ir.Op
	var shared []*ir.Value
	var why string
	var visit func(a *ir.Value)
	visit = func(a *ir.Value) {
		if seen[a] || why != "" {
			return
		}
		seen[a] = true
		switch {
		case carried[a]:
			why = "address depends on the loop-carried " + a.String()
			return
		case !inBody[a]:
			// The induction variable, or defined before the loop: evaluated
			// again where the stage is issued if recomputed, read from shared
			// memory if it lives there.
			if _, ok := f.SharedHome(a); ok {
				shared = append(shared, ir.StorageOf(a))
			} else if a.Def != nil && f.Layouts[a].Kind == decision.Expr {
				for _, x := range a.Def.Args {
					visit(x)
				}
			}
			return
		}
		d := a.Def
		switch l := f.Layouts[a]; {
		case d.Kind == ir.OpLoad:
			why = "address depends on the load " + a.String()
		case d.Kind == ir.OpFor || d.Kind == ir.OpDot || d.Kind == ir.OpReduce:
			why = fmt.Sprintf("address depends on %s (%s)", a, d.Kind)
		case l.Kind != decision.Scalar && l.Kind != decision.Expr:
			why = fmt.Sprintf("address depends on %s, held in %v", a, l)
		default:
			if _, ok := f.Staged[a]; ok {
				why = "address depends on the staged " + a.String()
				return
			}
			if l.Kind == decision.Scalar {
				found = append(found, d)
			}
			for _, x := range d.Args {
				visit(x)
			}
		}
	}
	for _, a := range ld.Args {
		visit(a)
	}
	if why != "" {
		return why
	}
	if w := f.chunkBytes(ir.MemOperands(ld)); w < 4 {
		return fmt.Sprintf("rows only %d-byte aligned: element copies, not cp.async", w)
	}
	for _, d := range found {
		deps[d] = true
	}
	for _, v := range shared {
		reads[v] = true
	}
	return ""
}

// pipelineNote is the dump annotation of a loop or load the pass decided about.
func (f *fn) pipelineNote(o *ir.Op) string {
	if p := f.Pipeline.Pipelines[o]; p != nil {
		names := make([]string, len(p.Tiles))
		for i, t := range p.Tiles {
			names[i] = t.String()
		}
		return fmt.Sprintf("pipeline: %d stages, issued %d iterations ahead: %s", p.Stages, p.Stages-1, strings.Join(names, " "))
	}
	if why, ok := f.Pipeline.NotPipelined[o]; ok {
		return "not pipelined: " + why
	}
	if len(o.Results) == 1 && f.PipeTile(o.Result()) != nil {
		p := f.PipeTile(o.Result())
		if p.Handoff {
			return fmt.Sprintf("handed from role %s to %s: ring of %d slots, %d bytes apart", p.Producer, p.Consumer, p.Stages, f.SlotBytes[p])
		}
		if f.SlotBytes[p] > 0 {
			return fmt.Sprintf("pipelined: ring of %d slots, %d bytes apart", p.Stages, f.SlotBytes[p])
		}
		return fmt.Sprintf("pipelined: ring of %d slots", p.Stages)
	}
	return ""
}

// checkPipelines checks what pipeline guarantees.
func checkPipelines(f *fn) error {
	if err := checkStaging(f); err != nil {
		return err
	}
	for loop, p := range f.Pipeline.Pipelines {
		if p.Stages < 2 || p.Stages > ir.MaxStages || p.Stages != loop.Stages {
			return fmt.Errorf("pipeline check: loop at %s has %d stages, asked for %d", loop.Body.Args[0], p.Stages, loop.Stages)
		}
		for _, t := range p.Tiles {
			if f.Layouts[t].Kind != decision.Shared || t.Def == nil || t.Def.Kind != ir.OpLoad || f.Pipeline.ByTile[t] != p {
				return fmt.Errorf("pipeline check: %s is no cp.async load of the loop at %s", t, loop.Body.Args[0])
			}
			if why := f.whyNotPipelined(loop, t.Def, map[*ir.Op]bool{}, map[*ir.Value]bool{}); why != "" {
				return fmt.Errorf("pipeline check: %s is issued ahead but %s", t, why)
			}
		}
	}
	return nil
}
