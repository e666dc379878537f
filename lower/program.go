package lower

import (
	"fmt"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
)

// Compiled is a program lowered for one target: one PTX module holding every
// kernel, and each kernel's launch facts, in launch order.
type Compiled struct {
	Program   string // the ir.Program's name
	Target    string
	Module    *ptx.Module
	Kernels   []*ptx.Kernel
	Workspace []ir.Workspace
}

// CompileProgram lowers every kernel of p for target and merges them into one
// module whose .version is the highest any kernel needs.
func CompileProgram(p *ir.Program, target string) (*Compiled, error) {
	if len(p.Kernels) == 0 {
		return nil, fmt.Errorf("program %s has no kernels", p.Name)
	}
	c := &Compiled{Program: p.Name, Target: target, Workspace: p.Workspace}
	for i, k := range p.Kernels {
		res, err := Compile(k, target, Options{SMs: p.SMs, Follows: i > 0, Precedes: i < len(p.Kernels)-1})
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
		res, err := Compile(k, target, Options{After: after, SMs: p.SMs, Follows: i > 0, Precedes: i < len(p.Kernels)-1})
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
