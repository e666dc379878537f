#!/usr/bin/env bash
# GPU run 41 (session 6): the first kernel with warp roles on the hardware: the
# warp-specialized matmul of lower/roles_test.go (a load role fills a handoff ring,
# an mma role consumes it, named barriers per slot) against float64 and the
# emulator, then under compute-sanitizer (racecheck, synccheck, memcheck).
# Carry build/lower.test (go test -c -tags cuda -o build/lower.test ./lower).
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
timeout 120 build/lower.test -test.run 'RolesMatmulGPU|UserKernelsGPU' -test.v 2>&1 | grep -E "^(=== RUN|--- |ok|FAIL|PASS)|roles" | grep -v "=== RUN" | head -40
for tool in racecheck synccheck memcheck; do
	echo "== compute-sanitizer --tool $tool"
	timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 build/lower.test -test.run RolesMatmulGPU 2>&1 | tail -4
	echo "rc=${PIPESTATUS[0]}"
done
