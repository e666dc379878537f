#!/usr/bin/env bash
# GPU run 80 (session 14): what made the sm_120 plan's H8 T64 slower in run 74 (26.03 ->
# 26.71 us; run 78 measured 26.30 on the same generator). A/B of session 12's final
# generator (build/old/ptxgen-gpu, f85d048) against b070a2e (build/ptxgen-gpu; 7d686ac is
# PTX byte-identical), 3 alternating rounds of the shape, then ncu of the sm_120 plan's
# kernel (decode_h8_split, at sm_120's residency) from each. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/run80}; W=/tmp/run80w; mkdir -p "$O" $W
t0=$(date +%s)
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -gather=false -iters 30"
for r in 1 2 3; do
  for v in old new; do
    bin=build/ptxgen-gpu; [ $v = old ] && bin=build/old/ptxgen-gpu
    timeout 40 $bin bench $B -shapes H8_T64_K128+512,H8_T256_K128+512 > $W/ab_${v}_$r.txt 2>&1
  done
done
for v in old new; do
  bin=build/ptxgen-gpu; [ $v = old ] && bin=build/old/ptxgen-gpu
  timeout 60 ncu --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section InstructionStats -k regex:decode_h8_split -c 1 $bin bench $B -iters 1 -warmup 0 -flush-mb 0 -shapes H8_T64_K128+512 > $W/ncu_$v.txt 2>&1
done
for f in $W/*.txt; do echo "== $(basename $f)"; grep -E "sm_120 plan.*us \(min|FAIL|rror|Duration|Executed Instructions |Warp Cycles Per Issued|Issue Slots Busy|Achieved Occ|Registers Per|Waves|No Eligible" $f | sed 's/, ok true//' | cut -c1-160; done | tee $O/summary.txt
tar czf $O/runs.tgz -C /tmp run80w 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
