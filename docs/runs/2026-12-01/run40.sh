#!/usr/bin/env bash
# GPU run 40 (session 6): branch pv-grid (P·V 2x4 grouped, 0 spill bytes) against main,
# correctness first, then 3 alternating rounds in both precisions.
# Carry build/ptxgen-gpu-{final,grid}.
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
for a in "-heads 64 -tokens 256" "-heads 64 -tokens 64" "-heads 128 -tokens 64" "-heads 128 -tokens 256 -precision bf16p" "-heads 64 -tokens 64 -topk 2048 -precision bf16p"; do
	echo "== check -gpu grid $a"
	timeout 120 build/ptxgen-gpu-grid check -gpu -target sm_90 $a 2>&1 | grep -E "^(out|lse): |PASS|FAIL|rror" | head -4
done
BINS="final grid" ROUNDS=3 SHAPES=H64_T256_K128+512,H64_T64_K128+512,H64_T64_K128+2048,H128_T256_K128+512,H128_T64_K128+512,H16_T256_K128+512 ARGS="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -bf16p=true -iters 30" timeout 420 bash scripts/ab.sh
cat "$OUT/table.txt"
