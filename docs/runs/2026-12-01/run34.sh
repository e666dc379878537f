#!/usr/bin/env bash
# GPU run 34 (session 5): the two #20 follow-ups left "ready to measure" in perf-notes v12,
# timed against main in alternating rounds with scripts/ab.sh: main = 1f81633,
# defer = next/defer-across-tiles (1e46ed8), intdeq = next/intdeq-per-iteration (af6febd).
# Carry build/ptxgen-gpu-{main,defer,intdeq}.
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
BINS="main defer intdeq" ROUNDS=3 SHAPES=H16_T256_K128+512,H16_T64_K128+512,H8_T64_K128+512,H16_T8_K128+512,H64_T64_K128+512,H16_T64_K128+1024 timeout 560 bash scripts/ab.sh
cat $OUT/table.txt
