#!/usr/bin/env bash
# GPU run 35 (session 5, issue 21 item 3): swizzled shared layouts, chosen by the smem pass
# where the padded layout does not fit, give the 64-head CTA a second ring slot (217 KB on
# sm_90). First the new kernels on the GPU against the float64 reference (check -gpu:
# the direct kernel at T=256, the split kernel at T=64, H=128, K=2176), then the A/B
# against main (base = 40e57ec, swz = the working tree), 3 alternating rounds.
# Carry build/ptxgen-gpu-{base,swz}.
set -uo pipefail
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv,noheader
for a in "-heads 64 -tokens 256" "-heads 64 -tokens 64" "-heads 128 -tokens 64" "-heads 64 -tokens 64 -k1 2048" "-heads 16 -tokens 64 -k1 1024 -plan-target sm_120"; do
	echo "== check -gpu $a"
	timeout 120 build/ptxgen-gpu-swz check -gpu -target sm_90 $a 2>&1 | grep -E "^(out|lse|PASS|FAIL)|kernel|ptxgen" | head -6
done
BINS="base swz" ROUNDS=3 SHAPES=H64_T256_K128+512,H64_T64_K128+512,H64_T64_K128+2048,H128_T256_K128+512,H128_T64_K128+512,H16_T64_K128+1024,H16_T256_K128+512 timeout 400 bash scripts/ab.sh
