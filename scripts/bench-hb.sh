#!/usr/bin/env bash
# Heads per CTA: the H=64 shapes with 16, 32 and 64 heads per CTA under the same ceilings.
set -uo pipefail
B=${BIN:-build/ptxgen-gpu}
for hb in 16 32 64; do
	$B bench -shapes H64_T1_K128+512,H64_T8_K128+512,H64_T64_K128+512,H64_T256_K128+512,H64_T64_K128+2048 \
		-head-block $hb -gather=false -bw 3.6e12 -flops 574e12 -iters 30 2>&1 | grep -E "^H64_T[0-9]+_K128.[0-9]+ +decode" | sed "s/^/hb=$hb /"
done
