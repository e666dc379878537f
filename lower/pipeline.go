// Package lower turns tile-IR kernels into PTX through a named pipeline of passes,
// one decision each (Passes): verify, legalize (pad to instruction granules and
// mask the padding), rowreduce, layout (where each tile lives), stage (shared
// homes), pipeline (loads a pipelined loop issues ahead), roles (handoffs between
// warp roles), smem (shared-memory allocation), budget (.maxnreg and copy widths),
// schedule (dot groups), simplify (folding, identities, division by constants),
// emit (the instructions) and sync (waits and barriers). Each pass's
// guarantees are checked after it in tests (check.go); tuned numbers are in
// cost.go. DESIGN.md maps every IR op to the code that lowers it.
package lower

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/lower/decision"
	"github.com/ptxgen/ptxgen/lower/emit"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// fn is the state one compilation carries through the passes.
type fn struct {
	// Set is the kernel and the passes' records (one per pass, in pipeline
	// order, each written by its pass alone): what the emitter carries out.
	decision.Set
	legalize   legalizeRecord
	rowReduced rowReduceRecord // the rowreduce pass's
	// syncPoints are the comments emit leaves for the sync pass.
	syncPoints map[*ptx.Comment]decision.SyncEvent
	syncTrace  []syncTracePoint
	// dotOrder is the kernel's dots in text order, before any pass (FillSchedule).
	dotOrder []*ir.Op
	noSplitK bool // layout's option: split no dot along its reduction (smem's feedback, layoutAgain)
	names    map[string]bool
	nextID   int
	out      *ptx.Kernel
	// measuring is Measure's compilation: the smem pass reports a size over the
	// target's limit instead of refusing it.
	measuring bool
}

func (f *fn) freshName() string {
	for {
		n := "l" + strconv.Itoa(f.nextID)
		f.nextID++
		if !f.names[n] {
			f.names[n] = true
			return n
		}
	}
}

// Pass is one named step of the pipeline. Each pass's doc comment (at its run
// function) states what it requires and what it guarantees; check verifies the
// guarantees (with Options.Check or CheckPasses).
type Pass struct {
	Name  string
	Doc   string
	run   func(*fn) error
	check func(*fn) error
}

// Passes is the pipeline, in order. Every pass can be dumped with Options.After:
// the passes before emit leave IR (annotated with their decisions), emit and sync
// leave PTX.
var Passes = []Pass{
	{"verify", "check types, scopes and launch parameters", func(f *fn) error { return ir.Verify(f.Kernel) }, nil},
	{"legalize", "pad tile dimensions to mma granules (m16, n8, k16) and mask the padding", func(f *fn) (err error) { f.legalize, err = legalize(f); return err }, checkIR},
	{"rowreduce", "mark the tiles whose rows a reduction combines", func(f *fn) error { f.rowReduced = markRowReduced(f); return nil }, checkRowReduced},
	{"layout", "place every tile: mma fragments, shared memory, or recomputed per element", assignLayouts, checkLayouts},
	{"stage", "give shared homes to tiles a dot or transpose reads from shared memory, and to reused gathers", stageTiles, checkStaging},
	{"pipeline", "choose the loads a `for ... stages N` loop issues N-1 iterations ahead, and the index tiles `ahead L` issues before them", func(f *fn) error { f.Pipeline = pipelineLoops(f); return f.unhonouredAhead() }, checkPipelines},
	{"roles", "hand the tiles one warp role computes and another reads through rings of named-barrier slots", func(f *fn) (err error) { f.Roles, err = assignRoles(f); return err }, checkRoles},
	{"smem", "allocate shared memory by lifetime: offsets, pitches, reuse", func(f *fn) error { return f.allocShared() }, checkShared},
	{"budget", "set the register budget (.maxnreg) and each copy's width", func(f *fn) error { f.Budget = decideBudget(f); return nil }, checkBudget},
	{"schedule", "group dots that share an A operand, to be emitted k step by k step", func(f *fn) error { f.Schedule = scheduleDots(f); return nil }, checkSchedule},
	{"simplify", "decide the folding, identities and division by constants of ops on IR constants", func(f *fn) error { f.Simplify = simplifyOps(f); return nil }, checkIR},
	{"emit", "write PTX for the target, leaving sync points where shared memory is committed, written or read", emitKernel, checkInstructions},
	{"sync", "insert cp.async waits and barriers at the sync points", insertSync, checkSync},
}

// emitKernel is the emit pass: the emitter (lower/emit) writes the PTX the
// records decide, with the sync points the sync pass then resolves.
func emitKernel(f *fn) (err error) {
	f.out, f.syncPoints, err = emit.Kernel(&f.Set)
	return err
}

// PassNames lists the pass names in order.
func PassNames() []string {
	var s []string
	for _, p := range Passes {
		s = append(s, p.Name)
	}
	return s
}

// Options control one compilation.
type Options struct {
	// After stops after the named pass and returns its dump in Result.Dump.
	After string
	// Check runs each pass's check after it (see CheckPasses).
	Check bool
	// Follows says an earlier kernel of the same program writes what this one reads;
	// Precedes says a later one reads what this one writes. On targets with grid
	// dependency control they let the later kernel launch early (see ptx.Kernel.Programmatic).
	Follows, Precedes bool
}

// Result is a compiled kernel, or a pass dump when Options.After was set.
type Result struct {
	Kernel *ptx.Kernel
	Dump   string
}

// Compile lowers k for t (its limits and SM count are the ones the cost decisions
// use). The kernel is copied first, so k is not modified and compiling it again
// gives identical bytes.
func Compile(k *ir.Kernel, t target.Target, opt Options) (*Result, error) {
	if opt.After != "" && !validPass(opt.After) {
		return nil, fmt.Errorf("unknown pass %q: want one of %s", opt.After, strings.Join(PassNames(), ", "))
	}
	_, res, err := compile(k, t, opt, false)
	return res, err
}

// Decide runs the passes before emit on a copy of k and returns what they
// decided: the set emit.Kernel writes the kernel's PTX from (its sync points
// then go to the sync pass, which Compile runs).
func Decide(k *ir.Kernel, t target.Target, opt Options) (*decision.Set, error) {
	opt.After = "simplify"
	f, _, err := compile(k, t, opt, false)
	if err != nil {
		return nil, err
	}
	return &f.Set, nil
}

// compile runs the passes on a copy of k, up to opt.After (measuring: Measure's
// run, which reports a size over the limit instead of refusing it).
func compile(k *ir.Kernel, t target.Target, opt Options, measuring bool) (*fn, *Result, error) {
	f, err := newFn(k, t, opt)
	if err != nil {
		return nil, nil, err
	}
	f.measuring = measuring
	res, err := f.run(k, opt)
	return f, res, err
}

// splitCostsFit reports whether the kernel split dots along their reduction and
// its shared memory then exceeds the target's limit: the all-reduce's scratch
// must not cost the kernel its fit (or a pipeline stage, which the kernel
// builders choose by fit), so the kernel is laid out again without the split.
func (f *fn) splitCostsFit() bool {
	return !f.noSplitK && len(f.SplitK) > 0 && f.SmemBytes > f.Target.MaxSharedPerBlock
}

// layoutAgain is the smem -> layout feedback (splitCostsFit): it sets layout's
// option noSplitK and drops the records of layout and the passes after it up to
// smem, and returns where the pipeline resumes, at layout. These passes change
// nothing but their records (the kernel is as rowreduce left it), so that is the
// state before layout, and the passes run again from it give what a compilation
// with noSplitK from the start gives.
func (f *fn) layoutAgain() int {
	f.noSplitK = true
	f.LayoutRecord, f.StageRecord, f.Pipeline, f.Roles, f.SmemRecord = decision.LayoutRecord{}, decision.StageRecord{}, decision.PipelineRecord{}, decision.RoleRecord{}, decision.SmemRecord{}
	return slices.IndexFunc(Passes, func(p Pass) bool { return p.Name == "layout" })
}

// newFn verifies k and starts a compilation of a copy of it.
func newFn(k *ir.Kernel, t target.Target, opt Options) (*fn, error) {
	if err := ir.Verify(k); err != nil {
		return nil, err
	}
	kc, err := ir.Parse(ir.Print(k))
	if err != nil {
		return nil, fmt.Errorf("lower: copying kernel: %v", err)
	}
	f := &fn{Set: decision.Set{Kernel: kc, Target: t, RoleOf: valueRoles(kc), Follows: opt.Follows, Precedes: opt.Precedes}, names: map[string]bool{}}
	ir.WalkValues(kc, func(v *ir.Value) { f.names[v.Name] = true })
	ir.WalkOps(kc.Body, func(o *ir.Op) {
		if o.Kind == ir.OpDot {
			f.dotOrder = append(f.dotOrder, o)
		}
	})
	return f, nil
}

// run runs the passes, up to opt.After when it is set.
func (f *fn) run(k *ir.Kernel, opt Options) (*Result, error) {
	// Measure's passes are checked when the kernel is compiled; their smem check
	// would refuse a size over the limit, which Measure reports instead.
	check := (opt.Check || CheckPasses) && !f.measuring
	for i := 0; i < len(Passes); i++ {
		p := Passes[i]
		err := p.run(f)
		if p.Name == "smem" && f.splitCostsFit() {
			// Its error, if any, is the split's: lay the kernel out without it.
			i = f.layoutAgain() - 1
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", k.Name, p.Name, err)
		}
		if check && p.check != nil {
			if f.out == nil {
				if err := ir.Verify(f.Kernel); err != nil {
					return nil, fmt.Errorf("%s: after %s: %w", k.Name, p.Name, err)
				}
			}
			if err := p.check(f); err != nil {
				return nil, fmt.Errorf("%s: after %s: %w", k.Name, p.Name, err)
			}
		}
		if p.Name == opt.After {
			if f.out != nil {
				return &Result{Kernel: f.out, Dump: f.out.Module.Print()}, nil
			}
			return &Result{Dump: ir.PrintAnnotated(f.Kernel, f.annotate)}, nil
		}
	}
	return &Result{Kernel: f.out}, nil
}

func validPass(name string) bool {
	for _, p := range Passes {
		if p.Name == name {
			return true
		}
	}
	return false
}

// annotate describes, in dumps, what the passes decided about an op's result.
func (f *fn) annotate(o *ir.Op) string {
	if len(o.Results) == 0 {
		return strings.Join(nonEmpty(f.pipelineNote(o), f.roleNote(o)), ", ")
	}
	v := o.Results[0]
	var notes []string
	if lg, ok := f.legalize.logical[v]; ok && !sameInts(lg, v.Type.Shape) {
		notes = append(notes, "logical "+shapeString(lg))
	}
	if _, ok := f.Layouts[v]; ok {
		notes = append(notes, f.Placed(v).String())
	}
	if _, ok := f.Staged[v]; ok {
		if h, _ := f.SharedHome(v); h.Pitch > 0 {
			notes = append(notes, "staged in "+h.String())
		}
	}
	if r, ok := f.Simplify.Rules[o]; ok {
		notes = append(notes, "simplify: "+string(o.Kind)+" "+r.String())
	}
	notes = append(notes, nonEmpty(f.pipelineNote(o), f.roleNote(o))...)
	if g, i := f.dotGroupOf(o); g != nil {
		notes = append(notes, fmt.Sprintf("dot group at %s, op %d of %d", g[0].Result(), i+1, len(g)))
	}
	return strings.Join(notes, ", ")
}
