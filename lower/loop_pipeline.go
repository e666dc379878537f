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

// A loop whose tiles' addresses read a tile of indices loaded in the same body (a
// candidate tile's pool slots, loaded per tile) issues those index tiles Ahead
// iterations before the tiles (`ahead N`, ir.Op.Ahead): each index tile is a cp.async
// of 4-byte elements into a ring of its own, Stages+Ahead slots, since iteration j's
// body reads index tile j after the copies of tile j read it, and the stage issued
// in iteration j-Ahead-(Stages-1) wrote it. Group g holds index tile g and tile
// g-Ahead; the prologue's first Ahead groups hold indices only, and before each of
// its tiles the prologue waits for that tile's indices (wait_group Ahead-1, then a
// barrier). An iteration waits until min(Stages-2, Ahead-1) groups are in flight. A
// loop of one stage issues only its index tiles ahead, of its iteration's own loads.

// pipelineLoops is the pipeline pass.
//
// Requires: layouts (layout) and staged homes (stage).
// Guarantees: the record's pipelines hold, for every loop with Stages > 1 and at least one
// load it can issue ahead, the loads to issue ahead: rank-2 loads of the loop's own
// body that land in shared memory through cp.async (4-byte chunks or wider), are
// neither staged nor yielded, and whose operands depend only on the induction
// variable, values defined before the loop, scalar or recomputed ops of the body
// and, unless the loop says `ahead 0`, index tiles (no other load, no loop-carried
// value); the index tiles such tiles read (in a loop of one stage, its own loads),
// issued Ahead iterations ahead (the loop's, or max(Stages-1, 1)); its notPipelined says for each other load of such a loop,
// and for such a loop without any, why not.
func pipelineLoops(f *fn) decision.PipelineRecord {
	rec := decision.PipelineRecord{Pipelines: map[*ir.Op]*decision.LoopPipeline{}, ByTile: map[*ir.Value]*decision.LoopPipeline{}, ByIndex: map[*ir.Value]*decision.LoopPipeline{}, NotPipelined: map[*ir.Op]string{}}
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		// A loop of one stage issues nothing ahead but, where its loads read index
		// tiles, those (its record then has no tiles).
		one := o.Stages <= 1
		if o.Kind != ir.OpFor || one && o.Ahead == ir.NoAhead {
			return
		}
		if ir.SplitByRoles(o) {
			if !one {
				rec.NotPipelined[o] = "split by roles: the producer role runs ahead through the handoff ring instead"
			}
			return
		}
		p := &decision.LoopPipeline{Loop: o, Stages: max(o.Stages, 1)}
		deps := map[*ir.Op]bool{}
		reads := map[*ir.Value]bool{}
		indices := f.indexTiles(o)
		used := map[*ir.Value]bool{}
		for _, bo := range o.Body.Ops {
			if bo.Kind != ir.OpLoad || bo.Result().Type.Rank() != 2 {
				continue
			}
			why := f.whyNotPipelined(o, bo, deps, reads, indices, used)
			switch {
			case one:
			case why != "":
				rec.NotPipelined[bo] = why
			default:
				p.Tiles = append(p.Tiles, bo.Result())
			}
		}
		if one {
			if len(used) == 0 {
				return
			}
			clear(deps)
			clear(reads)
		} else if len(p.Tiles) == 0 {
			rec.NotPipelined[o] = "no load to issue ahead"
			return
		}
		indexDeps := map[*ir.Op]bool{}
		for _, bo := range o.Body.Ops {
			if len(bo.Results) == 1 && used[bo.Result()] {
				p.Indices = append(p.Indices, bo.Result())
				f.whyNotPipelined(o, bo, indexDeps, reads, nil, nil)
			}
		}
		if len(p.Indices) > 0 {
			p.Ahead = o.Ahead
			if p.Ahead == 0 {
				p.Ahead = max(o.Stages-1, 1)
			}
		}
		for _, bo := range o.Body.Ops {
			if deps[bo] {
				p.Deps = append(p.Deps, bo)
			}
			if indexDeps[bo] {
				p.IndexDeps = append(p.IndexDeps, bo)
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
		for _, x := range p.Indices {
			rec.ByIndex[x] = p
		}
	})
	return rec
}

// unhonouredAhead refuses an `ahead L` (L >= 1) the pipeline could not honour: a
// loop whose loads read no index tile (their indices are loaded before the loop, or
// not through a rank-1 load of 4-byte elements of its body), or whose loads cannot be
// issued ahead, naming the loop and why, and what would fit (no clause, or ahead 0).
func (f *fn) unhonouredAhead() error {
	var err error
	ir.WalkOps(f.Kernel.Body, func(o *ir.Op) {
		if err != nil || o.Kind != ir.OpFor || o.Ahead < 1 {
			return
		}
		if p := f.Pipeline.Pipelines[o]; p != nil && p.Ahead == o.Ahead {
			return
		}
		why := "no load of its body reads an index tile (a rank-1 load of 4-byte elements of the body, staged in shared memory, whose own address the induction variable decides)"
		if w, ok := f.Pipeline.NotPipelined[o]; ok {
			why = w
		}
		err = ir.ErrorAt(o, fmt.Errorf("ahead %d: the loop at %s cannot issue index tiles ahead: %s; leave the clause out or write ahead 0", o.Ahead, o.Body.Args[0], why))
	})
	return err
}

// indexTiles are the loads of loop's body that may be issued ahead as index tiles
// (unless the loop says `ahead 0`): rank-1 loads of 4-byte elements the stage pass
// gave a shared home, whose own operands could be issued ahead.
func (f *fn) indexTiles(loop *ir.Op) map[*ir.Value]bool {
	out := map[*ir.Value]bool{}
	if loop.Ahead == ir.NoAhead {
		return out
	}
	for _, bo := range loop.Body.Ops {
		if bo.Kind != ir.OpLoad || len(bo.Results) != 1 {
			continue
		}
		v := bo.Result()
		if _, staged := f.Staged[v]; !staged || v.Type.Rank() != 1 || v.Type.Elem.Size() != 4 || f.Layouts[v].Kind != decision.Expr {
			continue
		}
		if f.whyNotPipelined(loop, bo, map[*ir.Op]bool{}, map[*ir.Value]bool{}, nil, nil) == "" {
			out[v] = true
		}
	}
	return out
}

// whyNotPipelined says why the load ld of loop's body cannot be issued ahead ("" if
// it can), adding the body's scalar ops its operands need to deps and the shared
// arrays defined before the loop that they read to reads. Its address may read the
// index tiles in indices, which it adds to used; ld itself may be one of them
// (indices nil: its own operands are checked).
func (f *fn) whyNotPipelined(loop, ld *ir.Op, deps map[*ir.Op]bool, reads map[*ir.Value]bool, indices, used map[*ir.Value]bool) string {
	v := ld.Result()
	_, staged := f.Staged[v]
	if l := f.Layouts[v]; l.Kind != decision.Shared && !(staged && v.Type.Rank() == 1) {
		return "not copied to shared memory (" + l.String() + ")"
	}
	if staged && v.Type.Rank() != 1 {
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
		case indices[a]:
			used[a] = true // issued ahead with its own operands
		case d.Kind == ir.OpLoad:
			why = "address depends on the load " + a.String()
			if _, ok := f.Staged[a]; ok && a.Type.Rank() == 1 && loop.Ahead == ir.NoAhead {
				why += " (ahead 0)"
			}
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
	if v.Type.Rank() == 1 {
		// An index tile: one 4-byte cp.async per element.
	} else if w := f.chunkBytes(ir.MemOperands(ld)); w < 4 {
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
	if p := f.Pipeline.Pipelines[o]; p != nil && len(p.Tiles) == 0 {
		idx := make([]string, len(p.Indices))
		for i, x := range p.Indices {
			idx[i] = x.String()
		}
		return fmt.Sprintf("one stage, its loads' indices issued %d iterations before them: %s", p.Ahead, strings.Join(idx, " "))
	}
	if p := f.Pipeline.Pipelines[o]; p != nil {
		names := make([]string, len(p.Tiles))
		for i, t := range p.Tiles {
			names[i] = t.String()
		}
		s := fmt.Sprintf("pipeline: %d stages, issued %d iterations ahead: %s", p.Stages, p.Stages-1, strings.Join(names, " "))
		if p.Ahead > 0 {
			idx := make([]string, len(p.Indices))
			for i, x := range p.Indices {
				idx[i] = x.String()
			}
			s += fmt.Sprintf("; their indices %d iterations before them: %s", p.Ahead, strings.Join(idx, " "))
		}
		return s
	}
	if why, ok := f.Pipeline.NotPipelined[o]; ok {
		return "not pipelined: " + why
	}
	if len(o.Results) == 1 && f.Pipeline.ByIndex[o.Result()] != nil {
		p := f.Pipeline.ByIndex[o.Result()]
		return fmt.Sprintf("index tile issued %d iterations before its tiles: ring of %d slots", p.Ahead, p.IndexSlots())
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
		if p.Stages > ir.MaxStages || p.Stages != max(loop.Stages, 1) || p.Stages < 2 && (len(p.Tiles) > 0 || p.Ahead == 0) {
			return fmt.Errorf("pipeline check: loop at %s has %d stages (%d tiles issued ahead, indices %d ahead), asked for %d", loop.Body.Args[0], p.Stages, len(p.Tiles), p.Ahead, loop.Stages)
		}
		indices := map[*ir.Value]bool{}
		for _, x := range p.Indices {
			if x.Def == nil || x.Def.Kind != ir.OpLoad || x.Type.Rank() != 1 || f.Pipeline.ByIndex[x] != p {
				return fmt.Errorf("pipeline check: %s is no index load of the loop at %s", x, loop.Body.Args[0])
			}
			if why := f.whyNotPipelined(loop, x.Def, map[*ir.Op]bool{}, map[*ir.Value]bool{}, nil, nil); why != "" {
				return fmt.Errorf("pipeline check: index tile %s is issued ahead but %s", x, why)
			}
			indices[x] = true
		}
		if (len(p.Indices) > 0) != (p.Ahead > 0) || p.Ahead > ir.MaxAhead || loop.Ahead > 0 && p.Ahead > 0 && p.Ahead != loop.Ahead {
			return fmt.Errorf("pipeline check: loop at %s issues %d index tiles %d iterations ahead, asked for ahead %d", loop.Body.Args[0], len(p.Indices), p.Ahead, loop.Ahead)
		}
		used := map[*ir.Value]bool{}
		for _, t := range p.Tiles {
			if f.Layouts[t].Kind != decision.Shared || t.Def == nil || t.Def.Kind != ir.OpLoad || f.Pipeline.ByTile[t] != p {
				return fmt.Errorf("pipeline check: %s is no cp.async load of the loop at %s", t, loop.Body.Args[0])
			}
			if why := f.whyNotPipelined(loop, t.Def, map[*ir.Op]bool{}, map[*ir.Value]bool{}, indices, used); why != "" {
				return fmt.Errorf("pipeline check: %s is issued ahead but %s", t, why)
			}
		}
		if len(p.Tiles) == 0 { // one stage: the loads that read the indices are the body's own
			for _, bo := range loop.Body.Ops {
				if bo.Kind == ir.OpLoad && bo.Result().Type.Rank() == 2 {
					f.whyNotPipelined(loop, bo, map[*ir.Op]bool{}, map[*ir.Value]bool{}, indices, used)
				}
			}
		}
		if len(used) != len(indices) {
			return fmt.Errorf("pipeline check: loop at %s issues %d index tiles ahead; its tiles read %d", loop.Body.Args[0], len(indices), len(used))
		}
	}
	return nil
}
