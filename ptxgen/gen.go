package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	pcheck "github.com/ptxgen/ptxgen/check"
	"github.com/ptxgen/ptxgen/gogen"
	"github.com/ptxgen/ptxgen/kernels"
	"github.com/ptxgen/ptxgen/ptx"
	"github.com/ptxgen/ptxgen/target"
)

// gen writes a typed Go launcher for one kernel configuration and one PTX file per target
// beside it (see package gogen), for downstream modules' `go generate`:
//
//	//go:generate go tool ptxgen gen -kernel gemm -m 128 -targets sm_120,sm_90 -pkg gemm -o gemm_gen.go
//
// The header of the Go file records the generator version and a canonical command line
// that regenerates the same bytes when run from the Go file's directory: the full
// configuration (every kernel flag, defaults included), the targets newest first, the
// package, -type when given, and -o as a base name.
func gen(args []string, stdout, stderr io.Writer) error {
	fs := kernelFlags("gen", stderr)
	targets := fs.String("targets", "", "comma-separated GPU targets to write PTX for, e.g. sm_120,sm_90 (default: -target)")
	pkg := fs.String("pkg", "", "Go package name of the generated file (default $GOPACKAGE, which go generate sets)")
	typ := fs.String("type", "", "name of the generated type (default: the kernel's name in Go form, gemm: GEMM)")
	out := fs.String("o", "", "the Go `file` to write (required without -manifest); the PTX files go beside it, named FILE_TARGET.ptx")
	manifest := fs.String("manifest", "", "also write the launch manifest, a JSON `file` for hosts that are not Go, beside the PTX (alone without -o: the PTX files are then named MANIFEST_TARGET.ptx)")
	from := fs.String("from", "", fromUsage)
	if err := fs.Parse(args); err != nil {
		return err
	}
	usingFrom, err := fromGiven(fs.FlagSet, *from)
	if err != nil {
		return err
	}
	if usingFrom {
		if err := fromFlags(fs.FlagSet, "target", "targets", "plan-target", "pkg", "type", "o", "manifest"); err != nil {
			return err
		}
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["target"] && set["targets"] {
		return &usageError{Msg: "gen: give -targets or -target, not both"}
	}
	list := *targets
	if !set["targets"] {
		list = *fs.Target
	}
	ts, err := genTargets(list)
	if err != nil {
		return err
	}
	lowered := make([]target.Target, len(ts))
	for i, name := range ts {
		if lowered[i], err = fs.Resolve(name); err != nil {
			return err
		}
	}
	if *pkg == "" {
		*pkg = os.Getenv("GOPACKAGE")
	}
	if *out == "" && *manifest == "" {
		return &usageError{Msg: "gen: -o is required (the Go file to write), or -manifest (a launch manifest alone)"}
	}
	if *out == "" {
		// The manifest alone has no Go file for these to name.
		for _, f := range [][2]string{{"pkg", "the Go file's package"}, {"type", "the Go file's type"}} {
			if n, what := f[0], f[1]; set[n] {
				return &usageError{Msg: fmt.Sprintf("gen: -%s names %s, and without -o there is no Go file (only -manifest): leave it out", n, what)}
			}
		}
	}
	if *pkg == "" && *out != "" {
		return &usageError{Msg: "gen: -pkg is required outside go generate (the Go package name of the generated file)"}
	}
	if set["type"] && !gogen.IsTypeName(*typ) {
		return &kernels.ConfigError{Flag: "type", Value: quoteEmpty(*typ), Want: "an exported Go identifier (an upper-case letter, then letters, digits and _), or no -type for the kernel's name in Go form"}
	}
	if *out != "" {
		if err := checkOutput(*out, ts); err != nil {
			return err
		}
	}
	if *manifest != "" {
		if err := checkManifest(*manifest, *out, ts); err != nil {
			return err
		}
	}
	if _, err := fs.Config.Value(); err != nil && !usingFrom {
		return err // a bad configuration value, before any lowering
	}
	base, ptxBase, dir := "", "", filepath.Dir(*manifest)
	if *out != "" {
		base, ptxBase, dir = filepath.Base(*out), filepath.Base(*out), filepath.Dir(*out)
	} else {
		ptxBase = strings.TrimSuffix(filepath.Base(*manifest), ".json") + ".go"
	}
	manifestBase := ""
	if *manifest != "" {
		manifestBase = filepath.Base(*manifest)
	}
	// The flag whose value names the PTX files: -o, or -manifest alone.
	blame := func(want string) error { return &kernels.ConfigError{Flag: "o", Value: *out, Want: want} }
	if *out == "" {
		blame = func(want string) error { return &kernels.ConfigError{Flag: "manifest", Value: *manifest, Want: want} }
	}
	cmd := []string{"ptxgen", "gen"}
	if usingFrom {
		cmd = append(cmd, "-from", relativeFrom(*from, dir))
	} else {
		cmd = append(cmd, fs.Config.Args()...)
	}
	cmd = append(cmd, "-targets", strings.Join(ts, ","))
	if *fs.PlanTarget != "" {
		cmd = append(cmd, "-plan-target", *fs.PlanTarget)
	}
	if *out != "" {
		cmd = append(cmd, "-pkg", *pkg)
	}
	if *typ != "" {
		cmd = append(cmd, "-type", *typ)
	}
	if *out != "" {
		cmd = append(cmd, "-o", base)
	}
	if manifestBase != "" {
		cmd = append(cmd, "-manifest", manifestBase)
	}
	opt := gogen.Options{
		Package:  *pkg,
		Type:     *typ,
		File:     base,
		Manifest: manifestBase,
		Command:  shellJoin(cmd),
	}
	if usingFrom {
		files, err := genFrom(*from, lowered, opt)
		if err != nil {
			return err
		}
		return writeGenerated(files, *out != "", dir, ptxBase, ts, blame, stderr)
	}
	files, err := gogen.Generate(fs.Config, lowered, opt)
	var ce *kernels.ConfigError
	if errors.As(err, &ce) {
		return err
	}
	if err != nil {
		for _, t := range lowered {
			if e := pcheck.ExplainCompileError(fs.Config, t, err); e != err {
				return e
			}
		}
		return &usageError{Msg: "gen: " + err.Error()}
	}
	return writeGenerated(files, *out != "", dir, ptxBase, ts, blame, stderr)
}

// writeGenerated writes gen's files into dir (the Go file, when there is one, first in
// files) and removes the PTX files of targets no longer generated; blame names the flag
// that chose the PTX files' names in a refusal. It refuses (checkOtherUsers) to change
// or remove a PTX file that another launcher or manifest in dir uses.
func writeGenerated(files []gogen.File, goFile bool, dir, ptxBase string, ts []string, blame func(want string) error, stderr io.Writer) error {
	// PTX first: the Go file embeds them, so it is renamed into place last.
	if goFile {
		files = append(files[1:], files[0])
	}
	stale := stalePTX(dir, ptxBase, ts)
	var removed []string
	for _, f := range stale {
		removed = append(removed, f.name)
	}
	if err := checkOtherUsers(dir, ptxBase, files, removed, blame); err != nil {
		return err
	}
	if err := writeFiles(dir, files); err != nil {
		return &usageError{Msg: "gen: " + err.Error()}
	}
	return removeStalePTX(dir, stale, stderr)
}

// checkManifest refuses a -manifest that gen should not write: not a .json name, a
// directory that does not exist, another directory than -o's (the manifest names the
// PTX files beside it), or an existing file (the manifest or, alone, its PTX files
// for targets ts) that ptxgen did not write (checkExisting).
func checkManifest(manifest, out string, ts []string) error {
	bad := func(want string) error { return &kernels.ConfigError{Flag: "manifest", Value: manifest, Want: want} }
	base, dir := filepath.Base(manifest), filepath.Dir(manifest)
	switch {
	case !strings.HasSuffix(base, ".json") || base == ".json":
		return bad("a file name ending in .json")
	case gogen.CheckFileName(base) != nil:
		return bad("a file name of " + gogen.FileNameChars + " (the PTX files are named after it)")
	case out != "" && filepath.Clean(dir) != filepath.Clean(filepath.Dir(out)):
		return bad(fmt.Sprintf("a file in the directory of -o (%s), beside the PTX files it names", filepath.Dir(out)))
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return bad(fmt.Sprintf("a file in an existing directory (%s is not one)", dir))
	}
	if err := checkExisting(manifest, manifestHeader); err != nil {
		return bad(err.Error())
	}
	if out == "" {
		for _, t := range ts {
			if err := checkExisting(filepath.Join(dir, gogen.PTXName(strings.TrimSuffix(base, ".json")+".go", t)), ptxHeader); err != nil {
				return bad(err.Error())
			}
		}
	}
	return nil
}

// The first bytes of every file gen writes: an existing file that does not begin
// with its kind's is not ptxgen's, and gen will not overwrite it.
const (
	goHeader       = "// Code generated by \"ptxgen gen "
	manifestHeader = "{\n  \"format\": \"" + gogen.ManifestFormat + "\","
)

// checkExisting refuses to overwrite path unless it is new or a regular file that
// begins with header (ptxgen wrote it): never a hand-written file, and never through a
// symbolic link (which could point anywhere) or into a FIFO (blocks) or a device.
func checkExisting(path, header string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("a file gen can inspect (%v)", err)
	}
	if fi.Mode()&os.ModeSymlink != 0 {
		return fmt.Errorf("a regular file or a new name (%s is a symbolic link; gen does not write through links)", path)
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("a regular file or a new name (%s is a %s)", path, fileKind(fi.Mode()))
	}
	head, err := readPrefix(path, len(header))
	if err != nil {
		return fmt.Errorf("a file gen can read (%v)", err)
	}
	if string(head) != header {
		return fmt.Errorf("a new name or a file ptxgen wrote (%s exists and does not begin with ptxgen's header, so gen will not overwrite it: remove it yourself to replace it)", path)
	}
	return nil
}

// checkOutput refuses an -o that gen cannot or should not write: not a .go name,
// a name the go command ignores (".go", "_x.go", ".x.go") or compiles only in tests,
// a directory that does not exist, or an existing file (the Go file or its PTX files
// for targets ts) that ptxgen did not write (checkExisting).
func checkOutput(out string, ts []string) error {
	bad := func(want string) error { return &kernels.ConfigError{Flag: "o", Value: out, Want: want} }
	base := filepath.Base(out)
	switch {
	case !strings.HasSuffix(base, ".go"):
		return bad("a file name ending in .go")
	case base == ".go" || strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_"):
		return bad("a Go file name the go command builds (not starting with . or _, e.g. kernel_gen.go)")
	case strings.HasSuffix(base, "_test.go"):
		return bad("a file name not ending in _test.go (the launcher is not a test file)")
	case gogen.CheckFileName(base) != nil:
		return bad("a file name of " + gogen.FileNameChars + " (it is named in //go:embed lines)")
	}
	dir := filepath.Dir(out)
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return bad(fmt.Sprintf("a file in an existing directory (%s is not one)", dir))
	}
	if err := checkExisting(out, goHeader); err != nil {
		return bad(err.Error())
	}
	for _, t := range ts {
		if err := checkExisting(filepath.Join(dir, gogen.PTXName(base, t)), ptxHeader); err != nil {
			return bad(err.Error())
		}
	}
	return nil
}

func fileKind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&os.ModeNamedPipe != 0:
		return "named pipe"
	case m&os.ModeDevice != 0:
		return "device"
	case m&os.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}

// staleFile is the PTX file of a target this run no longer generates.
type staleFile struct{ name, target string }

// stalePTX lists the PTX files of targets this run no longer generates
// (FILE_TARGET.ptx for a known target that is not in ts), which the Go file no longer
// embeds: the regular files among them that start with the header ptxgen prints.
func stalePTX(dir, base string, ts []string) []staleFile {
	var stale []staleFile
	for _, t := range target.Names() {
		if slices.Contains(ts, t) {
			continue
		}
		name := gogen.PTXName(base, t)
		if _, ok := readOwn(filepath.Join(dir, name), ptxHeader); ok {
			stale = append(stale, staleFile{name, t})
		}
	}
	return stale
}

// removeStalePTX deletes the stale PTX files (stalePTX), so a dropped target does not
// leave a file behind, and reports each removal.
func removeStalePTX(dir string, stale []staleFile, stderr io.Writer) error {
	for _, f := range stale {
		name := filepath.Join(dir, f.name)
		if err := os.Remove(name); err != nil {
			return &usageError{Msg: fmt.Sprintf("gen: removing stale %s: %v", name, err)}
		}
		fmt.Fprintf(stderr, "ptxgen gen: removed %s (target %s is no longer generated)\n", name, f.target)
	}
	return nil
}

// ptxHeader is how every PTX file ptxgen prints begins.
const ptxHeader = ptx.Header

// readPrefix reads at most n bytes of a regular file.
func readPrefix(path string, n int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, int64(n)))
}

// genTargets parses a comma-separated target list, rejects unknown and repeated targets,
// and orders it newest first, so that the same set always generates the same bytes.
func genTargets(list string) ([]string, error) {
	var ts []string
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if _, err := kernels.LookupTarget(t); err != nil {
			err.(*kernels.ConfigError).Flag = "targets"
			return nil, err
		}
		if slices.Contains(ts, t) {
			return nil, &kernels.ConfigError{Flag: "targets", Value: list, Want: "each target once"}
		}
		ts = append(ts, t)
	}
	names := target.Names() // oldest first
	slices.SortFunc(ts, func(a, b string) int { return slices.Index(names, b) - slices.Index(names, a) })
	return ts, nil
}

// quoteEmpty is a flag's value as an error line shows it: "" for the empty one.
func quoteEmpty(s string) string {
	if s == "" {
		return `""`
	}
	return s
}

// shellJoin renders a command line, quoting the arguments a shell would split or expand.
func shellJoin(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.,/=:+") == "" {
			q[i] = a
			continue
		}
		q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
