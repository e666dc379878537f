// Package ptxas runs NVIDIA's PTX assembler and disassembler as a test oracle.
//
// ptxgen's emulator can only prove that generated PTX computes the right thing if it also
// is PTX the real toolchain accepts, so tests assemble every generated kernel with ptxas and
// inspect the machine code (HMMA present, no local memory) with cuobjdump. The tools come
// from Debian's non-free nvidia-cuda-toolkit 11.8 (`make tools` puts them in .tools/), which
// assembles PTX ISA up to 7.8 for targets up to sm_90.
package ptxas

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// modulePath identifies this module's go.mod when looking for the repository root.
const modulePath = "github.com/ptxgen/ptxgen"

// toolsBin is where `make tools` unpacks the CUDA binaries, relative to the module root.
const toolsBin = ".tools/cuda/usr/bin"

// ErrNotFound is returned (wrapped) by Find when no ptxas or cuobjdump can be located.
var ErrNotFound = errors.New("not found")

// Find returns the ptxas path: $PTXAS if set, else <module root>/.tools/cuda/usr/bin/ptxas,
// else ptxas on PATH. The .tools copy wins over PATH so that every machine assembles with the
// same 11.8 release the goldens and tests were written against.
func Find() (string, error) { return find("ptxas", "PTXAS") }

// FindCuobjdump returns the cuobjdump path, searched like Find with $CUOBJDUMP.
func FindCuobjdump() (string, error) { return find("cuobjdump", "CUOBJDUMP") }

func find(name, env string) (string, error) {
	if p := os.Getenv(env); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("ptxas: $%s=%s: %w", env, p, err)
		}
		return p, nil
	}
	if root := moduleRoot(); root != "" {
		p := filepath.Join(root, toolsBin, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("ptxas: %s %w in $%s, %s or PATH (run `make tools`)", name, ErrNotFound, env, toolsBin)
}

func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

var (
	rootOnce sync.Once
	rootDir  string
)

// moduleRoot finds the directory of this module's go.mod: first above the working
// directory (tests run in their package directory, commands usually in the repository),
// then above this source file (a test binary run elsewhere on the machine that built it).
func moduleRoot() string {
	rootOnce.Do(func() {
		var starts []string
		if wd, err := os.Getwd(); err == nil {
			starts = append(starts, wd)
		}
		if _, file, _, ok := goruntime.Caller(0); ok {
			starts = append(starts, filepath.Dir(file))
		}
		for _, dir := range starts {
			for {
				if isModuleRoot(dir) {
					rootDir = dir
					return
				}
				parent := filepath.Dir(dir)
				if parent == dir {
					break
				}
				dir = parent
			}
		}
	})
	return rootDir
}

func isModuleRoot(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		return false
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "module" && strings.Trim(f[1], `"`) == modulePath {
			return true
		}
	}
	return false
}

// Result is what one ptxas run produced. The statistics come from `ptxas -v`; when the
// module has several kernels each figure is the largest over them, because tests ask
// "does anything spill", not which kernel did.
type Result struct {
	Cubin    []byte   // the assembled ELF, for SASS or for loading on a GPU
	Log      string   // everything ptxas printed, with the temporary file name replaced by "kernel.ptx"
	Warnings []string // the log lines that are warnings
	// Registers is the number of registers per thread ("Used N registers").
	Registers int
	// SpillStores and SpillLoads are the bytes of register spills per thread.
	SpillStores, SpillLoads int
	// StackBytes is the per-thread stack frame, where local arrays and spills live under the ABI.
	StackBytes int
	// LocalBytes is the per-thread local memory: the stack frame plus any "N bytes lmem" that
	// ptxas reports. Nonzero means the kernel touches local memory, which generated kernels
	// must not (it is slow and means fragments did not stay in registers).
	LocalBytes int
}

// Error is returned by Assemble when ptxas rejects the PTX. Its message carries the log,
// whose lines name the offending PTX line ("kernel.ptx, line 12; error : ...").
type Error struct {
	Arch string
	Log  string
	Err  error // the process error (exit status), if any
}

func (e *Error) Error() string {
	return fmt.Sprintf("ptxas -arch=%s failed: %v\n%s", e.Arch, e.Err, strings.TrimRight(e.Log, "\n"))
}

func (e *Error) Unwrap() error { return e.Err }

var archRE = regexp.MustCompile(`^sm_[0-9]+[af]?$`)

// inputName is the PTX file name ptxas sees; it appears in every error line.
const inputName = "kernel.ptx"

// Assemble runs `ptxas -v -arch=<arch> -o kernel.cubin kernel.ptx` on ptxText. Any error
// (a nonzero exit or an "error" line) returns an *Error holding the log; warnings are
// collected in Result.Warnings and do not fail the call.
func Assemble(ptxText, arch string) (*Result, error) {
	if !archRE.MatchString(arch) {
		return nil, fmt.Errorf("ptxas: bad arch %q (want e.g. sm_80, sm_90)", arch)
	}
	bin, err := Find()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "ptxas")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.WriteFile(filepath.Join(dir, inputName), []byte(ptxText), 0o644); err != nil {
		return nil, err
	}
	// Run in the temporary directory with relative names, so that the log names the input
	// "kernel.ptx" and not a random path; messages then compare equal across runs.
	cmd := exec.Command(bin, "-v", "-arch="+arch, "-o", "kernel.cubin", inputName)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = &out
	runErr := cmd.Run()
	log := strings.ReplaceAll(out.String(), dir+string(filepath.Separator), "")

	res := &Result{Log: log}
	failed := runErr != nil
	for _, line := range strings.Split(log, "\n") {
		switch {
		case isSeverity(line, "error"), isSeverity(line, "fatal"):
			failed = true
		case isSeverity(line, "warning"):
			res.Warnings = append(res.Warnings, strings.TrimSpace(line))
		}
	}
	if failed {
		if runErr == nil {
			runErr = errors.New("ptxas reported errors")
		}
		return nil, &Error{Arch: arch, Log: log, Err: runErr}
	}
	parseStats(res, log)
	res.Cubin, err = os.ReadFile(filepath.Join(dir, "kernel.cubin"))
	if err != nil {
		return nil, fmt.Errorf("ptxas: reading output: %w\n%s", err, log)
	}
	return res, nil
}

// isSeverity reports whether a ptxas log line has the given severity. ptxas writes
// "ptxas <severity> : msg" or "ptxas <file>, line N; <severity> : msg"; matching the word
// before the colon keeps a kernel named "error_check" from counting as an error.
func isSeverity(line, sev string) bool {
	if !strings.HasPrefix(line, "ptxas") {
		return false
	}
	head, _, ok := strings.Cut(line, ":")
	if !ok {
		return false
	}
	f := strings.FieldsFunc(head, func(r rune) bool { return r == ' ' || r == '\t' || r == ';' })
	return len(f) > 0 && f[len(f)-1] == sev
}

var (
	regsRE  = regexp.MustCompile(`Used (\d+) registers`)
	lmemRE  = regexp.MustCompile(`(\d+) bytes lmem`)
	frameRE = regexp.MustCompile(`(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads`)
)

// parseStats fills the -v statistics. Lines look like
//
//	ptxas info    : Used 16 registers, 376 bytes cmem[0]
//	    256 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
//
// and, from releases or ABI modes that report it separately, "N bytes lmem".
func parseStats(r *Result, log string) {
	lmem := 0
	for _, line := range strings.Split(log, "\n") {
		if m := regsRE.FindStringSubmatch(line); m != nil {
			r.Registers = max(r.Registers, atoi(m[1]))
		}
		if m := lmemRE.FindStringSubmatch(line); m != nil {
			lmem = max(lmem, atoi(m[1]))
		}
		if m := frameRE.FindStringSubmatch(line); m != nil {
			r.StackBytes = max(r.StackBytes, atoi(m[1]))
			r.SpillStores = max(r.SpillStores, atoi(m[2]))
			r.SpillLoads = max(r.SpillLoads, atoi(m[3]))
		}
	}
	r.LocalBytes = r.StackBytes + lmem
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s) // the regexps only match digits
	return n
}

// SASS disassembles a cubin with `cuobjdump -sass` (found like ptxas, via $CUOBJDUMP).
func SASS(cubin []byte) (string, error) {
	bin, err := FindCuobjdump()
	if err != nil {
		return "", err
	}
	dir, err := os.MkdirTemp("", "cuobjdump")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	f := filepath.Join(dir, "kernel.cubin")
	if err := os.WriteFile(f, cubin, 0o644); err != nil {
		return "", err
	}
	cmd := exec.Command(bin, "-sass", f)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("cuobjdump -sass: %v\n%s", err, stderr.String())
	}
	return stdout.String(), nil
}

// Require returns the ptxas path for a test. When ptxas is absent it skips the test, so
// that `go test ./...` passes on a bare machine, unless $CI is set: CI installs the tools,
// and there a missing assembler must fail rather than silently test nothing.
func Require(t testing.TB) string {
	t.Helper()
	p, err := Find()
	if err == nil {
		return p
	}
	if inCI() {
		t.Fatalf("%v; CI is set, so this fails instead of skipping", err)
		return ""
	}
	t.Skipf("skipping: %v", err)
	return ""
}

// inCI reports whether $CI is set to something other than empty, "0" or "false".
func inCI() bool {
	v := strings.ToLower(strings.TrimSpace(os.Getenv("CI")))
	return v != "" && v != "0" && v != "false"
}
