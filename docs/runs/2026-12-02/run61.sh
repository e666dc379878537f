#!/usr/bin/env bash
# GPU run 61 (session 10): -hold-q (experimental: the score dots of 16-head CTAs hold Q in
# registers) on the GPU for the first time: (1) check -gpu against float64 on four shapes and
# the three sanitizers on one; (2) A/B against the default, 2 alternating rounds, serving pool
# (build/ptxgen-gpu-main and -holdq are wrappers of the same binary, -hold-q appended);
# (3) ncu of the gather ceiling (mla_gather) and of the 16-head decode at H16 T256, to find
# what keeps the generated gather at 2.6 TB/s where the prototype's reaches 3.6.
# Carry build/ (make gpu-bin).
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
B=build/ptxgen-gpu
O=${OUT:-/tmp/run61}; mkdir -p "$O"
echo "== (1) -hold-q correctness"
for a in "-heads 16 -tokens 64" "-heads 16 -tokens 256" "-heads 8 -tokens 1" "-heads 64 -tokens 64 -plan-target sm_120"; do
	timeout 120 $B check -gpu -emu=false -kernel mla_decode -target sm_90 $a -hold-q > /tmp/c.txt 2>&1; echo "check $a -hold-q: rc=$? $(grep -cE '^PASS' /tmp/c.txt) PASS $(grep -cE '^FAIL' /tmp/c.txt) FAIL"; grep -E '^FAIL' /tmp/c.txt | head -3
done
for t in memcheck racecheck synccheck; do
	timeout 200 compute-sanitizer --tool $t --print-limit 1000 $B check -gpu -emu=false -kernel mla_decode -target sm_90 -heads 16 -tokens 8 -split 1 -hold-q > /tmp/s.txt 2>&1
	echo "$t -hold-q H16 T8 split 1: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|SYNCCHECK SUMMARY' /tmp/s.txt | tail -1) $(grep -cE '^PASS' /tmp/s.txt) PASS"
done
echo "== (2) A/B"
OUT=$O/ab BINS="main holdq" SHAPES=H8_T64_K128+512,H16_T64_K128+512,H8_T256_K128+512,H16_T256_K128+512,H64_T64_K128+512 timeout 330 bash scripts/ab.sh
cat $O/ab/table.txt
echo "== (3) ncu"
S="--section SpeedOfLight --section Occupancy --section LaunchStats --section SchedulerStats --section WarpStateStats --section MemoryWorkloadAnalysis"
timeout 120 ncu -k regex:mla_gather -c 1 $S $B bench -shapes H16_T256_K128+512 -iters 1 -warmup 0 -bf16p=false -sm120-plan=false -flush-mb 0 > $O/ncu_gather.txt 2>&1; grep -vE '^==PROF==' $O/ncu_gather.txt | grep -E 'Throughput|Duration|Warp Cycles|Eligible|Issued|Occupancy|Stall|Registers|Block Limit|Active Warps|Hit Rate|No Eligible' | head -40
timeout 120 ncu -k regex:mla_decode -c 1 $S $B bench -shapes H16_T256_K128+512 -iters 1 -warmup 0 -bf16p=false -sm120-plan=false -gather=false -flush-mb 0 > $O/ncu_decode.txt 2>&1; grep -E 'Throughput|Duration|Warp Cycles|Eligible|Issued|Occupancy|Registers|Block Limit|No Eligible' $O/ncu_decode.txt | head -30
