#!/usr/bin/env bash
# GPU run 44 (session 6): compute-sanitizer on the 64-head CTA with a producer role at
# the registers the lowering now gives 10 warps (168): racecheck, synccheck and
# memcheck on a small shape (2 rows, both segments), and check -gpu of the split
# kernel (64 rows, 2 chunks). Carry build/ptxgen-gpu.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
B=build/ptxgen-gpu
A="-target sm_90 -heads 64 -head-block 64 -producer-warps 2 -tile 32"
echo "== check -gpu $A -tokens 64 -split 2"
timeout 60 $B check -gpu $A -tokens 64 -split 2 2>&1 | grep -E "^(out|lse): |PASS|FAIL|rror|plan|mla_decode" | head -6
for tool in racecheck synccheck memcheck; do
	echo "== compute-sanitizer --tool $tool, $A -tokens 2"
	timeout 100 compute-sanitizer --tool $tool --error-exitcode 9 $B check -gpu $A -tokens 2 2>&1 | grep -E "PASS|FAIL|SUMMARY|rror|h64" | head -5
	echo "rc=${PIPESTATUS[0]}"
done
