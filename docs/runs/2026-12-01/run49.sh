#!/usr/bin/env bash
# GPU run 49 (session 7): bf16p's P·V split 1x8 (V read once: the grid by traffic no
# longer counts the scores' transposed read of K as sharing it) against 2x4, both with
# the score role, 2 alternating rounds (build/ptxgen-gpu-p24: commit 221031b;
# build/ptxgen-gpu-p18 = build/ptxgen-gpu: a8e2429); check -gpu of the 1x8 kernels; then
# the full gpu-check of a8e2429 (the score role planned in 64-head CTAs). Carry build.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
{
for c in "-heads 64 -tokens 256" "-heads 128 -tokens 64 -split 2"; do
	echo "== check -gpu -target sm_90 -precision bf16p $c"
	timeout 60 build/ptxgen-gpu check -gpu -target sm_90 -precision bf16p $c 2>&1 | grep -E "^(out|lse): |PASS|FAIL|rror" | head -4
done
BINS="p24 p18" ROUNDS=2 OUT=$OUT/ab SHAPES=H64_T256_K128+512,H64_T64_K128+512,H64_T64_K128+2048,H128_T256_K128+512,H128_T64_K128+512 \
	ARGS="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -sm120-plan=false -bf16p=true -iters 30 -score-warps 4" timeout 300 bash scripts/ab.sh
G=/tmp/gc; mkdir -p $G
echo "== gpu-check $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
md5sum build/*
start=$(date +%s)
OUT=$G timeout 250 bash scripts/gpu-check.sh > /dev/null 2>&1; echo "gpu-check rc=$? in $(($(date +%s) - start)) s"
tar czf $OUT/gc.tgz -C $G .
cp $G/summary.md $OUT/ 2>/dev/null
grep -E "Shape matrix|gpu-check:|FAIL|rmsnorm|lower.test|runtime.test|spill|64-head" $G/summary.md | head -30
} 2>&1 | tee $OUT/run49.out
