#!/usr/bin/env bash
# GPU run 64 (session 10): the generator with the new defaults (Q held in registers in the
# 16-head CTAs' large kernels; the heads-in-N family for H <= 8 from 64 rows): (1) the full
# gpu-check (its matrix and sanitizer rows now include the 16-head CTA at T=64 and the
# heads-in-N family); (2) A/B against f66deb6 (session 9's generator, build/ptxgen-gpu-pre),
# 2 alternating rounds, serving pool. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
OUT_SAVE=${OUT:-/tmp/run64}; mkdir -p "$OUT_SAVE"
OUT=/tmp/gc timeout 480 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$?"
tail -60 /tmp/gc.txt
tar czf $OUT_SAVE/gc.tgz -C /tmp gc gc.txt 2>/dev/null
OUT=$OUT_SAVE/ab BINS="pre new" SHAPES=H8_T64_K128+512,H8_T256_K128+512,H16_T64_K128+512,H16_T256_K128+512,H64_T64_K128+512 timeout 300 bash scripts/ab.sh
cat $OUT_SAVE/ab/table.txt
