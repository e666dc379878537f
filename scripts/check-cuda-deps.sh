#!/usr/bin/env bash
# check-cuda-deps.sh fails when a package links gorgonia.org/cu where it must not.
#
# Why: gorgonia.org/cu's init() calls cuInit and os.Exit(1)s when there is no driver, and a
# binary linked against libcuda.so.1 does not even start without one. So
#  - without the `cuda` tag no package may depend on it (the plain build and `go test ./...`
#    must work on a machine with no GPU), and
#  - with the tag, only the commands meant for GPU machines may link it: the generator
#    (`ptxgen`) must keep running everywhere, also when built with -tags cuda.
set -euo pipefail
cd "$(dirname "$0")/.."

cu=gorgonia.org/cu
allowed_main=github.com/ptxgen/ptxgen/cmd/ptxgen-gpu
fail=0

# 1. Plain build, cgo on (as on a developer's machine): nobody imports cu.
bad=$(CGO_ENABLED=1 go list -f '{{.ImportPath}}{{range .Deps}} {{.}}{{end}}' ./... |
	awk -v cu="$cu" '{ for (i = 2; i <= NF; i++) if ($i == cu) { print $1; break } }')
if [ -n "$bad" ]; then
	echo "check-cuda-deps: these packages import $cu without the cuda build tag (put the files behind //go:build cuda && cgo):"
	echo "$bad" | sed 's/^/  /'
	fail=1
fi

# 2. cuda build: only the allowed commands link cu.
bad=$(go list -tags cuda -f '{{if eq .Name "main"}}{{.ImportPath}}{{range .Deps}} {{.}}{{end}}{{end}}' ./... |
	awk -v cu="$cu" -v ok="$allowed_main" 'NF && $1 != ok { for (i = 2; i <= NF; i++) if ($i == cu) { print $1; break } }')
if [ -n "$bad" ]; then
	echo "check-cuda-deps: these commands link $cu under -tags cuda and would exit on machines without a GPU driver:"
	echo "$bad" | sed 's/^/  /'
	fail=1
fi

[ "$fail" = 0 ] && echo "check-cuda-deps: ok (only $allowed_main links $cu)"
exit "$fail"
