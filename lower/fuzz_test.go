package lower

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ptxgen/ptxgen/ir"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// Bounds on what FuzzCompile lowers, so an iteration stays short (the fuzzer stops a
// worker whose input runs 10 s): inputs past them are skipped, not lowered. Within
// them a compilation that runs longer than fuzzCompileTime or allocates more than
// fuzzCompileBytes is a failure.
const (
	fuzzMaxText      = 16 << 10 // bytes of IR text
	fuzzMaxElems     = 1 << 16  // tile elements summed over every value
	fuzzMaxOps       = 400      // ops, loop bodies included
	fuzzCompileTime  = 5 * time.Second
	fuzzCompileBytes = 512 << 20
)

// fuzzTargets are the targets an input is lowered for, one per input (by its length).
var fuzzTargets = []string{"sm_90", "sm_80", "sm_120", "sm_89"}

// FuzzCompile lowers what ir.ParseProgram accepts: every kernel of the program is
// compiled for one target with the checks after every pass, and then
// (issue 29) nothing panics, no compilation hangs or allocates what the bounds
// above do not allow, every error is one line that no pass check raised (a check
// failing after a pass is a lowering bug, not bad input), and every module passes
// ptx.ValidateModule and prints text ptx.Parse reads back. Seeds:
// testdata/fuzz/FuzzCompile, and the codegen cases and -from examples.
func FuzzCompile(f *testing.F) {
	for _, glob := range []string{"testdata/codegen/*.ir", "testdata/kernels/*.ir", "../ptxgen/testdata/from/*.ir", "../examples/rmsnorm/rmsnorm/*.ir"} {
		paths, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, path := range paths {
			src, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(string(src))
		}
	}
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > fuzzMaxText {
			return
		}
		p, err := ir.ParseProgram(src)
		if err != nil {
			return
		}
		if !fuzzSmall(p) {
			return
		}
		tg := target.MustLookup(fuzzTargets[len(src)%len(fuzzTargets)])
		for i, k := range p.Kernels {
			opt := Options{Check: true, Follows: i > 0, Precedes: i < len(p.Kernels)-1}
			res, err := compileBounded(t, k, tg, opt)
			if err != nil {
				fuzzCheckError(t, k, tg, err)
				continue
			}
			m := res.Kernel.Module
			if err := ptx.ValidateModule(m); err != nil {
				t.Fatalf("%s for %s: the module does not validate: %v\n%s", k.Name, tg, err, src)
			}
			if _, err := ptx.Parse(m.Print()); err != nil {
				t.Fatalf("%s for %s: the printed module does not parse: %v\n%s", k.Name, tg, err, src)
			}
		}
	})
}

// fuzzSmall reports whether p is within FuzzCompile's bounds on ops and elements.
func fuzzSmall(p *ir.Program) bool {
	ops, elems := 0, 0
	for _, k := range p.Kernels {
		ir.WalkOps(k.Body, func(o *ir.Op) {
			ops++
			for _, r := range o.Results {
				elems += r.Type.Elems()
			}
		})
	}
	return ops <= fuzzMaxOps && elems <= fuzzMaxElems
}

// compileBounded compiles k, failing the test when the compilation runs past
// fuzzCompileTime or allocates more than fuzzCompileBytes.
func compileBounded(t *testing.T, k *ir.Kernel, tg target.Target, opt Options) (*Result, error) {
	t.Helper()
	type outcome struct {
		res *Result
		err error
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan outcome, 1)
	go func() {
		res, err := Compile(k, tg, opt)
		done <- outcome{res, err}
	}()
	var out outcome
	select {
	case out = <-done:
	case <-time.After(fuzzCompileTime):
		t.Fatalf("compiling %s for %s still runs after %v:\n%s", k.Name, tg, fuzzCompileTime, ir.Print(k))
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > fuzzCompileBytes {
		t.Fatalf("compiling %s for %s allocated %d MB, more than %d:\n%s", k.Name, tg, n>>20, fuzzCompileBytes>>20, ir.Print(k))
	}
	return out.res, out.err
}

// fuzzCheckError fails the test on an error of Compile that is not one line, or
// that a pass's check raised.
func fuzzCheckError(t *testing.T, k *ir.Kernel, tg target.Target, err error) {
	t.Helper()
	msg := err.Error()
	if strings.Contains(msg, "\n") {
		t.Fatalf("compiling %s for %s: the error is not one line: %q\n%s", k.Name, tg, msg, ir.Print(k))
	}
	for _, pass := range PassNames() {
		if strings.Contains(msg, ": after "+pass+": ") {
			t.Fatalf("compiling %s for %s: a pass check failed (a lowering bug): %v\n%s", k.Name, tg, err, ir.Print(k))
		}
	}
}
