package lower

import (
	"fmt"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// Compiled is a program lowered for one target: one PTX module holding every
// kernel, and each kernel's launch facts, in the program's order (a launch plan,
// which the lowering does not know, may choose which of them a call runs).
type Compiled struct {
	Program   string // the ir.Program's name
	Target    target.Target
	Module    *ptx.Module
	Kernels   []*ptx.Kernel
	Workspace []ir.Workspace
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
// after it in one call: in the program's order when sequences is nil, else in one
// of the sequences.
func neighbours(p *ir.Program, sequences [][]string, i int) (follows, precedes bool) {
	if sequences == nil {
		return i > 0, i < len(p.Kernels)-1
	}
	for _, seq := range sequences {
		for j, n := range seq {
			if n == p.Kernels[i].Name {
				follows = follows || j > 0
				precedes = precedes || j < len(seq)-1
			}
		}
	}
	return follows, precedes
}

// CompileProgram lowers every kernel of p for t and merges them into one module
// whose .version is the highest any kernel needs. sequences are the launch
// sequences a call may run, kernel names in launch order (what a launch plan
// allows); nil is one sequence of every kernel in the program's order. They say
// which kernels follow which (Options.Follows, Precedes). The module is validated
// (ptx.ValidateModule) whether or not the pass checks are on, so no caller (gen
// runs without them) ever gets PTX the validator did not see.
func CompileProgram(p *ir.Program, sequences [][]string, t target.Target) (*Compiled, error) {
	if len(p.Kernels) == 0 {
		return nil, fmt.Errorf("program %s has no kernels", p.Name)
	}
	c := &Compiled{Program: p.Name, Target: t, Workspace: p.Workspace}
	version := 0
	for i, k := range p.Kernels {
		follows, precedes := neighbours(p, sequences, i)
		res, err := Compile(k, t, Options{Follows: follows, Precedes: precedes})
		if err != nil {
			return nil, err
		}
		m := res.Kernel.Module
		if c.Module == nil {
			c.Module = &ptx.Module{Version: m.Version, Target: m.Target, AddressSize: m.AddressSize}
		}
		if v, err := ptx.ParseVersion(m.Version); err == nil && v > version {
			c.Module.Version, version = m.Version, v
		}
		c.Module.Funcs = append(c.Module.Funcs, m.Funcs...)
		c.Kernels = append(c.Kernels, res.Kernel)
	}
	if err := ptx.ValidateModule(c.Module); err != nil {
		return nil, fmt.Errorf("program %s on %s: the generated PTX does not validate (a ptxgen bug): %w", p.Name, t.Name, err)
	}
	for _, k := range c.Kernels {
		k.Module = c.Module
	}
	return c, nil
}

// DumpProgram returns every kernel's dump after the named pass (sequences as in
// CompileProgram).
func DumpProgram(p *ir.Program, sequences [][]string, t target.Target, after string) (string, error) {
	var parts []string
	for i, k := range p.Kernels {
		follows, precedes := neighbours(p, sequences, i)
		res, err := Compile(k, t, Options{After: after, Follows: follows, Precedes: precedes})
		if err != nil {
			return "", err
		}
		parts = append(parts, res.Dump)
	}
	return strings.Join(parts, "\n"), nil
}
