package lower

import (
	"fmt"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/target"
)

// FillSchedule returns a copy of k in which every dot states its schedule
// (ir.DotSchedule): the one k gives it, or the one the layout pass chooses for t;
// and every pipelined loop that issues index tiles ahead, how far (ir.Op.Ahead).
// The copy compiles to the same PTX as k, and its text form is what dump -ir
// prints, so a person can change one clause and feed the kernel back.
func FillSchedule(k *ir.Kernel, t target.Target) (*ir.Kernel, error) {
	// Measure's compilation: the decisions are complete after smem (which may send
	// the layout back without split reductions), and a kernel over t's shared
	// memory still gets its schedule stated.
	f, _, err := compile(k, t, Options{After: "smem"}, true)
	if err != nil {
		return nil, err
	}
	out, err := ir.Parse(ir.Print(k))
	if err != nil {
		return nil, fmt.Errorf("lower: copying kernel: %v", err)
	}
	var dots []*ir.Op
	ir.WalkOps(out.Body, func(o *ir.Op) {
		if o.Kind == ir.OpDot {
			dots = append(dots, o)
		}
	})
	if len(dots) != len(f.dotOrder) {
		return nil, fmt.Errorf("lower: %s: %d dots in the copy, %d compiled", k.Name, len(dots), len(f.dotOrder))
	}
	for i, d := range dots {
		s := f.dotSchedule(f.dotOrder[i])
		d.Dot = &s
	}
	loops := func(k *ir.Kernel) []*ir.Op {
		var out []*ir.Op
		ir.WalkOps(k.Body, func(o *ir.Op) {
			if o.Kind == ir.OpFor {
				out = append(out, o)
			}
		})
		return out
	}
	compiled, copied := loops(f.Kernel), loops(out)
	if len(compiled) != len(copied) {
		return nil, fmt.Errorf("lower: %s: %d loops in the copy, %d compiled", k.Name, len(copied), len(compiled))
	}
	for i, o := range compiled {
		if p := f.Pipeline.Pipelines[o]; p != nil && p.Ahead > 0 {
			copied[i].Ahead = p.Ahead
		}
	}
	if err := ir.Verify(out); err != nil {
		return nil, fmt.Errorf("lower: %s: the filled-in schedule: %v", k.Name, err)
	}
	return out, nil
}

// FillScheduleProgram is FillSchedule for each kernel of p.
func FillScheduleProgram(p *ir.Program, t target.Target) (*ir.Program, error) {
	q := *p
	q.Kernels = make([]*ir.Kernel, len(p.Kernels))
	for i, k := range p.Kernels {
		fk, err := FillSchedule(k, t)
		if err != nil {
			return nil, err
		}
		q.Kernels[i] = fk
	}
	return &q, nil
}

// dotSchedule is the schedule the layout pass gave dot o.
func (f *fn) dotSchedule(o *ir.Op) ir.DotSchedule {
	l := f.Layouts[o.Result()]
	s := ir.DotSchedule{Warps: [2]int{l.WM, l.WN}, SplitK: f.SplitK[o], AHome: ir.HomeShared, Atom: "m16n8k16"}
	switch {
	case f.AInRegisters(o) || o.Dot != nil && o.Dot.AHome == ir.HomeRegs:
		s.AHome = ir.HomeRegs
	case o.Dot != nil && o.Dot.AHome == ir.HomeComputed:
		s.AHome = ir.HomeComputed
	}
	if decision.StatesComputed(o, 1) {
		s.BHome = ir.HomeComputed
		s.KPerm = o.Dot != nil && o.Dot.KPerm
	}
	if l.Rep > 1 {
		s.Replicate = l.Rep
	}
	return s
}
