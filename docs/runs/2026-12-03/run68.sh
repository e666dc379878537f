#!/usr/bin/env bash
# GPU run 68 (session 11): ncu of the heads-in-N decode at H8 T256 with and without -k-frags
# (run 67 measured no change: 56.4 against 56.5 us), to find what limits the loop. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/run68}; mkdir -p $O
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats"
for v in base kfrags; do
  X=""; [ $v = kfrags ] && X="-k-frags"
  timeout 120 ncu -k regex:mla_decode -c 1 $S build/ptxgen-gpu bench -shapes H8_T256_K128+512 -head-block 8 $X -iters 1 -warmup 0 -bf16p=false -sm120-plan=false -gather=false -flush-mb 0 > $O/ncu_$v.txt 2>&1
  echo "== $v"; grep -E 'Throughput|Duration|Warp Cycles|Eligible|Issued Warp|Registers|Block Limit|No Eligible|Theoretical Occ|Achieved Occ|Stall' $O/ncu_$v.txt | head -30
done
