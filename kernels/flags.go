package kernels

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ptxgen/ptxgen/target"
)

// UsageError is a bad command line (commands exit with status 2). A bad
// configuration value is a *ConfigError instead.
type UsageError struct{ Msg string }

func (e *UsageError) Error() string { return e.Msg }

// IsUsage reports whether err is bad usage: a *UsageError or a *ConfigError.
func IsUsage(err error) bool {
	var ue *UsageError
	var ce *ConfigError
	return errors.As(err, &ue) || errors.As(err, &ce)
}

// CommandFlags are a command's flags for one kernel configuration: -kernel, which
// is scanned first (each kernel family has its own configuration flags), -target,
// and the family's flags. Commands add their own flags to the embedded FlagSet.
type CommandFlags struct {
	*flag.FlagSet
	Config Config
	Target *string
	// PlanTarget is -plan-target: plan under that target's limits, emit for -target.
	PlanTarget *string
	usage      func()
}

// NewCommandFlags sets up the flags of the kernel that args name with -kernel
// (defaultKernel when they do not). Parse errors are reported by Parse in one
// line; the full usage is printed to stderr for -help only.
func NewCommandFlags(command string, args []string, defaultKernel, defaultTarget, targetDoc string, stderr io.Writer) (*CommandFlags, error) {
	name := defaultKernel
	for i, a := range args {
		a = strings.TrimLeft(a, "-")
		if v, ok := strings.CutPrefix(a, "kernel="); ok {
			name = v
		} else if a == "kernel" && i+1 < len(args) {
			name = args[i+1]
		}
	}
	spec, err := Lookup(name)
	if err != nil {
		return nil, err
	}
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// The flag package calls Usage on every parse error; Parse reports those in one
	// line instead.
	fs.Usage = func() {}
	fs.String("kernel", defaultKernel, "kernel family: "+strings.Join(Names(), ", "))
	c := &CommandFlags{FlagSet: fs}

	c.Target = fs.String("target", defaultTarget, "GPU target: "+strings.Join(target.TargetNames(), ", ")+targetDoc)
	c.PlanTarget = fs.String("plan-target", "", "plan the kernel under this target's limits (shared memory, threads and registers per SM, SM count) and emit it for -target: -target sm_90 -plan-target sm_120 runs sm_120's kernel on an sm_90 GPU")
	c.Config = spec.Bind(fs)
	c.usage = func() {
		fmt.Fprintf(stderr, "usage: %s -kernel %s [flags]\n\n%s: %s\n\nflags:\n", command, spec.Name, spec.Name, spec.Doc)
		fs.SetOutput(stderr)
		fs.PrintDefaults()
		fs.SetOutput(io.Discard)
	}
	return c, nil
}

// Parse parses args: a bad flag is a *UsageError; -help prints the usage and
// returns flag.ErrHelp.
func (c *CommandFlags) Parse(args []string) error {
	err := ParseFlags(c.FlagSet, args)
	if errors.Is(err, flag.ErrHelp) {
		c.usage()
	}
	if err != nil {
		return err
	}
	if p := *c.PlanTarget; p != "" {
		if _, err := target.LookupTarget(p); err != nil || strings.Contains(p, target.PlanSep) {
			return &ConfigError{Flag: "plan-target", Value: p, Want: "one of " + strings.Join(target.TargetNames(), ", ")}
		}
	}
	if *c.Target != "" {
		*c.Target = c.WithPlan(*c.Target)
	}
	return nil
}

// WithPlan returns the target name planned under -plan-target when that is given
// ("sm_90@sm_120", target.Target.WithLimitsOf); commands that choose their target
// after Parse (from the device) call it themselves.
func (c *CommandFlags) WithPlan(name string) string {
	if *c.PlanTarget == "" || strings.Contains(name, target.PlanSep) {
		return name
	}
	return name + target.PlanSep + *c.PlanTarget
}

// ParseFlags parses a command's flags: a bad flag or a stray argument is a
// *UsageError naming it; -help returns flag.ErrHelp.
func ParseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return &UsageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return &UsageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// CheckTarget reports an unknown target as a *ConfigError of -target.
func CheckTarget(t string) error {
	if _, err := target.LookupTarget(t); err != nil {
		return &ConfigError{Flag: "target", Value: t, Want: "one of " + strings.Join(target.TargetNames(), ", ")}
	}
	return nil
}
