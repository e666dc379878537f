#!/usr/bin/env bash
# GPU run 48 (session 7): the score-role 64-head CTA with P·V split 2x4 by traffic again
# (run 47's kernel had fallen back to 4x2: the layout pass took P, staged across roles,
# for fragments in registers). check -gpu (exact H64 T256, bf16p H128 T256 split 2),
# racecheck at 2 rows, 2 alternating rounds against the default CTA, then ncu of both
# CTAs at H64 T256 (speed of light, warp states). Carry build/ptxgen-gpu.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
B=build/ptxgen-gpu
A="-target sm_90 -head-block 64 -score-warps 4"
for c in "-heads 64 -tokens 256" "-heads 128 -tokens 256 -split 2 -precision bf16p"; do
	echo "== check -gpu $A $c"
	timeout 60 $B check -gpu $A $c 2>&1 | grep -E "^(out|lse): |PASS|FAIL|rror" | head -4
done
echo "== compute-sanitizer --tool racecheck, $A -heads 64 -tokens 2"
timeout 100 compute-sanitizer --tool racecheck --error-exitcode 9 $B check -gpu $A -heads 64 -tokens 2 2>&1 | grep -E "PASS|FAIL|SUMMARY|rror" | head -3
echo "rc=${PIPESTATUS[0]}"
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
for v in "default:" "score4:-score-warps 4"; do
	name=${v%%:*}; args=${v#*:}
	timeout 150 ncu --clock-control none --kernel-name regex:mla_decode_h64 --launch-count 1 --section SpeedOfLight --section WarpStateStats $B bench -shapes H64_T256_K128+512 -sm120-plan=false -gather=false -bf16p=false -iters 1 -warmup 0 -flush-mb 0 $args > $OUT/ncu_$name.txt 2>&1; echo "== ncu $name rc=$?"
	grep -E "Duration|Stall|Warp Cycles|Issued Ipc|Registers|Memory Throughput|Compute \(SM\)" $OUT/ncu_$name.txt | head -20
done
