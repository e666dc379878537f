#!/usr/bin/env bash
# GPU run 65 (session 10): where the heads-in-N family starts to pay on the sm_90 plan (two
# CTAs per SM of either family on the H200): run 64 measured H8 T64 24.25 -> 24.75 us
# (slower) and T256 63.1 -> 58.8 (faster). pre (16-head CTAs) against new (heads in N from
# 64 rows), H8 at T96, T128, T192, 2 alternating rounds, the sm_90 plan only. Carry build/.
set -uo pipefail
OUT_SAVE=${OUT:-/tmp/run65}; mkdir -p "$OUT_SAVE"
OUT=$OUT_SAVE/ab BINS="pre new" SHAPES=H8_T96_K128+512,H8_T128_K128+512,H8_T192_K128+512 ARGS="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -bf16p=false -sm120-plan=false -iters 30" timeout 300 bash scripts/ab.sh
cat $OUT_SAVE/ab/table.txt
