#!/usr/bin/env bash
# check-examples.sh checks the downstream example modules under examples/ (each has its own
# go.mod with a replace to this repository):
#  1. `go generate ./...` in each one (which runs `go tool ptxgen gen` built from this tree)
#     must change no file: the committed launchers and PTX are up to date, and generation
#     is deterministic. Run it on a committed tree; any change or new file under the
#     example fails, and `git diff` shows what differs.
#  2. each one vets, builds and runs its tests without cgo (the runtime stub: what a
#     downstream machine without CUDA gets; examples/rmsnorm's test runs its kernel in the
#     emulator) and, with the CUDA headers of `make tools-cuda`, vets and builds with -tags cuda.
#     Under CI=true missing headers are an error, as in the rest of CI.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export GOWORK=off GOFLAGS=-mod=readonly

cudadev=$root/.tools/cudadev
have_cuda=0
if [ -f "$cudadev/usr/include/cuda.h" ]; then
	have_cuda=1
elif [ "${CI:-}" = true ]; then
	echo "check-examples: no CUDA headers in .tools/cudadev (run make tools-cuda)"
	exit 1
fi

fail=0
found=0
for mod in examples/*/go.mod; do
	[ -f "$mod" ] || continue
	found=1
	dir=$(dirname "$mod")
	echo "check-examples: $dir: go generate"
	(cd "$dir" && go generate ./...)
	changed=$(git status --porcelain --untracked-files=all -- "$dir")
	if [ -n "$changed" ]; then
		echo "check-examples: go generate changed files in $dir. After an intended change to"
		echo "generated code, run (cd $dir && go generate ./...) and commit the result; otherwise"
		echo "find what makes generation depend on the environment:"
		echo "$changed" | sed 's/^/  /'
		git --no-pager diff --stat -- "$dir"
		fail=1
		continue
	fi
	echo "check-examples: $dir: vet, build and test without cgo"
	(cd "$dir" && CGO_ENABLED=0 go vet ./... && CGO_ENABLED=0 go build ./... && CGO_ENABLED=0 go test ./...)
	if [ "$have_cuda" = 1 ]; then
		echo "check-examples: $dir: vet and build with -tags cuda"
		(cd "$dir" && CGO_ENABLED=1 CGO_CFLAGS="-I$cudadev/usr/include" \
			CGO_LDFLAGS="-L$cudadev/usr/lib/x86_64-linux-gnu/stubs" \
			sh -c 'go vet -tags cuda ./... && go build -tags cuda ./...')
	else
		echo "check-examples: $dir: no CUDA headers (make tools-cuda): -tags cuda build skipped"
	fi
done
if [ "$found" = 0 ]; then
	echo "check-examples: no example modules under examples/"
	exit 1
fi
[ "$fail" = 0 ] && echo "check-examples: ok"
exit "$fail"
