#!/usr/bin/env bash
# GPU run 73 (session 13, exploratory): what limits the gather ceiling and what the segment
# boundary costs. (1) mla_gather and the decode on the same records as two candidate lists
# (K128+512: two loops per CTA, each with its own ring fill and drain) and as one (K640+0:
# one loop), at several gather splits; (2) a long steady-state gather (T=2048); (3) ncu of
# the gather at H16 T256. Carry build/ (main at session 13's start).
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/run73}; mkdir -p "$O"
t0=$(date +%s)
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -iters 30"
for k in K128+512 K640+0; do
  for sp in 0 1 2 3 4 6 8; do
    timeout 40 build/ptxgen-gpu bench $B -sm120-plan=false -gather-split $sp -shapes H16_T256_$k,H16_T64_$k > $O/g_${k}_s$sp.txt 2>&1
  done
  timeout 60 build/ptxgen-gpu bench $B -shapes H8_T64_$k,H8_T256_$k,H16_T8_$k,H16_T1_$k > $O/d_${k}.txt 2>&1
done
timeout 60 build/ptxgen-gpu bench $B -sm120-plan=false -shapes H16_T2048_K640+0,H16_T1024_K128+512 > $O/g_long.txt 2>&1
timeout 60 ncu --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats --section LaunchStats --section Occupancy -k regex:mla_gather -c 1 build/ptxgen-gpu bench $B -sm120-plan=false -iters 1 -warmup 0 -flush-mb 0 -shapes H16_T256_K128+512 > $O/ncu_gather.txt 2>&1
for f in $O/*.txt; do echo "== $(basename $f)"; grep -E "^\| H|FAIL|rror|Duration|Throughput|Warp Cycles Per Issued|Achieved Occ|Stall|Waves" $f | cut -c1-180; done
echo "total $(( $(date +%s) - t0 )) s"
