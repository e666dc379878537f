#!/usr/bin/env bash
# gen.sh regenerates the package's kernels (python/ptxgen_mla/kernels: manifests and PTX,
# xz-compressed, and index.json) with this checkout's `ptxgen gen`. Run it after changing
# the generator or the configurations in python/tools/package_kernels.py, and commit the
# result; CI (scripts/check-python.sh) fails while the package data is stale.
#
#   bash python/gen.sh
set -euo pipefail
cd "$(dirname "$0")/.."
exec python3 python/tools/package_kernels.py gen "$@"
