#!/usr/bin/env bash
# GPU run 42 (session 6): the 64-head CTA with a producer role (warp roles, issue 21
# item 1): correctness on the hardware (check -gpu, then compute-sanitizer racecheck
# and synccheck on a small shape), then the decode timed in alternating rounds:
# main's plan (64-candidate tiles, 2 stages, 8 warps), -tile 32 (the tile the
# producer variant needs to fit two ring slots), and -tile 32 with 1 and 2 producer
# warps. Carry build/ptxgen-gpu-roles.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
B=build/ptxgen-gpu-roles
for a in "-heads 64 -tokens 256 -producer-warps 2 -tile 32" "-heads 64 -tokens 64 -k1 2048 -producer-warps 1 -tile 32" "-heads 128 -tokens 64 -producer-warps 2 -tile 32 -precision bf16p"; do
	echo "== check -gpu $a"
	timeout 120 $B check -gpu -target sm_90 $a 2>&1 | grep -E "^(out|lse): |PASS|FAIL|rror" | head -4
done
for tool in racecheck synccheck; do
	echo "== compute-sanitizer --tool $tool, -heads 64 -tokens 2 -producer-warps 2 -tile 32"
	timeout 150 compute-sanitizer --tool $tool $B check -gpu -target sm_90 -heads 64 -tokens 2 -head-block 64 -producer-warps 2 -tile 32 2>&1 | grep -E "PASS|FAIL|SUMMARY|rror" | head -4
done
SHAPES=H64_T256_K128+512,H64_T64_K128+512,H64_T64_K128+2048,H128_T64_K128+512
COMMON="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -sm120-plan=false -bf16p=true -iters 30"
for r in 1 2; do
	for v in "main:" "t32:-tile 32" "p1:-tile 32 -producer-warps 1" "p2:-tile 32 -producer-warps 2"; do
		name=${v%%:*}; args=${v#*:}
		timeout 150 $B bench -shapes $SHAPES $COMMON $args > $OUT/${name}_$r.txt 2>&1 || echo "$name round $r failed"
		echo "== $name round $r"
		grep " us (min" $OUT/${name}_$r.txt | sed -E 's/^(\S+) +(bf16p )?\[([^]]*)\].*: ([0-9.]+) us \(min.*ok (\S+).*/\1 \2[\3] \4 us ok \5/'
	done
done
