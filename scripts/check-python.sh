#!/usr/bin/env bash
# check-python.sh: CI's checks of the Python package (python/, docs/python.md), run from .ci/run:
#  1. python/ptxgen_mla/kernels holds what this checkout's `ptxgen gen` writes for the
#     configurations in python/tools/package_kernels.py (regenerated into a scratch
#     folder and compared by content; `bash python/gen.sh` rewrites them);
#  2. the package's CPU tests (standard-library unittest, python/tests/run.py): manifests,
#     plan, target choice, argument checks, package data, the build backend, the vLLM
#     plugin against a stand-in registry. Tests that need torch skip, and say so, where
#     torch is not installed (CI's machine has none); the GPU test is run on a GPU machine.
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
command -v "$py" >/dev/null || { echo "check-python: $py not found"; exit 1; }
torch=$("$py" -c 'import torch; print(torch.__version__)' 2>/dev/null || echo "none (the tests that need it skip)")
echo "check-python: $("$py" --version 2>&1), torch $torch"
"$py" python/tools/package_kernels.py check
(cd python && "$py" tests/run.py)
