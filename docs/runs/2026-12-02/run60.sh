#!/usr/bin/env bash
# GPU run 60 (session 10): the heads-in-N PTX prototypes of perf-notes v17 measured
# (scripts/proto/hn.sh: core_gen.py variants assembled by CUDA 13 ptxas, checked against
# float64 and timed by hn_check.py with torch and cuda-python). Output: run60/hn.txt.
set -euo pipefail
REPO=$PWD; mkdir -p /tmp/hn && cd /tmp/hn && bash $REPO/scripts/proto/hn.sh 2>&1 | tee $OUT/hn.txt
