#!/usr/bin/env bash
# GPU run 1 (session 2026-12-01): the v7 bench (serving pools, FlashMLA, Triton, sm_120 plan),
# then A/B runs on the same folders: 8 vs 16 warps per 64-head CTA, and the out-of-pool check's cost.
set -uo pipefail
R=/tmp/res; mkdir -p $R; V=/tmp/ptxgen-bench-vectors
OUT=$R timeout 430 bash scripts/bench.sh > $R/run.log 2>&1; echo "bench.sh rc=$?"
grep -E "^== |exit" $R/run.log
C="-vectors-in $V -flush-mb 1024 -bw 4.3e12 -flops 636e12 -sm120-plan=false"
S=H64_T64_K128+512,H64_T128_K128+512,H64_T256_K128+512,H64_T64_K128+2048,H128_T64_K128+512,H128_T256_K128+512,H128_T64_K128+2048
for w in 16 8; do timeout 60 build/ptxgen-gpu-w bench -shapes $S $C -warps64 $w > $R/ab_w$w.txt 2>&1; echo "w$w rc=$?"; done
timeout 30 build/ptxgen-gpu-w bench -shapes H64_T64_K128+512,H64_T64_K128+2048 $C -warps64 8 -sms 64 -split 2 > $R/ab_w8_nosplitrep.txt 2>&1
timeout 30 build/ptxgen-gpu-w bench -shapes H64_T128_K128+512 $C -warps64 8 -sms 100 -split 1 >> $R/ab_w8_nosplitrep.txt 2>&1
O=H8_T64_K128+512,H16_T256_K128+512,H64_T8_K128+512,H64_T256_K128+512
for i in 1 2; do for b in ptxgen-gpu ptxgen-gpu-nooob; do timeout 40 build/$b bench -shapes $O $C > $R/oob_${b}_$i.txt 2>&1; done; done
tar czf $OUT/res.tgz -C $R --exclude='*.tmp' .
tail -40 $R/bench.txt
