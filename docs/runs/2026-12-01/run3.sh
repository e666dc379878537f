#!/usr/bin/env bash
# GPU run 3 (2026-12-01): the final generator of this stop: gpu-check.sh (all matrices, pools
# past 4 GiB, out-of-pool indices, sanitizers, CUDA 13 ptxas on sm_120), then bench.sh
# (serving pools, FlashMLA, Triton, sm_120 plan).
set -uo pipefail
G=/tmp/gc; R=/tmp/bench; mkdir -p $G $R
OUT=$G timeout 200 bash scripts/gpu-check.sh > /dev/null 2>&1; echo "gpu-check rc=$?"
OUT=$R timeout 330 bash scripts/bench.sh > $R/run.log 2>&1; echo "bench.sh rc=$?"
tar czf $OUT/gc.tgz -C $G . ; tar czf $OUT/bench.tgz -C $R --exclude=flashmla_build.log .
cat $G/summary.md | head -60; grep -E "^== |exit" $R/run.log; tail -25 $R/bench.txt
