#!/usr/bin/env bash
# check-downstream.sh follows the README's "Kernels in your own module" steps verbatim in a
# fresh module in a temporary folder, with PTXGEN pointing at this checkout:
#  1. the pin block (go mod edit -require/-replace/-tool, go mod tidy),
#  2. a package holding the README's //go:generate line, then the build block (go generate,
#     go mod tidy, vet, build),
#  3. the README's usage snippet (multiply) in package main, vetted, built and run without
#     cuda: it must end in runtime.ErrNoCUDA, not a crash,
#  4. with the CUDA headers of `make tools-cuda`, vet and build with -tags cuda (under
#     CI=true missing headers are an error).
# The blocks are taken from README.md by their <!-- check-downstream: NAME --> markers, so
# a README change that breaks the steps fails here. Network: only the Go module proxy
# (and its checksum database), for the modules already in go.sum here.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
export GOWORK=off GOFLAGS=-mod=mod PTXGEN=$root

# block NAME prints the fenced block that follows <!-- check-downstream: NAME -->.
block() {
	awk -v m="<!-- check-downstream: $1 -->" '
		$0 == m { want = 1; next }
		want && /^```/ { if (inside) exit; inside = 1; next }
		inside { print }
	' "$root/README.md"
}
for b in pin generate build use; do
	if [ -z "$(block "$b")" ]; then
		echo "check-downstream: README.md has no block after <!-- check-downstream: $b -->"
		exit 1
	fi
done

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
echo "check-downstream: fresh module in $tmp"
go mod init example.com/downstream >/dev/null 2>&1

echo "check-downstream: pin (README)"
block pin | sed 's/^/  /'
bash -euo pipefail -c "$(block pin)"

gen=$(block generate)
pkg=$(sed -n 's/.* -pkg \([A-Za-z0-9_]*\) .*/\1/p' <<<"$gen")
mkdir -p "$pkg"
printf 'package %s\n\n%s\n' "$pkg" "$gen" >"$pkg/generate.go"

echo "check-downstream: build (README)"
block build | sed 's/^/  /'
bash -euo pipefail -c "$(block build)"
for f in "$pkg"/*_gen.go "$pkg"/*_gen_sm_*.ptx; do
	[ -f "$f" ] || { echo "check-downstream: go generate wrote no $f"; exit 1; }
done

echo "check-downstream: the usage snippet (README) in package main"
{
	printf 'package main\n\nimport (\n\t"errors"\n\t"fmt"\n\t"os"\n\n\t"github.com/ptxgen/ptxgen/runtime"\n\n\t"example.com/downstream/%s"\n)\n\n' "$pkg"
	block use
	cat <<'GO'

func main() {
	_, err := multiply(make([]byte, gemm.GEMMABytes), make([]byte, gemm.GEMMBBytes))
	if !errors.Is(err, runtime.ErrNoCUDA) {
		fmt.Println("want runtime.ErrNoCUDA without -tags cuda, got", err)
		os.Exit(1)
	}
	fmt.Println("ok:", err)
}
GO
} >main.go
gofmt -l . | { ! grep . ; } || { echo "check-downstream: the README's Go is not gofmt-formatted"; exit 1; }
CGO_ENABLED=0 go vet ./...
CGO_ENABLED=0 go run .

cudadev=$root/.tools/cudadev
if [ -f "$cudadev/usr/include/cuda.h" ]; then
	echo "check-downstream: vet and build with -tags cuda"
	CGO_ENABLED=1 CGO_CFLAGS="-I$cudadev/usr/include" \
		CGO_LDFLAGS="-L$cudadev/usr/lib/x86_64-linux-gnu/stubs" \
		sh -c 'go vet -tags cuda ./... && go build -tags cuda ./...'
elif [ "${CI:-}" = true ]; then
	echo "check-downstream: no CUDA headers in .tools/cudadev (run make tools-cuda)"
	exit 1
else
	echo "check-downstream: no CUDA headers (make tools-cuda): -tags cuda build skipped"
fi
echo "check-downstream: ok"
