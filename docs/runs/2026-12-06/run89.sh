#!/usr/bin/env bash
# GPU run 89 (session 16): gpu-check on the final generator (f093d1f: the 64-head CTA of
# computed fragments planned under sm_120's limits for the rows that fill the SMs, kperm
# the default for the 16-head CTA's computed fragments), then one round of the sm_120
# plan against 50e2b3c (build/base/ptxgen-gpu), base then new, and ncu of the 64-head
# CTA at H64 T256 if time is left. Little device time is left: every step is guarded.
# Writes into $OUT as it goes. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
O=${OUT:-/tmp/run89}; mkdir -p "$O"
t0=$(date +%s)
S="$O/summary.txt"
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$S"
OUT=/tmp/gc timeout 200 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$? after $(( $(date +%s) - t0 )) s" | tee -a "$S"
grep -E "passed\)|^gpu-check" /tmp/gc.txt | tail -4 | tee -a "$S"
grep -E "FAIL" /tmp/gc/summary.md | head -10 | tee -a "$S"
grep -cE "^\| (memcheck|racecheck|synccheck)" /tmp/gc/summary.md | tee -a "$S"
grep -E "hb64|pairwise|pair by pair" /tmp/gc/summary.md | cut -c1-200 | tee -a "$S"
cp /tmp/gc/summary.md "$O/gc-summary.md"; tar czf "$O/gc.tgz" -C /tmp gc gc.txt 2>/dev/null
G=build/ptxgen-gpu
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -gather=false -iters 20"
SH=H64_T128_K128+512,H64_T256_K128+512,H16_T256_K128+512,H32_T256_K128+512,H8_T256_K128+512
for v in base new; do
  [ $(( $(date +%s) - t0 )) -lt 260 ] || break
  bin=$G; [ $v = base ] && bin=build/base/ptxgen-gpu
  timeout 50 $bin bench $B -shapes $SH > "$O/${v}_1.txt" 2>&1
  { echo "-- $v"; grep -E "sm_120 plan|FAIL|rror" "$O/${v}_1.txt" | sed 's/, ok true//' | cut -c1-170; } | tee -a "$S"
done
if [ $(( $(date +%s) - t0 )) -lt 300 ]; then
  timeout 60 ncu --clock-control none --kernel-name regex:mla_decode_h64_kf --launch-count 1 --section SpeedOfLight --section WarpStateStats --section SchedulerStats \
    $G bench -shapes H64_T256_K128+512 -flush-mb 0 -iters 1 -warmup 0 -bf16p=false -gather=false -bw 4.3e12 -flops 636e12 > "$O/ncu_h64kf.txt" 2>&1
  echo "ncu rc=$? after $(( $(date +%s) - t0 )) s" | tee -a "$S"
fi
echo "total $(( $(date +%s) - t0 )) s" | tee -a "$S"
