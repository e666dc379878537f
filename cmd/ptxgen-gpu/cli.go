package main

// The command line, kept free of the cuda build tag so that it is built and tested
// everywhere: main (main.go, cuda builds) hands run an opener for the real GPU, the
// tests one whose "GPU" is the emulator.

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/ptxgen/ptxgen/check"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/lower"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/runtime"
	"github.com/ptxgen/ptxgen/target"
)

const usage = `ptxgen-gpu runs ptxgen kernels on a GPU (cuda builds; see make gpu-bin).

Commands:
  ptxgen-gpu [info] [-device N]
               describe the GPU
  ptxgen-gpu check -gpu [-device N] [-kernel K] [kernel flags] [-target T] [-seed N]
               [-vectors DIR] [-invalid F] [-poison] [-out-of-pool] [-pool-gib G] [-emu=false]
               run the generated PTX on the GPU on seeded inputs (or a test-vector
               folder), compare with the float64 reference, run the same case in the
               emulator and compare GPU with emulator against a documented bound
               (check.GPUEmuRel and friends). -target defaults to the device's own.
               -out-of-pool puts indices slots, slots+1 and INT_MAX inside the valid
               prefix; -pool-gib G gives each segment a pool of G GiB with the valid
               candidates at its end (no emulator run)
  ptxgen-gpu bench [-shapes all|NAMES] [-iters N] [-flush-mb MB] [-bw B/s -flops F/s]
               [-json FILE] [-svg FILE] [-triton FILE] [-vectors-out DIR]
               time mla_decode on the benchmark shapes with CUDA events (L2 flushed
               and inputs rotated), against the roofline floor under ceilings measured
               with generated copy and mma_loop kernels; -vectors-out writes the
               shapes' inputs for bench/triton_seed.py, -triton merges its timings
  ptxgen-gpu dump [-kernel K] [kernel flags] [-target T] [-o FILE]
               write the PTX of a configuration (needs no GPU, but this binary
               still needs the driver's libcuda to start)

Exit status: 0 on success, 1 when a check fails, 2 for bad usage.
`

// device is an opened GPU as run needs it.
type device interface {
	// Info describes the device on several lines.
	Info() string
	// Arch is the device's architecture as a target name ("sm_90").
	Arch() string
	// Executor returns an Executor running cases on the device; it logs every loaded
	// kernel (registers, local memory) to w.
	Executor(w io.Writer) check.Executor
	Close() error
}

// opener opens GPU number ordinal.
type opener func(ordinal int) (device, error)

type usageError = kernels.UsageError

type failure struct{ msg string }

func (f *failure) Error() string { return f.msg }

func run(args []string, stdout, stderr io.Writer, open opener) int {
	err := dispatch(args, stdout, stderr, open)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "ptxgen-gpu:", err)
	// Anything but bad usage (a failed check, no device, a driver error) is a
	// failed run.
	if kernels.IsUsage(err) {
		return 2
	}
	return 1
}

func dispatch(args []string, stdout, stderr io.Writer, open opener) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") && args[0] != "-h" && args[0] != "-help" && args[0] != "--help" {
		return info(args, stdout, open)
	}
	switch args[0] {
	case "info":
		return info(args[1:], stdout, open)
	case "check":
		return checkCmd(args[1:], stdout, stderr, open)
	case "dump":
		return dump(args[1:], stdout, stderr)
	case "bench":
		return benchCmd(args[1:], stdout, stderr, open)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	return &usageError{Msg: fmt.Sprintf("unknown command %q: want info, check, bench or dump (see ptxgen-gpu help)", args[0])}
}

func info(args []string, stdout io.Writer, open opener) error {
	fs := flag.NewFlagSet("ptxgen-gpu info", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	ordinal := fs.Int("device", 0, "CUDA device `ordinal`")
	if err := kernels.ParseFlags(fs, args); err != nil {
		return err
	}
	d, err := open(*ordinal)
	if err != nil {
		return fmt.Errorf("opening device %d: %w", *ordinal, err)
	}
	defer d.Close()
	fmt.Fprint(stdout, d.Info())
	return nil
}

// kernelFlags sets up a command's -kernel and -target flags (Parse binds the kernel's own), as
// ptxgen does; -target defaults to the device's own.
func kernelFlags(cmd string, stderr io.Writer) *kernels.CommandFlags {
	return kernels.NewCommandFlags("ptxgen-gpu "+cmd, "mla_decode", "", " (default: the device's own, or the newest it runs)", stderr)
}

// deviceTarget is the target to compile for on a device of architecture arch: its own
// when ptxgen has it, else the newest one it runs.
func deviceTarget(arch string) (target.Target, error) {
	if slices.Contains(target.TargetNames(), arch) {
		return target.LookupTarget(arch)
	}
	name, err := runtime.PickTarget(arch, target.TargetNames())
	if err != nil {
		return target.Target{}, err
	}
	return target.LookupTarget(name)
}

func dump(args []string, stdout, stderr io.Writer) error {
	fs := kernelFlags("dump", stderr)
	out := fs.String("o", "", "write the PTX to this `file` instead of standard output")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *fs.Target == "" {
		*fs.Target = "sm_90"
	}
	t, err := fs.Resolve(*fs.Target)
	if err != nil {
		return err
	}
	prog, err := kernels.BuildCall(fs.Config, t)
	if err != nil {
		return err
	}
	c, err := lower.CompileProgram(prog.Program, prog.Sequences(), t)
	if err != nil {
		if err := check.ExplainCompileError(fs.Config, t, err); kernels.IsUsage(err) {
			return err
		}
		return &usageError{Msg: err.Error()}
	}
	text := c.Module.Print()
	if *out == "" {
		_, err = io.WriteString(stdout, text)
		return err
	}
	if fi, err := os.Lstat(*out); err == nil {
		// Writing a FIFO blocks, a device or directory is no PTX file, a link could
		// point anywhere, and a file ptxgen did not write is someone's.
		if !fi.Mode().IsRegular() {
			return &kernels.ConfigError{Flag: "o", Value: *out, Want: "a regular file or a new name (not a link, FIFO, device or directory)"}
		}
		if head, err := readHead(*out, len(ptx.Header)); err != nil || string(head) != ptx.Header {
			return &kernels.ConfigError{Flag: "o", Value: *out, Want: "a new name or a PTX file ptxgen wrote (it exists and does not begin with ptxgen's header: remove it yourself to replace it)"}
		}
	}
	if err := os.WriteFile(*out, []byte(text), 0o644); err != nil {
		return &kernels.ConfigError{Flag: "o", Value: *out, Want: "a file that can be written (" + err.Error() + ")"}
	}
	return nil
}

func checkCmd(args []string, stdout, stderr io.Writer, open opener) error {
	fs := kernelFlags("check", stderr)
	useGPU := fs.Bool("gpu", false, "run on the GPU (required: the emulator-only check is ptxgen check -emu)")
	withEmu := fs.Bool("emu", true, "also run the case in the emulator and compare the GPU with it")
	ordinal := fs.Int("device", 0, "CUDA device `ordinal`")
	var opts check.CaseOptions
	opts.AddFlags(fs.FlagSet)
	fs.Float64Var(&opts.PoolGiB, "pool-gib", 0, "mla_decode: pools of this many `GiB` per segment with the valid candidates in their last pages, so every record read lies past 2^32 bytes when above 4 (0: small pools); the emulator does not run these")
	lower.CheckPasses = true
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !*useGPU {
		return &usageError{Msg: "check: say -gpu (the emulator-only check is ptxgen check -emu)"}
	}
	var t target.Target
	if *fs.Target != "" {
		var err error
		if t, err = fs.Resolve(*fs.Target); err != nil {
			return err
		}
	}
	// Validate the configuration before touching the device.
	v, err := fs.Config.Value()
	if err != nil {
		return err
	}
	if err := opts.Validate(); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if err := opts.CheckVectorFlags(set); err != nil {
		return err
	}
	if err := check.CheckKernelFlags(v, fs.FlagSet); err != nil {
		return err
	}
	d, err := open(*ordinal)
	if err != nil {
		return fmt.Errorf("opening device %d: %w", *ordinal, err)
	}
	defer d.Close()
	if *fs.Target == "" {
		own, err := deviceTarget(d.Arch())
		if err != nil {
			return &usageError{Msg: fmt.Sprintf("device %s: %v", d.Arch(), err)}
		}
		if t, err = fs.Resolve(own.Name); err != nil {
			return err
		}
	}
	c, err := check.ForConfig(v, t, opts)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "== GPU: %s", d.Info())
	final, err := d.Executor(stdout).Run(c)
	if err != nil {
		return &failure{fmt.Sprintf("%s: GPU: %v", c.Name, err)}
	}
	gres := &check.Result{Case: c.Name, Reports: c.Compare(final)}
	fmt.Fprint(stdout, gres.String())
	ok := gres.OK()
	summary := fmt.Sprintf("SUMMARY gpu=%s", verdict(gres.OK()))
	if *withEmu && opts.PoolGiB > 0 {
		// The emulator would copy each pool twice and run for minutes; the float64
		// reference is the check here.
		fmt.Fprintln(stdout, "== emulator: skipped (-pool-gib)")
		summary += " emu=skipped"
	} else if *withEmu {
		fmt.Fprintln(stdout, "== emulator")
		efinal, err := check.Emulator{}.Run(c)
		if err != nil {
			return &failure{fmt.Sprintf("%s: emulator: %v", c.Name, err)}
		}
		eres := &check.Result{Case: c.Name, Reports: c.Compare(efinal)}
		fmt.Fprint(stdout, eres.String())
		ds := check.DiffRuns(c, final, efinal)
		fmt.Fprintln(stdout, "== GPU vs emulator")
		fmt.Fprint(stdout, check.FormatDiffs(ds))
		ok = ok && eres.OK() && check.DiffsOK(ds)
		summary += fmt.Sprintf(" emu=%s diff=%s", verdict(eres.OK()), verdict(check.DiffsOK(ds)))
		for _, dd := range ds {
			summary += fmt.Sprintf(" %s:differ=%d/%d,maxabs=%.3g,maxrel=%.3g", dd.Name, dd.Differ, dd.N, dd.MaxAbs, dd.MaxRel)
			if dd.Elem == "bf16" {
				summary += fmt.Sprintf(",maxulp=%d", dd.MaxULP)
			}
		}
	}
	for _, r := range gres.Reports {
		summary += fmt.Sprintf(" %s:ref_maxabs=%.3g,ref_cos=%.2g", r.Name, r.MaxAbs, r.CosDist)
	}
	fmt.Fprintf(stdout, "%s case=%q\n", summary, c.Name)
	if !ok {
		return &failure{c.Name + ": outside tolerance"}
	}
	fmt.Fprintln(stdout, "PASS")
	return nil
}

func verdict(ok bool) string {
	if ok {
		return "ok"
	}
	return "FAIL"
}

// readHead reads at most n bytes of a file.
func readHead(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(n)))
}
