package plan

import "github.com/ptxgen/ptxgen/ir"

// Program is what one configuration generates: its IR program and, when a call may
// run only some of its kernels, the rule that chooses them. The launch policy sits
// here, above the IR: ir knows kernels, not plans.
type Program struct {
	*ir.Program
	// Rule, when set, chooses per call which kernels run (Rule.Choose); without it
	// every kernel runs, in order.
	Rule *Rule
}

// Unplanned is p with no launch plan: every kernel runs, in order.
func Unplanned(p *ir.Program) *Program { return &Program{Program: p} }

// Sequences are the launch sequences a call of p may run, kernel names in launch
// order (Rule.Sequences); without a rule, one: every kernel in p's order.
func (p *Program) Sequences() [][]string {
	if p.Rule != nil {
		return p.Rule.Sequences()
	}
	names := make([]string, len(p.Kernels))
	for i, k := range p.Kernels {
		names[i] = k.Name
	}
	return [][]string{names}
}

// Only is p with just the named kernels, in p's order: what one call runs.
func (p *Program) Only(names []string) *Program {
	return &Program{Program: p.Program.Only(names), Rule: p.Rule}
}
