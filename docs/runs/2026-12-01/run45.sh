#!/usr/bin/env bash
# GPU run 45 (session 6): 16-warp 64-head CTAs again (-warps64 16), now that P·V is split
# by shared-memory traffic (2x8 at 16 warps), two stages fit (226 KB) and ptxas assembles
# them with 0 spills at 128 registers: four warps per scheduler against two, for the
# latency the ncu of run 39 found limiting. check -gpu, then 2 alternating rounds against
# the default (8 warps). Carry build/ptxgen-gpu.
set -uo pipefail
B=build/ptxgen-gpu
echo "== check -gpu -heads 64 -tokens 256 -warps64 16"
timeout 60 $B check -gpu -target sm_90 -heads 64 -tokens 256 -warps64 16 2>&1 | grep -E "^(loaded|out|lse): |^loaded|PASS|FAIL|rror" | head -4
SHAPES=H64_T256_K128+512,H64_T64_K128+512,H64_T64_K128+2048,H128_T64_K128+512
COMMON="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -sm120-plan=false -bf16p=true -iters 30"
for r in 1 2; do
	for v in "w8:" "w16:-warps64 16"; do
		name=${v%%:*}; args=${v#*:}
		timeout 100 $B bench -shapes $SHAPES $COMMON $args > $OUT/${name}_$r.txt 2>&1 || echo "$name round $r failed"
		echo "== $name round $r"
		grep " us (min" $OUT/${name}_$r.txt | sed -E 's/^(\S+) +(bf16p )?\[([^]]*)\].*: ([0-9.]+) us \(min.*ok (\S+).*/\1 \2[\3] \4 us ok \5/'
	done
done
