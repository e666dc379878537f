#!/usr/bin/env bash
# GPU run 24 (session 4 start, main 1c902a5): the gather ceiling's split sweep, bf16p on
# every shared test-vector folder, and ncu stall reasons of today's 16-head loop (H16 T256),
# the baseline for the split-K score all-reduce.
set -uo pipefail
for d in .device/testvectors/mla_decode/*/; do
  timeout 60 build/ptxgen-gpu check -gpu -precision bf16p -vectors $d > $OUT/bf16p_$(basename $d).txt 2>&1; echo "bf16p $(basename $d) rc=$?"; tail -2 $OUT/bf16p_$(basename $d).txt
done
for s in 0 3 5 10 20; do
  timeout 100 build/ptxgen-gpu bench -shapes H16_T256_K128+512,H16_T64_K128+512 -sm120-plan=false -gather-split $s -bw 4.3e12 -flops 636e12 -iters 30 -flush-mb 1024 > $OUT/split_$s.txt 2>&1; echo "split $s rc=$?"; grep -iE "gather ceiling|H16_T" $OUT/split_$s.txt | cut -c1-220
done
timeout 200 ncu --clock-control none --kernel-name regex:mla_decode_h16 --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis build/ptxgen-gpu bench -shapes H16_T256_K128+512 -sm120-plan=false -gather=false -iters 1 -warmup 0 -flush-mb 0 > $OUT/ncu_h16_t256.txt 2>&1; echo "ncu rc=$?"
grep -E "Duration|Stall|Warp Cycles|Issued Ipc|Registers|Achieved Occ|Theoretical Occ|Memory Throughput|DRAM Through" $OUT/ncu_h16_t256.txt | head -40
