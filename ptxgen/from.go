package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	pcheck "github.com/ptxgen/ptxgen/check"
	"github.com/ptxgen/ptxgen/emu"
	"github.com/ptxgen/ptxgen/gogen"
	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/plan"
	"github.com/ptxgen/ptxgen/target"
)

// -from FILE: dump, check and gen read a kernel or a program in the IR text form
// (ir.ParseProgram: what dump -ir prints) instead of building -kernel's
// configuration. The file fixes the kernels, so the configuration flags do not apply.

const fromUsage = "read the kernel or program from this IR text `file` (the form dump -ir prints) instead of building -kernel"

// maxIRFileBytes bounds a -from file (the default mla_decode program is about 600 KB).
const maxIRFileBytes = 64 << 20

// fromFlags refuses, with -from, every flag given that is not in allowed.
func fromFlags(fs *flag.FlagSet, allowed ...string) error {
	var bad []string
	fs.Visit(func(f *flag.Flag) {
		if f.Name != "from" && !slices.Contains(allowed, f.Name) {
			bad = append(bad, "-"+f.Name)
		}
	})
	if len(bad) > 0 {
		verb := "does"
		if len(bad) > 1 {
			verb = "do"
		}
		return &usageError{Msg: fmt.Sprintf("%s %s not apply with -from (the IR file fixes the kernels; with -from give only %s)",
			strings.Join(bad, ", "), verb, "-"+strings.Join(allowed, ", -"))}
	}
	return nil
}

// fromGiven reports whether the command line gave -from. An empty -from is refused:
// it used to read as no -from at all and build the default kernel instead.
func fromGiven(fs *flag.FlagSet, path string) (bool, error) {
	if !setFlags(fs)["from"] {
		return false, nil
	}
	if path == "" {
		return false, &kernels.ConfigError{Flag: "from", Value: `""`, Want: "the path of an IR text file (the form dump -ir prints)"}
	}
	return true, nil
}

// readIRFile reads and verifies a -from file: a regular file of at most
// maxIRFileBytes holding a kernel or a program.
func readIRFile(path string) (*ir.Program, error) {
	bad := func(format string, args ...any) error {
		return &usageError{Msg: "-from " + path + ": " + fmt.Sprintf(format, args...)}
	}
	fi, err := os.Stat(path)
	switch {
	case err != nil:
		return nil, bad("%v", err.(*os.PathError).Err)
	case !fi.Mode().IsRegular():
		return nil, bad("not a regular file (a %s)", fileKind(fi.Mode()))
	case fi.Size() > maxIRFileBytes:
		return nil, bad("%d bytes, want at most %d", fi.Size(), maxIRFileBytes)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, bad("%v", err.(*os.PathError).Err)
	}
	defer f.Close()
	src, err := io.ReadAll(io.LimitReader(f, maxIRFileBytes+1))
	if err != nil {
		return nil, bad("%v", err)
	}
	if len(src) > maxIRFileBytes {
		return nil, bad("more than %d bytes", maxIRFileBytes)
	}
	p, err := ir.ParseProgram(string(src))
	if err != nil {
		return nil, bad("%v", err)
	}
	return p, nil
}

// readIRFileFor reads a -from file and the target to lower it for: -target (and
// -plan-target) planned for the SM count the program records (`sms N`), if it records one.
func readIRFileFor(fs *kernels.CommandFlags, path string) (*ir.Program, target.Target, error) {
	prog, err := readIRFile(path)
	if err != nil {
		return nil, target.Target{}, err
	}
	t, err := fs.Resolve(*fs.Target)
	if err != nil {
		return nil, target.Target{}, err
	}
	return prog, t.WithSMs(prog.SMs), nil
}

// loweringError is a program of one's own that the lowering refuses: bad usage.
func loweringError(path string, err error) error {
	return &usageError{Msg: "-from " + path + ": " + err.Error()}
}

// dumpFrom is dump -from: the PTX, the IR as read (-ir), after a pass (-after) or the
// program's launch (-plan).
func dumpFrom(fs *kernels.CommandFlags, path string, showIR bool, after string, showPlan bool, stdout io.Writer) error {
	if err := fromFlags(fs.FlagSet, "target", "plan-target", "ir", "after", "check", "plan"); err != nil {
		return err
	}
	prog, t, err := readIRFileFor(fs, path)
	if err != nil {
		return err
	}
	var out string
	switch {
	case showPlan:
		return printProgramLaunch(stdout, prog, t, path)
	case showIR:
		filled, err := lower.FillScheduleProgram(prog, t)
		if err != nil {
			return loweringError(path, err)
		}
		out = ir.PrintProgram(filled)
	case after != "":
		if out, err = lower.DumpProgram(prog, nil, t, after); err != nil {
			return loweringError(path, err)
		}
	default:
		c, err := lower.CompileProgram(prog, nil, t)
		if err != nil {
			return loweringError(path, err)
		}
		out = c.Module.Print()
	}
	_, err = io.WriteString(stdout, out)
	return err
}

// printProgramLaunch is dump -plan of a program from a file: it has no launch plan (the
// text form has none), so every kernel runs, in order; each with the lowering's figures.
func printProgramLaunch(w io.Writer, prog *ir.Program, t target.Target, path string) error {
	fmt.Fprintf(w, "%s on %s, %d SMs: no launch plan: every kernel runs, in order\n", prog.Name, t, t.SMs)
	for _, k := range prog.Kernels {
		fig, err := lower.Measure(k, t)
		if err != nil {
			return loweringError(path, err)
		}
		fmt.Fprintf(w, "  %-28s %6d bytes shared, %3d registers, %d CTAs per SM\n", k.Name, fig.SharedBytes, fig.Registers, fig.CTAsPerSM)
	}
	return nil
}

// checkFrom is check -emu -from: the program on seeded inputs (it must run clean) or
// on a kernel vector folder (its expected outputs).
func checkFrom(fs *kernels.CommandFlags, path string, opts pcheck.CaseOptions, args string, stdout io.Writer) error {
	if err := fromFlags(fs.FlagSet, "emu", "target", "plan-target", "seed", "vectors", "args"); err != nil {
		return err
	}
	if opts.Vectors != "" && setFlags(fs.FlagSet)["seed"] {
		return &usageError{Msg: "-seed does not apply with -vectors (the folder holds the inputs)"}
	}
	values, err := parseArgs(args)
	if err != nil {
		return err
	}
	prog, t, err := readIRFileFor(fs, path)
	if err != nil {
		return err
	}
	c, err := lower.CompileProgram(prog, nil, t)
	if err != nil {
		return loweringError(path, err)
	}
	cs, err := pcheck.ForProgram(c, pcheck.ProgramOptions{Seed: opts.Seed, Vectors: opts.Vectors, Args: values, MaxHostBytes: maxHostBytes, IR: prog, MaxWork: maxProgramWork})
	if err != nil {
		return err
	}
	res, err := runCase(cs)
	var we *emu.WorkError
	switch {
	case errors.As(err, &we) && we.At == nil:
		// Refused from a launch's first CTA, before running the rest: bad usage, as
		// the refusals before the run.
		return &usageError{Msg: fmt.Sprintf("check -from: kernel %s: the emulator stopped after the first CTA: %s (at most about half a minute; a unit is about one ALU warp instruction): run it on a GPU (ptxgen-gpu), or give it less work",
			we.Kernel, strings.TrimPrefix(we.Error(), "emu: "+we.Kernel+": "))}
	case errors.As(err, &we):
		// Work the bound before the run could not see (a loop bound read from memory,
		// or one that never ends): the emulator cannot check the program, which is
		// not a failed check.
		return &usageError{Msg: fmt.Sprintf("check -from: %s: a loop that does not end, or a program too large for the emulator: run it on a GPU (ptxgen-gpu), or give it less work",
			strings.TrimPrefix(we.Error(), "emu: "))}
	}
	if err != nil {
		return &failure{err.Error()}
	}
	if opts.Vectors == "" && res.OK() && len(res.Reports) == 1 {
		// Without a folder running is the check: one line says what it checked.
		fmt.Fprintf(stdout, "%s\n%s\nPASS\n", res.Case, res.Reports[0].Name)
		return nil
	}
	fmt.Fprint(stdout, res.String())
	if !res.OK() {
		return &failure{"outputs outside tolerance"}
	}
	fmt.Fprintln(stdout, "PASS")
	return nil
}

// parseArgs reads -args name=value,...: each name once.
func parseArgs(s string) (map[string]string, error) {
	values := map[string]string{}
	if s == "" {
		return values, nil
	}
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" || value == "" {
			return nil, &kernels.ConfigError{Flag: "args", Value: pcheck.Shown(s), Want: "name=value pairs separated by commas (e.g. n=1000,alpha=0.5)"}
		}
		if _, dup := values[name]; dup {
			return nil, &kernels.ConfigError{Flag: "args", Value: pcheck.Shown(s), Want: "each name once (" + pcheck.Shown(name) + " is given twice)"}
		}
		values[name] = value
	}
	return values, nil
}

// genFromProgram is the program gen -from writes: without a launch plan, the
// generated launcher allocates each workspace buffer once, so a per-(row, chunk)
// size becomes a fixed one for the largest launch (capacity x largest split).
func genFromProgram(path string) (*ir.Program, error) {
	prog, err := readIRFile(path)
	if err != nil {
		return nil, err
	}
	parts := int64(0)
	for _, k := range prog.Kernels {
		if s := k.SplitParam(); s != nil {
			rows, split := int64(0), int64(0)
			for d, n := range k.GridParam {
				switch n {
				case k.RowsParam():
					rows = int64(k.Grid[d])
				case s.Value.Name:
					split = int64(k.Grid[d])
				}
			}
			parts = max(parts, rows*split)
		}
	}
	q := *prog
	q.Workspace = nil
	for _, w := range prog.Workspace {
		if w.PerPart > 0 {
			if w.PerPart > (ir.MaxWorkspaceBytes-w.Bytes)/parts {
				return nil, &usageError{Msg: fmt.Sprintf("-from %s: workspace %s: %d bytes + %d per part x %d parts (capacity x largest split) is more than %d bytes", path, w.Name, w.Bytes, w.PerPart, parts, int64(ir.MaxWorkspaceBytes))}
			}
			w = ir.Workspace{Name: w.Name, Bytes: w.Bytes + w.PerPart*parts}
		}
		q.Workspace = append(q.Workspace, w)
	}
	return &q, nil
}

// relativeFrom is the -from path as the header's command line records it: relative
// to the directory of the files gen writes, where the command is rerun.
func relativeFrom(path, dir string) string {
	absPath, err1 := filepath.Abs(path)
	absDir, err2 := filepath.Abs(dir)
	if err1 == nil && err2 == nil {
		if rel, err := filepath.Rel(absDir, absPath); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.Base(path)
}

// genFrom lowers a program of one's own for each target and renders the launcher,
// the PTX files and the manifest, as gen does for a built-in kernel (without shape
// constants: a file has no configuration struct).
func genFrom(path string, targets []target.Target, opt gogen.Options) ([]gogen.File, error) {
	prog, err := genFromProgram(path)
	if err != nil {
		return nil, err
	}
	if opt.Type == "" && opt.File != "" {
		opt.Type = gogen.TypeName(prog.Name)
		if !gogen.IsTypeName(opt.Type) {
			what := "program"
			if len(prog.Kernels) == 1 && prog.Kernels[0].Name == prog.Name {
				what = "kernel"
			}
			return nil, &usageError{Msg: fmt.Sprintf("-from %s: %s %q gives the type name %q (its name in Go's exported form), which is not an exported Go identifier: name the type with -type (e.g. -type Kernel)", path, what, prog.Name, opt.Type)}
		}
	}
	opt.Config = "-from " + filepath.Base(path)
	for _, k := range prog.Kernels {
		if r := k.RowsParam(); r != "" {
			opt.Capacity = "%" + r + " max in " + filepath.Base(path) // the grid bound that sets it
			break
		}
	}
	var cs []*gogen.Compiled
	for _, t := range targets {
		c, err := gogen.Compile(plan.Unplanned(prog), t.WithSMs(prog.SMs))
		if err != nil {
			return nil, loweringError(path, fmt.Errorf("%s: %w", t, err))
		}
		cs = append(cs, c)
	}
	files, err := gogen.Render(cs, opt)
	if err != nil {
		return nil, &usageError{Msg: "gen -from " + path + ": " + err.Error()}
	}
	return files, nil
}
