#!/usr/bin/env bash
# GPU run 90 (session 17): (1) scripts/proto/one_launch.cu: the split decode's combine as a
# second launch against the last CTA of each (row, head block) combining inside the decode
# launch (issue 30 items 0 and 4), on a synthetic decode; (2) -score-rows 2 against the
# default, 2 alternating rounds (the 64-head CTAs' score grid 2x4: each Kᵀ pair converted
# twice a tile instead of 4 times in the computed-fragment CTA); (3) ncu durations of the
# T1 and T8 launches (decode and combine apart); (4) gpu-check on HEAD (its -score-rows rows
# have not run before). Writes into $OUT as it goes. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
O=${OUT:-/tmp/run90}; mkdir -p "$O"
t0=$(date +%s)
S="$O/summary.txt"
R=/tmp/raw; mkdir -p $R  # raw outputs, tarred into $O/raw.tgz after each step (at most 8 files come back)
pack() { tar czf "$O/raw.tgz" -C /tmp raw 2>/dev/null; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader | tee "$S"
el() { echo $(( $(date +%s) - t0 )); }
# 1. the one-launch prototype
( cd /tmp && nvcc -O3 -arch=sm_90 -o one_launch "$OLDPWD/scripts/proto/one_launch.cu" && timeout 60 ./one_launch 200 ) > "$O/one_launch.txt" 2>&1
echo "one_launch rc=$? after $(el) s" | tee -a "$S"; cat "$O/one_launch.txt" | cut -c1-250 | tee -a "$S"
# 2. -score-rows 2 A/B
G=build/ptxgen-gpu
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -gather=false -iters 20"
SH=H64_T64_K128+512,H64_T128_K128+512,H64_T256_K128+512,H128_T64_K128+512,H128_T256_K128+512
for r in 1 2; do
  [ $(el) -lt 250 ] || break
  timeout 60 $G bench $B -shapes $SH > "$R/default_$r.txt" 2>&1
  timeout 60 $G bench $B -score-rows 2 -shapes $SH > "$R/r2_$r.txt" 2>&1
  pack
  for f in default r2; do { echo "-- $f $r"; grep -E "us \(min|FAIL|rror" "$R/${f}_$r.txt" | sed 's/, ok true//' | cut -c1-170; } | tee -a "$S"; done
done
# 3. ncu: the small launches' kernels apart
if [ $(el) -lt 300 ]; then
  for sh in H16_T1_K128+512 H64_T8_K128+512; do
    timeout 60 ncu --clock-control none --kernel-name regex:mla_ --section SpeedOfLight \
      $G bench -shapes $sh -flush-mb 0 -iters 1 -warmup 0 -bf16p=false -gather=false -bw 4.3e12 -flops 636e12 > "$R/ncu_$sh.txt" 2>&1
    { echo "-- ncu $sh"; grep -E "^  mla_|Duration|SM Frequency" "$R/ncu_$sh.txt"; } | tee -a "$S"
  done
fi
pack
# 4. gpu-check on HEAD
OUT=/tmp/gc timeout 220 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$? after $(el) s" | tee -a "$S"
grep -E "passed\)|^gpu-check" /tmp/gc.txt | tail -4 | tee -a "$S"
grep -E "FAIL" /tmp/gc/summary.md | head -10 | tee -a "$S"
grep -cE "^\| (memcheck|racecheck|synccheck)" /tmp/gc/summary.md | tee -a "$S"
grep -E "score-rows" /tmp/gc/summary.md | cut -c1-220 | tee -a "$S"
cp /tmp/gc/summary.md "$O/gc-summary.md"; cp -r /tmp/gc /tmp/gc.txt $R/ 2>/dev/null; pack
echo "total $(el) s" | tee -a "$S"
