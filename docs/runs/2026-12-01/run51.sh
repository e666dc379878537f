#!/usr/bin/env bash
# GPU run 51 (session 7): design A2's score quadrants, measured with a temporary switch
# (PTXGEN_SCORE_QUAD=1 in the environment, never committed: the score role's q·k split
# 2x2, 32 heads x 32 candidates per warp, the row max and sum exchanged through shared
# memory on the role's barrier) against the committed 4x1, one round each, alternating.
# Carry build/ptxgen-gpu built with the switch. The switch was then replaced by the layout
# rule lower.fewestBytesGrid, whose PTX is byte-identical to the switch's at H64 and H128,
# T64 and T256, both precisions (compared with cmp before committing).
set -uo pipefail
B=build/ptxgen-gpu
echo "== check -gpu quad -heads 64 -tokens 64"
PTXGEN_SCORE_QUAD=1 timeout 40 $B check -gpu -target sm_90 -heads 64 -tokens 64 2>&1 | grep -E "^(out|lse): |PASS|FAIL|rror" | head -3
SHAPES=H64_T256_K128+512,H64_T64_K128+2048,H128_T64_K128+512
COMMON="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -sm120-plan=false -bf16p=true -iters 20"
for v in rows quad rows quad; do
	if [ $v = quad ]; then export PTXGEN_SCORE_QUAD=1; else unset PTXGEN_SCORE_QUAD; fi
	echo "== $v"
	timeout 60 $B bench -shapes $SHAPES $COMMON 2>&1 | grep " us (min" | sed -E 's/^(\S+) +(bf16p )?\[([^]]*)\].*: ([0-9.]+) us \(min.*ok (\S+).*/\1 \2[\3] \4 us ok \5/'
done
