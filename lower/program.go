package lower

import (
	"fmt"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/plan"
	"github.com/ptxgen/ptxgen/ptx"
)

// Compiled is a program lowered for one target: one PTX module holding every
// kernel, and each kernel's launch facts, in launch order (or, with a Plan, the
// order of the program; the plan chooses which of them a call runs).
type Compiled struct {
	Program   string // the ir.Program's name
	Target    string
	Module    *ptx.Module
	Kernels   []*ptx.Kernel
	Workspace []ir.Workspace
	Plan      *plan.Rule
}

// Kernel is the kernel named name, nil if there is none.
func (c *Compiled) Kernel(name string) *ptx.Kernel {
	for _, k := range c.Kernels {
		if k.Name == name {
			return k
		}
	}
	return nil
}

// neighbours reports, for kernel i of p, whether a kernel launches before it and
// after it in one call: in the program's order, or in the plan's sequences.
func neighbours(p *ir.Program, i int) (follows, precedes bool) {
	if p.Plan == nil {
		return i > 0, i < len(p.Kernels)-1
	}
	for _, seq := range p.Plan.Sequences() {
		for j, n := range seq {
			if n == p.Kernels[i].Name {
				follows = follows || j > 0
				precedes = precedes || j < len(seq)-1
			}
		}
	}
	return follows, precedes
}

// CompileProgram lowers every kernel of p for target and merges them into one
// module whose .version is the highest any kernel needs.
func CompileProgram(p *ir.Program, target string) (*Compiled, error) {
	if len(p.Kernels) == 0 {
		return nil, fmt.Errorf("program %s has no kernels", p.Name)
	}
	c := &Compiled{Program: p.Name, Target: target, Workspace: p.Workspace, Plan: p.Plan}
	for i, k := range p.Kernels {
		follows, precedes := neighbours(p, i)
		res, err := Compile(k, target, Options{SMs: p.SMs, Follows: follows, Precedes: precedes})
		if err != nil {
			return nil, err
		}
		m := res.Kernel.Module
		if c.Module == nil {
			c.Module = &ptx.Module{Version: m.Version, Target: m.Target, AddressSize: m.AddressSize}
		}
		if versionLess(c.Module.Version, m.Version) {
			c.Module.Version = m.Version
		}
		c.Module.Funcs = append(c.Module.Funcs, m.Funcs...)
		c.Kernels = append(c.Kernels, res.Kernel)
	}
	for _, k := range c.Kernels {
		k.Module = c.Module
	}
	return c, nil
}

// DumpProgram returns every kernel's dump after the named pass.
func DumpProgram(p *ir.Program, target, after string) (string, error) {
	var parts []string
	for i, k := range p.Kernels {
		follows, precedes := neighbours(p, i)
		res, err := Compile(k, target, Options{After: after, SMs: p.SMs, Follows: follows, Precedes: precedes})
		if err != nil {
			return "", err
		}
		parts = append(parts, res.Dump)
	}
	return strings.Join(parts, "\n"), nil
}

func versionLess(a, b string) bool {
	var am, an, bm, bn int
	fmt.Sscanf(a, "%d.%d", &am, &an)
	fmt.Sscanf(b, "%d.%d", &bm, &bn)
	return am < bm || am == bm && an < bn
}
