#!/usr/bin/env bash
# GPU run 26: computed tiles' shared stores held one tile back (deferStage) against the
# split-K commit (9c7b45b), alternating; and ncu's stall reasons (per issued instruction) of
# the 16-head H16 T256 loop, to see what the 5 cycles per instruction wait on.
set -uo pipefail
S=H16_T256_K128+512,H16_T64_K128+512,H8_T64_K128+512
C="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -iters 30 -sm120-plan=false"
for i in 1 2; do for b in ptxgen-gpu-splitk ptxgen-gpu-defer; do timeout 120 build/$b bench -shapes $S $C > $OUT/${b}_$i.txt 2>&1; echo "$b $i rc=$?"; grep -h "us (min" $OUT/${b}_$i.txt | cut -c1-25,60-170; done; done
for b in ptxgen-gpu-splitk ptxgen-gpu-defer; do
timeout 200 ncu --clock-control none --kernel-name regex:mla_decode_h16 --launch-count 1 --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,smsp__cycles_active.avg,sm__warps_active.avg.pct_of_peak_sustained_active build/$b bench -shapes H16_T256_K128+512 -gather=false -sm120-plan=false -iters 1 -warmup 0 -flush-mb 0 > $OUT/ncu_$b.txt 2>&1; echo "ncu $b rc=$?"
grep -E "stalled|inst_executed|cycles_active|warps_active" $OUT/ncu_$b.txt | awk '$NF+0 > 0.05 || /inst_exec|cycles|warps_active/' | sed 's/smsp__average_warps_issue_stalled_//' | head -30
done
