#!/usr/bin/env bash
# GPU run 81 (session 14): what freeing a held Q's shared home would buy, from a
# measurement build (build/heldq/ptxgen-gpu: b070a2e + run81-heldq.patch, where a dot that
# holds its A across the loop reads A's home only at the loop's entry, so the loop's arrays
# take Q's 18 KB) against b070a2e (build/ptxgen-gpu), each with the default plan and with
# -k-frags=true (the 16-head CTA's K fragments computed from the raw ring: 51 -> 33 KB on
# sm_120, 2 CTAs per SM instead of 1). 2 alternating rounds, serving pool, sm_120 plan at
# sm_120's residency. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/run81}; W=/tmp/run81w; mkdir -p "$O" $W
t0=$(date +%s); L=${LIMIT:-540}
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -gather=false -iters 30"
S=H16_T256_K128+512,H16_T64_K128+512,H16_T256_K128+1152,H32_T256_K128+512,H64_T64_K128+512,H64_T256_K128+512
for r in 1 2; do
  for v in base heldq; do
    for kf in auto true; do
      [ $(( $(date +%s) - t0 )) -lt $((L - 50)) ] || break
      bin=build/ptxgen-gpu; [ $v = heldq ] && bin=build/heldq/ptxgen-gpu
      timeout 70 $bin bench $B -k-frags=$kf -shapes $S > $W/${v}_kf${kf}_$r.txt 2>&1
    done
  done
done
for f in $W/*.txt; do echo "== $(basename $f)"; grep -E "us \(min|FAIL|rror|false" $f | sed 's/, ok true//' | sed -E 's/\[h[^]]*\] //' | cut -c1-150; done | tee $O/summary.txt
tar czf $O/runs.tgz -C /tmp run81w 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
