package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ptxgen/ptxgen/gogen"
	"github.com/ptxgen/ptxgen/kernels"
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
	fs, err := kernelFlags("gen", args, stderr)
	if err != nil {
		return err
	}
	targets := fs.String("targets", "", "comma-separated GPU targets to write PTX for, e.g. sm_120,sm_90 (default: -target)")
	pkg := fs.String("pkg", "", "Go package name of the generated file (default $GOPACKAGE, which go generate sets)")
	typ := fs.String("type", "", "name of the generated type (default: the kernel's name in Go form, gemm: GEMM)")
	out := fs.String("o", "", "the Go `file` to write (required); the PTX files go beside it, named FILE_TARGET.ptx")
	if err := fs.Parse(args); err != nil {
		return err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if set["target"] && set["targets"] {
		return &usageError{Msg: "gen: give -targets or -target, not both"}
	}
	list := *targets
	if !set["targets"] {
		list, _, _ = strings.Cut(*fs.Target, target.PlanSep)
	}
	ts, err := genTargets(list)
	if err != nil {
		return err
	}
	lowered := make([]string, len(ts))
	for i, t := range ts {
		lowered[i] = fs.WithPlan(t)
	}
	if *pkg == "" {
		*pkg = os.Getenv("GOPACKAGE")
	}
	if *pkg == "" {
		return &usageError{Msg: "gen: -pkg is required outside go generate (the Go package name of the generated file)"}
	}
	if *out == "" {
		return &usageError{Msg: "gen: -o is required (the Go file to write)"}
	}
	if !strings.HasSuffix(*out, ".go") {
		return &kernels.ConfigError{Flag: "o", Value: *out, Want: "a file name ending in .go"}
	}
	if _, err := fs.Config.Value(); err != nil {
		return err // a bad configuration value, before any lowering
	}
	base := filepath.Base(*out)
	cmd := []string{"ptxgen", "gen"}
	cmd = append(cmd, fs.Config.Args()...)
	cmd = append(cmd, "-targets", strings.Join(ts, ","))
	if *fs.PlanTarget != "" {
		cmd = append(cmd, "-plan-target", *fs.PlanTarget)
	}
	cmd = append(cmd, "-pkg", *pkg)
	if *typ != "" {
		cmd = append(cmd, "-type", *typ)
	}
	cmd = append(cmd, "-o", base)
	files, err := gogen.Generate(fs.Config, lowered, gogen.Options{
		Package: *pkg,
		Type:    *typ,
		File:    base,
		Command: shellJoin(cmd),
	})
	var ce *kernels.ConfigError
	if errors.As(err, &ce) {
		return err
	}
	if err != nil {
		return &usageError{Msg: "gen: " + err.Error()}
	}
	dir := filepath.Dir(*out)
	// PTX first: the Go file embeds them, so it is written last.
	for _, f := range append(files[1:], files[0]) {
		if err := writeIfChanged(filepath.Join(dir, f.Name), f.Data); err != nil {
			return &failure{"gen: " + err.Error()}
		}
	}
	return nil
}

// genTargets parses a comma-separated target list, rejects unknown and repeated targets,
// and orders it newest first, so that the same set always generates the same bytes.
func genTargets(list string) ([]string, error) {
	var ts []string
	for _, t := range strings.Split(list, ",") {
		t = strings.TrimSpace(t)
		if err := kernels.CheckTarget(t); err != nil {
			err.(*kernels.ConfigError).Flag = "targets"
			return nil, err
		}
		if slices.Contains(ts, t) {
			return nil, &kernels.ConfigError{Flag: "targets", Value: list, Want: "each target once"}
		}
		ts = append(ts, t)
	}
	names := target.TargetNames() // oldest first
	slices.SortFunc(ts, func(a, b string) int { return slices.Index(names, b) - slices.Index(names, a) })
	return ts, nil
}

// writeIfChanged leaves a file that already holds data untouched, so regenerating an up
// to date package does not change modification times and rebuild it.
func writeIfChanged(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	return os.WriteFile(path, data, 0o644)
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
