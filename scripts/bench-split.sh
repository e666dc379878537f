#!/usr/bin/env bash
# How small-T times scale with the candidate split: fixed cost vs per-tile latency.
# SHAPES and SPLITS select what to run (defaults: the T=1 and T=8 shapes).
set -uo pipefail
B=${BIN:-build/ptxgen-gpu}
SHAPES=${SHAPES:-H8_T1_K128+512,H64_T1_K128+512,H8_T8_K128+512,H16_T8_K128+512,H64_T8_K128+512}
for s in ${SPLITS:-0 2 5 10 20}; do
	$B bench -shapes "$SHAPES" -split $s -gather=false -bw 3.6e12 -flops 578e12 -iters 30 -flush-mb 1024 2>&1 |
		grep -E "^H[0-9]+_T[0-9]+_K[0-9+]+ +decode" | sed "s/^/split=$s /"
done
