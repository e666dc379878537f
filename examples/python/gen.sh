#!/usr/bin/env bash
# gen.sh generates, for each test-vector folder, the mla_decode kernels of its configuration
# with a capacity of 8 rows (-max-tokens 8) as PTX for sm_120 and sm_90 plus the launch
# manifest (version 5: the kernels, the launch plan with each family's variant, the workspace,
# the strides), into OUT/NAME/
# (mla_decode.json, mla_decode_sm_120.ptx, mla_decode_sm_90.ptx).
# mla_decode.py --kernels OUT --vectors VECTORS then runs them on a GPU without Go.
#
#   bash examples/python/gen.sh [VECTORS [OUT]]
#
# VECTORS defaults to golden/testdata/vectors/mla_decode (the shared test vectors), OUT to
# .device/python-kernels (git-ignored). Run it from anywhere in the repository.
set -euo pipefail
cd "$(dirname "$0")/../.."
vectors=${1:-golden/testdata/vectors/mla_decode}
out=${2:-.device/python-kernels}
mkdir -p build "$out"
go build -o build/ptxgen ./ptxgen
n=0
for dir in "$vectors"/*/; do
	[ -f "$dir/meta.json" ] || continue
	name=$(basename "$dir")
	mkdir -p "$out/$name"
	# shellcheck disable=SC2046 # the flags are words
	build/ptxgen gen $(python3 examples/python/mla_decode.py flags "$dir") -max-tokens 8 \
		-targets sm_120,sm_90 -manifest "$out/$name/mla_decode.json"
	echo "gen.sh: $out/$name: $(ls "$out/$name" | tr '\n' ' ')"
	n=$((n + 1))
done
[ "$n" -gt 0 ] || { echo "gen.sh: no test-vector folders in $vectors"; exit 1; }
