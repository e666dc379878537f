#!/usr/bin/env bash
# GPU run 27: two more shared-load latencies off the 16-head loop's chains, each its own
# binary, alternating: c1ca948 (stores held back), 820f620 (+ a stage's copy addresses
# formed before its cp.asyncs) and e1ea8db (+ a record's scale bytes in one load), and ncu's
# stall reasons of the last.
set -uo pipefail
S=H16_T256_K128+512,H16_T64_K128+512,H8_T64_K128+512,H16_T8_K128+512
C="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -iters 30 -sm120-plan=false"
for i in 1 2; do for b in ptxgen-gpu-defer ptxgen-gpu-idx ptxgen-gpu-rowbytes; do timeout 120 build/$b bench -shapes $S $C > $OUT/${b}_$i.txt 2>&1; echo "$b $i rc=$?"; grep -h "us (min" $OUT/${b}_$i.txt | cut -c1-25,60-170; done; done
b=ptxgen-gpu-rowbytes
timeout 200 ncu --clock-control none --kernel-name regex:mla_decode_h16 --launch-count 1 --metrics regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio,smsp__inst_executed.sum,smsp__cycles_active.avg build/$b bench -shapes H16_T256_K128+512 -gather=false -sm120-plan=false -iters 1 -warmup 0 -flush-mb 0 > $OUT/ncu_$b.txt 2>&1; echo "ncu $b rc=$?"
grep -E "stalled|inst_executed|cycles_active" $OUT/ncu_$b.txt | awk '$NF+0 > 0.05 || /inst_exec|cycles/' | sed 's/smsp__average_warps_issue_stalled_//' | head -30
