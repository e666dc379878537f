package kernels

import (
	"flag"
	"fmt"
	"sort"
	"strings"

	"github.com/ptxgen/ptxgen/ir"
)

// Config is one kernel configuration, bound to command-line flags.
type Config interface {
	// Build returns the program (kernels and workspace) in the tile IR for a target
	// (programs may depend on it: SM count, shared memory), or a *ConfigError for a
	// bad value.
	Build(target string) (*ir.Program, error)
	// Args renders the configuration as the flags that reproduce it.
	Args() []string
	// Value returns the validated configuration struct (GEMMConfig, ...).
	Value() (any, error)
}

// Spec describes a kernel family the command line can generate.
type Spec struct {
	Name string
	Doc  string
	// Bind registers the family's configuration flags (with their defaults) on fs and
	// returns the configuration they fill in once fs is parsed.
	Bind func(fs *flag.FlagSet) Config
}

var registry = map[string]Spec{}

// Register adds a kernel family; it is called from init functions in this package.
func Register(s Spec) { registry[s.Name] = s }

// Lookup finds a kernel family by name.
func Lookup(name string) (Spec, error) {
	s, ok := registry[name]
	if !ok {
		return Spec{}, &ConfigError{Flag: "kernel", Value: name, Want: "one of " + strings.Join(Names(), ", ")}
	}
	return s, nil
}

// Names lists the registered kernel families, sorted.
func Names() []string {
	var n []string
	for k := range registry {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

// Specs lists the registered kernel families, sorted by name.
func Specs() []Spec {
	var s []Spec
	for _, n := range Names() {
		s = append(s, registry[n])
	}
	return s
}

func init() {
	Register(Spec{
		Name: "gemm",
		Doc:  "C[M,N] = A[M,K] x B[K,N]: bf16 inputs, fp32 accumulation, bf16 or f32 output",
		Bind: func(fs *flag.FlagSet) Config {
			c := &gemmFlags{}
			fs.IntVar(&c.M, "m", 128, "rows of A and C (1..16777216)")
			fs.IntVar(&c.N, "n", 128, "columns of B and C (1..16777216)")
			fs.IntVar(&c.K, "k", 512, "columns of A, rows of B (1..16777216)")
			fs.StringVar(&c.out, "out", "bf16", "element type of C: bf16 or f32")
			return c
		},
	})
}

type gemmFlags struct {
	GEMMConfig
	out string
}

func (g *gemmFlags) config() (GEMMConfig, error) {
	c := g.GEMMConfig
	switch g.out {
	case "bf16":
		c.Out = ir.BF16
	case "f32":
		c.Out = ir.F32
	default:
		return c, &ConfigError{Flag: "out", Value: g.out, Want: "bf16 or f32"}
	}
	return c, c.Validate()
}

func (g *gemmFlags) Build(target string) (*ir.Program, error) {
	c, err := g.config()
	if err != nil {
		return nil, err
	}
	k, err := GEMM(c)
	if err != nil {
		return nil, err
	}
	return &ir.Program{Name: "gemm", Kernels: []*ir.Kernel{k}}, nil
}

// Value returns the validated configuration (a GEMMConfig).
func (g *gemmFlags) Value() (any, error) { return g.config() }

func (g *gemmFlags) Args() []string {
	return []string{"-kernel", "gemm", "-m", fmt.Sprint(g.M), "-n", fmt.Sprint(g.N), "-k", fmt.Sprint(g.K), "-out", g.out}
}
