package kernels

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strconv"
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
// and the family's flags. Commands add their own flags to the embedded FlagSet
// before Parse; Config is set by Parse.
type CommandFlags struct {
	*flag.FlagSet
	Config Config
	Target *string
	// PlanTarget is -plan-target: plan under that target's limits, emit for -target.
	PlanTarget    *string
	command       string
	defaultKernel string
	stderr        io.Writer
}

// NewCommandFlags sets up a command's -kernel and -target flags. Parse binds the
// flags of the kernel that the arguments name with -kernel (defaultKernel when they
// do not). Parse errors are reported by Parse in one line; the full usage is printed
// to stderr for -help only.
func NewCommandFlags(command, defaultKernel, defaultTarget, targetDoc string, stderr io.Writer) *CommandFlags {
	fs := flag.NewFlagSet(command, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	// The flag package calls Usage on every parse error; Parse reports those in one
	// line instead.
	fs.Usage = func() {}
	fs.String("kernel", defaultKernel, "kernel family: "+strings.Join(Names(), ", "))
	c := &CommandFlags{FlagSet: fs, command: command, defaultKernel: defaultKernel, stderr: stderr}
	c.Target = fs.String("target", defaultTarget, "GPU target: "+strings.Join(target.Names(), ", ")+targetDoc)
	c.PlanTarget = fs.String("plan-target", "", "plan the kernel under this target's limits (shared memory, threads and registers per SM, SM count) and emit it for -target: -target sm_90 -plan-target sm_120 runs sm_120's kernel on an sm_90 GPU")
	return c
}

// Parse binds the flags of the kernel args name, then parses args: an unknown
// kernel is a *ConfigError, a bad flag a *UsageError; -help prints the usage and
// returns flag.ErrHelp.
func (c *CommandFlags) Parse(args []string) error {
	spec, err := Lookup(c.scanKernel(args))
	if err != nil {
		return err
	}
	c.Config = spec.Bind(c.FlagSet)
	err = parseFlags(c.FlagSet, args, c.command+" -kernel "+spec.Name)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(c.stderr, "usage: %s -kernel %s [flags]\n\n%s: %s\n\nflags:\n", c.command, spec.Name, spec.Name, spec.Doc)
		c.SetOutput(c.stderr)
		c.PrintDefaults()
		c.SetOutput(io.Discard)
	}
	if err != nil {
		return err
	}
	if p := *c.PlanTarget; p != "" {
		if _, err := lookupTarget("plan-target", p); err != nil {
			return err
		}
	}
	if *c.Target != "" {
		if _, err := c.Resolve(*c.Target); err != nil {
			return err
		}
	}
	return nil
}

// Resolve is the target named name (-target's value, or one a command chose from the
// device) planned under -plan-target's limits when that is given
// (target.Target.WithLimitsOf), or a *ConfigError of -target.
func (c *CommandFlags) Resolve(name string) (target.Target, error) {
	t, err := LookupTarget(name)
	if err != nil {
		return target.Target{}, err
	}
	if p := *c.PlanTarget; p != "" {
		pt, err := lookupTarget("plan-target", p)
		if err != nil {
			return target.Target{}, err
		}
		t = t.WithLimitsOf(pt)
	}
	return t, nil
}

// scanKernel finds the value of -kernel in args the way the flag package will parse
// them (before the kernel's own flags exist): flags end at the first non-flag
// argument or "--", a flag that is not boolean takes the next argument as its value
// ("-pkg kernel" is -pkg's value, not a -kernel), and the last -kernel wins.
func (c *CommandFlags) scanKernel(args []string) string {
	name := c.defaultKernel
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || a == "--" {
			break
		}
		a = strings.TrimPrefix(a[1:], "-")
		flagName, value, hasValue := strings.Cut(a, "=")
		if flagName == "kernel" {
			if !hasValue {
				if i+1 >= len(args) {
					break // Parse reports the missing value
				}
				i++
				value = args[i]
			}
			name = value
			continue
		}
		if !hasValue && !c.isBoolFlag(flagName) {
			i++ // the flag's value, whatever it looks like
		}
	}
	return name
}

// isBoolFlag reports whether -name takes no value: a boolean flag of the command
// or of any kernel family, or -h/-help.
func (c *CommandFlags) isBoolFlag(name string) bool {
	if name == "h" || name == "help" {
		return true
	}
	if f := c.Lookup(name); f != nil {
		return isBool(f)
	}
	for _, s := range Specs() {
		fs := flag.NewFlagSet("", flag.ContinueOnError)
		s.Bind(fs)
		if f := fs.Lookup(name); f != nil {
			return isBool(f)
		}
	}
	return false
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// ParseFlags parses a command's flags: a bad flag or a stray argument is a
// *UsageError naming it (an unknown flag with the flags there are); -help returns
// flag.ErrHelp.
func ParseFlags(fs *flag.FlagSet, args []string) error { return parseFlags(fs, args, fs.Name()) }

// parseFlags is ParseFlags naming the command command in an unknown flag's message.
func parseFlags(fs *flag.FlagSet, args []string, command string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		// The flag package's own words for an unknown flag list nothing accepted.
		if name, ok := strings.CutPrefix(err.Error(), "flag provided but not defined: "); ok {
			var known []string
			fs.VisitAll(func(f *flag.Flag) { known = append(known, "-"+f.Name) })
			return &UsageError{fmt.Sprintf("%s is not a flag of %s: want one of %s (%s -help describes them)", name, command, strings.Join(known, ", "), command)}
		}
		return &UsageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return &UsageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// LookupTarget is the target named name, or a *ConfigError of -target naming the
// targets there are.
func LookupTarget(name string) (target.Target, error) { return lookupTarget("target", name) }

func lookupTarget(flag, name string) (target.Target, error) {
	t, err := target.LookupTarget(name)
	if err != nil {
		return target.Target{}, &ConfigError{Flag: flag, Value: name, Want: "one of " + strings.Join(target.Names(), ", ")}
	}
	return t, nil
}

// Float32Var defines a float flag whose value must be finite and representable as a
// float32 (kernels bake such values into PTX as f32 immediates): NaN, ±Inf, values
// beyond ±3.4028235e38 and nonzero values that round to zero are refused when parsed,
// naming the flag.
func Float32Var(fs *flag.FlagSet, p *float64, name string, value float64, usage string) {
	*p = value
	fs.Var((*float32Flag)(p), name, usage)
}

type float32Flag float64

func (f *float32Flag) String() string { return strconv.FormatFloat(float64(*f), 'g', -1, 64) }

func (f *float32Flag) Set(s string) error {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return errors.New("want a number")
	}
	if err := CheckFloat32(v); err != nil {
		return err
	}
	*f = float32Flag(v)
	return nil
}

// CheckFloat32 refuses what Float32Var refuses: NaN, infinities, magnitudes beyond
// float32 and nonzero values that are zero as float32.
func CheckFloat32(v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > math.MaxFloat32:
		return fmt.Errorf("want a finite number that fits a float32 (|x| <= %g)", float32(math.MaxFloat32))
	case v != 0 && float32(v) == 0:
		return fmt.Errorf("want 0 or a number that is not zero as a float32 (|x| >= %g)", float32(math.SmallestNonzeroFloat32))
	}
	return nil
}

// KFragsVar defines the -k-frags flag: auto, true or false, and alone true.
func KFragsVar(fs *flag.FlagSet, p *MLAKFrags, name, usage string) {
	fs.Var((*kFragsFlag)(p), name, usage)
}

type kFragsFlag MLAKFrags

func (f *kFragsFlag) String() string   { return MLAKFrags(*f).String() }
func (f *kFragsFlag) IsBoolFlag() bool { return true }

func (f *kFragsFlag) Set(s string) error {
	switch s {
	case "auto":
		*f = kFragsFlag(KFragsAuto)
	case "true", "false":
		*f = kFragsFlag(s)
	default:
		return errors.New("want auto, true or false")
	}
	return nil
}
