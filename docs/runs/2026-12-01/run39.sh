#!/usr/bin/env bash
# GPU run 39 (session 5): the 64-head CTA's limiter after the swizzle (ncu on the final
# generator's mla_decode_h64 at H64 T256: speed of light, warp stalls, shared-memory
# workload), and the P·V grid chosen by shared-memory traffic (2x4 instead of 4x2, the
# rescale factors relaid out through shared memory) against main, 3 alternating rounds.
# Carry build/ptxgen-gpu-{final,grid}.
set -uo pipefail
timeout 200 ncu --clock-control none --kernel-name regex:mla_decode_h64 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis build/ptxgen-gpu-final bench -shapes H64_T256_K128+512 -sm120-plan=false -gather=false -bf16p=false -iters 1 -warmup 0 -flush-mb 0 > $OUT/ncu_h64_t256.txt 2>&1; echo "ncu rc=$?"
grep -E "Duration|Stall|Warp Cycles|Issued Ipc|Registers|Memory Throughput|DRAM Through|Shared|Bank|L1/TEX Hit|Compute \(SM\)|Pipe" $OUT/ncu_h64_t256.txt | head -40
if [ -x build/ptxgen-gpu-grid ]; then
	for a in "-heads 64 -tokens 256" "-heads 64 -tokens 64" "-heads 128 -tokens 64"; do
		echo "== check -gpu grid $a"
		timeout 120 build/ptxgen-gpu-grid check -gpu -target sm_90 $a 2>&1 | grep -E "^(out|lse): |PASS|FAIL" | head -3
	done
	BINS="final grid" ROUNDS=3 SHAPES=H64_T256_K128+512,H64_T64_K128+512,H64_T64_K128+2048,H128_T256_K128+512,H128_T64_K128+512,H16_T256_K128+512 timeout 300 bash scripts/ab.sh
fi
