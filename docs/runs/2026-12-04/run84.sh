#!/usr/bin/env bash
# GPU run 84 (session 15): gpu-check on 744bc31 (a second 16-head family, mla_decode_h16_kf,
# computing its K and V fragments from the raw ring, for the calls whose rows fill the
# SMs), then the sm_120 plan's shapes on both sides of the rule against a05600b
# (build/base/ptxgen-gpu), base then new, twice where time allows. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
O=${OUT:-/tmp/run84}; W=/tmp/run84w; mkdir -p "$O" $W
t0=$(date +%s)
OUT=/tmp/gc timeout 300 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$? after $(( $(date +%s) - t0 )) s"
grep -E "passed\)|^gpu-check" /tmp/gc.txt | tail -4
grep -E "FAIL" /tmp/gc/summary.md | head -10
grep -cE "^\| (memcheck|racecheck|synccheck)" /tmp/gc/summary.md
grep -E "h16_kf|T256_H64|T256_H16" /tmp/gc/summary.md | cut -c1-180 | head -12
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -gather=false -iters 30"
S=H16_T8_K128+512,H16_T64_K128+512,H16_T128_K128+512,H16_T192_K128+512,H16_T256_K128+512,H32_T256_K128+512,H64_T64_K128+512,H64_T256_K128+512,H16_T256_K128+1152,H8_T256_K128+512
for r in 1 2; do
  for v in base new; do
    [ $(( $(date +%s) - t0 )) -lt 480 ] || break 2
    bin=build/ptxgen-gpu; [ $v = base ] && bin=build/base/ptxgen-gpu
    timeout 90 $bin bench $B -shapes $S > $W/${v}_$r.txt 2>&1
  done
done
for f in $W/*.txt; do echo "== $(basename $f)"; grep -E "us \(min|FAIL|rror|false" $f | sed 's/, ok true//' | cut -c1-160; done | tee $O/summary.txt
cp /tmp/gc/summary.md $O/gc-summary.md 2>/dev/null
tar czf $O/runs.tgz -C /tmp run84w gc gc.txt 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
