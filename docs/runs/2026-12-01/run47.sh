#!/usr/bin/env bash
# GPU run 47 (session 7): the 64-head CTA with a score role (-score-warps 4: design A2's
# q·k on 4 warps, the softmax there too, P·V and the dequantization on all 8; a phased
# loop). check -gpu at H64 T256 and H128 T64 split (exact) and H64 T64 (bf16p);
# compute-sanitizer racecheck, synccheck and memcheck at 2 rows; then 2 alternating
# rounds against the default CTA on the serving pool. Carry build/ptxgen-gpu.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
B=build/ptxgen-gpu
A="-target sm_90 -head-block 64 -score-warps 4"
for c in "-heads 64 -tokens 256" "-heads 128 -tokens 64 -split 2" "-heads 64 -tokens 64 -precision bf16p"; do
	echo "== check -gpu $A $c"
	timeout 60 $B check -gpu $A $c 2>&1 | grep -E "^(out|lse): |PASS|FAIL|rror" | head -4
done
for tool in racecheck synccheck memcheck; do
	echo "== compute-sanitizer --tool $tool, $A -heads 64 -tokens 2"
	timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $B check -gpu $A -heads 64 -tokens 2 2>&1 | grep -E "PASS|FAIL|SUMMARY|rror" | head -5
	echo "rc=${PIPESTATUS[0]}"
done
SHAPES=H64_T256_K128+512,H64_T64_K128+512,H64_T64_K128+2048,H128_T256_K128+512,H128_T64_K128+512
COMMON="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -sm120-plan=false -bf16p=true -iters 30"
for r in 1 2; do
	for v in "default:" "score4:-score-warps 4"; do
		name=${v%%:*}; args=${v#*:}
		timeout 120 $B bench -shapes $SHAPES $COMMON $args > $OUT/${name}_$r.txt 2>&1 || echo "$name round $r failed"
		echo "== $name round $r"
		grep " us (min" $OUT/${name}_$r.txt | sed -E 's/^(\S+) +(bf16p )?\[([^]]*)\].*: ([0-9.]+) us \(min.*ok (\S+).*/\1 \2[\3] \4 us ok \5/'
	done
done
