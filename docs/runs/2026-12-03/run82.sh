#!/usr/bin/env bash
# GPU run 82 (session 14): gpu-check on the generator whose held-Q dots read Q's home
# only at the loop's entry (the loop's arrays take its bytes) and whose 16-head CTA
# computes its K fragments under sm_120's limits (2 CTAs per SM); then one bench round of
# the sm_120 plan's 16-head shapes, latency-bound ones included, against b070a2e
# (build/base/ptxgen-gpu). Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
O=${OUT:-/tmp/run82}; W=/tmp/run82w; mkdir -p "$O" $W
t0=$(date +%s)
OUT=/tmp/gc timeout 330 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$? after $(( $(date +%s) - t0 )) s"
grep -E "passed\)|^gpu-check" /tmp/gc.txt | tail -4
grep -E "FAIL" /tmp/gc/summary.md | head -10
grep -cE "^\| (memcheck|racecheck|synccheck)" /tmp/gc/summary.md
grep -E "T256_H16|T256_H64|kfrags" /tmp/gc/summary.md | cut -c1-160 | head -8
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -gather=false -iters 30"
S=H16_T1_K128+512,H16_T8_K128+512,H16_T64_K128+512,H16_T256_K128+512,H8_T8_K128+512,H64_T8_K128+512,H64_T64_K128+512,H64_T256_K128+512,H16_T256_K128+1152
for v in base new; do
  [ $(( $(date +%s) - t0 )) -lt 500 ] || break
  bin=build/ptxgen-gpu; [ $v = base ] && bin=build/base/ptxgen-gpu
  timeout 70 $bin bench $B -shapes $S > $W/$v.txt 2>&1
done
for f in $W/*.txt; do echo "== $(basename $f)"; grep -E "us \(min|FAIL|rror|false" $f | sed 's/, ok true//' | cut -c1-150; done | tee $O/summary.txt
tar czf $O/runs.tgz -C /tmp run82w gc gc.txt 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
