// Command ptxgen generates PTX for the kernels written in ptxgen's tile IR.
//
//	ptxgen dump  [-kernel K] [kernel flags] [-target T] [-ir | -after PASS]
//	ptxgen list
//	ptxgen check -emu [-kernel K] [kernel flags] [-target T] [-seed N]
//	ptxgen gen   [-kernel K] [kernel flags] -targets T1,T2 -pkg P -o FILE.go
//
// dump, check and gen -from FILE read a kernel or program in the IR text form (what
// dump -ir prints) instead of -kernel and its flags.
//
// Exit status: 0 on success, 1 when a check fails, 2 for bad usage (a bad flag or
// a configuration that cannot be generated).
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strconv"
	"strings"

	pcheck "github.com/ptxgen/ptxgen/check"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/target"
)

const defaultKernel = "mla_decode"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is bad usage: exit status 2.
type usageError = kernels.UsageError

func run(args []string, stdout, stderr io.Writer) int {
	err := dispatch(args, stdout, stderr)
	if err == nil {
		return 0
	}
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "ptxgen:", err)
	// A check that ran and failed is 1; everything else the generator refuses is
	// bad usage (a flag, a configuration it cannot generate).
	var fe *failure
	if errors.As(err, &fe) {
		return 1
	}
	return 2
}

// runCase runs a check's case in the emulator, maxHostBytes bounds the host memory of
// a case (0: half of the machine's), maxEmulatorSeconds its estimated emulation time
// and maxProgramWork a -from program's; the fuzz tests replace them to keep an
// iteration short (building a
// case computes its float64 reference, whose time grows with the emulation's).
var (
	runCase            = func(c *pcheck.Case) (*pcheck.Result, error) { return pcheck.Run(pcheck.Emulator{}, c) }
	maxHostBytes       int64
	maxEmulatorSeconds float64 = pcheck.MaxEmulatorSeconds
	maxProgramWork     int64   // check -from's emulation budget (0: pcheck.MaxProgramWork)
)

// failure is a check that ran and did not pass: exit status 1.
type failure struct{ msg string }

func (f *failure) Error() string { return f.msg }

func dispatch(args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		args = []string{"dump"}
	}
	switch args[0] {
	case "dump":
		return dump(args[1:], stdout, stderr)
	case "list":
		if len(args) == 2 && isHelp(args[1]) {
			// Like every command's -help: the usage on stderr, status 0.
			fmt.Fprint(stderr, "usage: ptxgen list\n\nlists the kernels (-kernel), the targets (-target, -targets) and the lowering passes (dump -after). It takes no flags.\n")
			return nil
		}
		if len(args) > 1 {
			return &usageError{Msg: fmt.Sprintf("list takes no arguments (got %q)", args[1])}
		}
		return list(stdout)
	case "check":
		return check(args[1:], stdout, stderr)
	case "gen":
		return gen(args[1:], stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 {
			return &usageError{Msg: fmt.Sprintf("help takes no arguments (got %q); for a command's flags run ptxgen COMMAND -help", args[1])}
		}
		fmt.Fprint(stdout, usage)
		return nil
	}
	if strings.HasPrefix(args[0], "-") {
		// Flags without a command mean dump.
		return dump(args, stdout, stderr)
	}
	return &usageError{Msg: fmt.Sprintf("unknown command %q: want gen, dump, list or check (see ptxgen help)", args[0])}
}

// isHelp reports whether arg asks for help the way the flag package takes it.
func isHelp(arg string) bool {
	return arg == "-h" || arg == "-help" || arg == "--h" || arg == "--help"
}

const usage = `ptxgen generates PTX from kernels written in a tile IR.

Commands:
  ptxgen dump  [-kernel K] [kernel flags] [-target T] [-ir | -after PASS]
               print the PTX (or the IR, or the IR after a pass)
  ptxgen list  list kernels, targets and passes
  ptxgen check -emu [-kernel K] [kernel flags] [-target T] [-seed N] [-vectors DIR]
               run the generated PTX in the emulator on seeded inputs (or a
               test-vector folder) and compare with the float64 reference
  ptxgen gen   [-kernel K] [kernel flags] -targets T1,T2 -pkg P -o FILE.go
               write a typed Go launcher and one PTX file per target beside it,
               embedded with //go:embed (for go generate in other modules)

dump, check and gen -from FILE read a kernel or program in the IR text form
(what dump -ir prints) instead of -kernel K and its flags; check -emu -from
runs it on seeded inputs (-args sets its scalars) or a -vectors folder.

Run 'ptxgen dump -kernel K -help' for a kernel's flags.
`

// kernelFlags sets up a command's -kernel and -target flags; Parse binds the kernel's own.
func kernelFlags(cmd string, stderr io.Writer) *kernels.CommandFlags {
	return kernels.NewCommandFlags("ptxgen "+cmd, defaultKernel, "sm_120", "", stderr)
}

func dump(args []string, stdout, stderr io.Writer) error {
	fs := kernelFlags("dump", stderr)
	showIR := fs.Bool("ir", false, "print the kernel's IR instead of PTX, each dot with the schedule the lowering gives it (warps RxC ...)")
	after := fs.String("after", "", "print the IR (PTX after emit and sync) after this pass: "+strings.Join(lower.PassNames(), ", "))
	checkPasses := fs.Bool("check", false, "check each pass's guarantees after it (always on in tests and ptxgen check)")
	all := fs.Bool("all", false, "print every kernel gen writes (all the launch plan's variants), not only those a call of -tokens rows runs")
	from := fs.String("from", "", fromUsage)
	showPlan := fs.Bool("plan", false, "print the launch plan instead of PTX: each family's design (heads, warps, warp grid, tile, stages, precision), the lowering's figures for its kernels, and what a call of -tokens rows runs")
	if err := fs.Parse(args); err != nil {
		return err
	}
	lower.CheckPasses = lower.CheckPasses || *checkPasses
	usingFrom, err := fromGiven(fs.FlagSet, *from)
	if err != nil {
		return err
	}
	t, err := fs.Resolve(*fs.Target)
	if err != nil {
		return err
	}
	if *showPlan && !usingFrom {
		return printPlan(stdout, fs.Config, t)
	}
	if *showIR && *after != "" {
		return &usageError{Msg: "dump: give -ir or -after PASS, not both (-after prints the IR after that pass)"}
	}
	if *showIR && *checkPasses {
		return &usageError{Msg: "dump: -check checks the passes, and -ir prints the kernel before any pass runs: leave one out (-after PASS -check checks the passes up to PASS)"}
	}
	if *after != "" && !contains(lower.PassNames(), *after) {
		return &kernels.ConfigError{Flag: "after", Value: *after, Want: "one of " + strings.Join(lower.PassNames(), ", ")}
	}
	if usingFrom {
		return dumpFrom(fs, *from, *showIR, *after, *showPlan, stdout)
	}
	build := kernels.BuildCall
	if *all {
		build = kernels.Config.Build
	}
	prog, err := build(fs.Config, t)
	if err != nil {
		return err
	}
	if *showIR {
		// Each dot states the schedule the lowering gives it for t, so that the text
		// read back compiles to the same PTX.
		filled, err := lower.FillScheduleProgram(prog.Program, t)
		if err != nil {
			return compileError(fs, t, err)
		}
		if !*all {
			// What one call launches, in order: the text form dump -from reads back.
			// The text form records the SM count the user fixed (-sms), which the plan holds.
			if prog.Rule != nil {
				filled.SMs = prog.Rule.SMs
			}
			_, err := io.WriteString(stdout, ir.PrintProgram(filled))
			return err
		}
		// Every variant: the launch plan that chooses among them is not part of the
		// text form, so they print as kernels, not as a program.
		for i, k := range filled.Kernels {
			if i > 0 {
				io.WriteString(stdout, "\n")
			}
			if _, err := io.WriteString(stdout, ir.Print(k)); err != nil {
				return err
			}
		}
		return nil
	}
	if *after != "" {
		d, err := lower.DumpProgram(prog.Program, prog.Sequences(), t, *after)
		if err != nil {
			return compileError(fs, t, err)
		}
		_, err = io.WriteString(stdout, d)
		return err
	}
	c, err := lower.CompileProgram(prog.Program, prog.Sequences(), t)
	if err != nil {
		return compileError(fs, t, err)
	}
	_, err = io.WriteString(stdout, c.Module.Print())
	return err
}

// printPlan writes what dump -plan shows: the plan's families with their variants
// and the lowering's figures, the combines, and the choice for -tokens rows.
func printPlan(w io.Writer, c kernels.Config, t target.Target) error {
	v, err := c.Value()
	if err != nil {
		return err
	}
	cfg, ok := v.(kernels.MLAConfig)
	if !ok {
		_, err := fmt.Fprintf(w, "no launch plan: every kernel runs, in order\n")
		return err
	}
	p, designs, err := kernels.MLADesign(cfg, t)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%s on %s, %d SMs\n", p.Name, t, t.SMs)
	for i, d := range designs {
		f := d.Family
		fmt.Fprintf(w, "family %d: %s\n  %d head blocks x %d candidate tiles per row, %d CTAs per SM", i, d.Variant, f.HeadBlocks, f.Tiles, f.PerSM)
		switch {
		case i == 0:
		case f.MinRows > 0:
			fmt.Fprintf(w, ", for calls of %d rows or more", f.MinRows)
		case f.Tile < 64:
			fmt.Fprintf(w, ", for calls whose rows fill the SMs (rows x %d head blocks >= %d)", f.HeadBlocks, t.SMs)
		default:
			fmt.Fprintf(w, ", for calls whose CTAs walk %d tiles or more and fill half the SMs", p.Rule.WideMinTiles)
		}
		fmt.Fprintln(w)
		for _, n := range []string{f.Direct, f.DirectSmall, f.Partial, f.PartialSmall} {
			if fig, ok := d.Figures[n]; ok {
				fmt.Fprintf(w, "  %-28s %6d bytes shared, %3d registers, %d CTAs per SM, replicated scores %v\n", n, fig.SharedBytes, fig.Registers, fig.CTAsPerSM, fig.Replicated)
			}
		}
	}
	var combs []string
	for _, cb := range p.Rule.Combines {
		combs = append(combs, strconv.Itoa(cb.Chunks))
	}
	fmt.Fprintf(w, "combines for splits: %s\n", strings.Join(combs, " "))
	ch, err := p.Rule.Choose(cfg.T, t.SMs)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(w, "a call of %d rows: %s, split %d, %d CTAs\n", cfg.T, strings.Join(ch.Kernels, " + "), ch.Split, ch.CTAs)
	return err
}

// compileError is bad usage: a configuration the generator cannot lower, with the
// flags that caused it named where they are known.
func compileError(fs *kernels.CommandFlags, t target.Target, err error) error {
	err = pcheck.ExplainCompileError(fs.Config, t, err)
	if kernels.IsUsage(err) {
		return err
	}
	return &usageError{Msg: err.Error()}
}

// setFlags lists the flags the command line gave explicitly.
func setFlags(fs *flag.FlagSet) map[string]bool {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return set
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func list(stdout io.Writer) error {
	fmt.Fprintln(stdout, "kernels:")
	for _, s := range kernels.Specs() {
		fmt.Fprintf(stdout, "  %-12s %s\n", s.Name, s.Doc)
	}
	fmt.Fprintln(stdout, "targets:")
	for _, name := range target.Names() {
		t := target.MustLookup(name)
		fmt.Fprintf(stdout, "  %-12s PTX %s, %d KB shared memory per block, %d SMs\n", t.Name, fmt.Sprintf("%d.%d", t.MinVersion/10, t.MinVersion%10), t.MaxSharedPerBlock/1024, t.SMs)
	}
	fmt.Fprintln(stdout, "passes:")
	for _, p := range lower.Passes {
		fmt.Fprintf(stdout, "  %-12s %s\n", p.Name, p.Doc)
	}
	return nil
}

func check(args []string, stdout, stderr io.Writer) error {
	fs := kernelFlags("check", stderr)
	useEmu := fs.Bool("emu", false, "run the PTX in the CPU emulator (the GPU check is ptxgen-gpu check -gpu)")
	useGPU := fs.Bool("gpu", false, "run on the GPU: only in the cuda build, ptxgen-gpu")
	var opts pcheck.CaseOptions
	opts.AddFlags(fs.FlagSet)
	fs.Lookup("vectors").Usage = pcheck.VectorsUsageWithFrom
	from := fs.String("from", "", fromUsage)
	scalarArgs := fs.String("args", "", "with -from: the arguments, `name=value,...`: scalars (the rows default to the capacity, the split to its largest value) and the size in bytes of a buffer the IR does not size")
	lower.CheckPasses = true
	if err := fs.Parse(args); err != nil {
		return err
	}
	// Cases are admitted by the heap they hold at their peak; under a memory limit
	// the collector keeps garbage (a case's inputs as generated, once copied) from
	// adding to it.
	limit := maxHostBytes
	if limit <= 0 {
		limit = pcheck.HostMemoryLimit()
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(limit))
	t, err := fs.Resolve(*fs.Target)
	if err != nil {
		return err
	}
	if *useGPU {
		return &usageError{Msg: "-gpu needs the cuda build: use ptxgen-gpu check -gpu (see README)"}
	}
	usingFrom, err := fromGiven(fs.FlagSet, *from)
	if err != nil {
		return err
	}
	if usingFrom {
		if !*useEmu {
			return &usageError{Msg: "check: say -emu (the CPU emulator)"}
		}
		return checkFrom(fs, *from, opts, *scalarArgs, stdout)
	}
	if *scalarArgs != "" {
		return &kernels.ConfigError{Flag: "args", Value: *scalarArgs, Want: "no -args without -from (the kernel flags set a built-in kernel's arguments)"}
	}
	if err := opts.CheckVectorFlags(setFlags(fs.FlagSet)); err != nil {
		return err
	}
	if !*useEmu {
		return &usageError{Msg: "check: say -emu (the CPU emulator); GPU checks run with ptxgen-gpu check -gpu"}
	}
	v, err := fs.Config.Value()
	if err != nil {
		return err
	}
	if err := pcheck.CheckKernelFlags(v, fs.FlagSet); err != nil {
		return err
	}
	if opts.Vectors == "" {
		// What the host cannot hold, then what the emulator would not finish, before
		// the case (inputs, float64 reference) is built.
		if err := pcheck.CheckHostMemory(v, t, maxHostBytes); err != nil {
			return err
		}
		if err := pcheck.CheckEmulatorTime(v, maxEmulatorSeconds); err != nil {
			return err
		}
	}
	opts.MaxHostBytes = maxHostBytes
	c, err := pcheck.ForConfig(v, t, opts)
	if err != nil {
		if kernels.IsUsage(err) {
			return err
		}
		return compileError(fs, t, err)
	}
	res, err := runCase(c)
	if err != nil {
		return &failure{err.Error()}
	}
	fmt.Fprint(stdout, res.String())
	if !res.OK() {
		return &failure{"outputs outside tolerance"}
	}
	fmt.Fprintln(stdout, "PASS")
	return nil
}
