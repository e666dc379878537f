#!/usr/bin/env bash
# How the small-T time scales with the candidate split: fixed cost vs per-tile latency.
set -uo pipefail
B=${BIN:-build/ptxgen-gpu}
for s in 1 2 5 10 20; do
	$B bench -shapes H8_T1_K128+512,H64_T1_K128+512 -split $s -bw 3.58e12 -flops 572e12 -iters 30 2>&1 | grep -E "^H(8|64)_T1 " | sed "s/^/split=$s /"
done
