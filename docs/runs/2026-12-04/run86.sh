#!/usr/bin/env bash
# GPU run 86 (session 15): gpu-check on the generator whose one-stage loops also issue
# their own gathers' index tiles a tile ahead (`ahead 1` without `stages`), then those
# shapes against c57cf6b (build/base/ptxgen-gpu), base then new. Writes into $OUT as it
# goes (run 85's bench loop ran to 579 of its 600 s). Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
O=${OUT:-/tmp/run86}; mkdir -p "$O"
t0=$(date +%s)
OUT=/tmp/gc timeout 280 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$? after $(( $(date +%s) - t0 )) s" | tee "$O/summary.txt"
grep -E "passed\)|^gpu-check" /tmp/gc.txt | tail -4 | tee -a "$O/summary.txt"
grep -E "FAIL" /tmp/gc/summary.md | head -10 | tee -a "$O/summary.txt"
grep -cE "^\| (memcheck|racecheck|synccheck)" /tmp/gc/summary.md | tee -a "$O/summary.txt"
grep -E "one stage|one-stage" /tmp/gc/summary.md | cut -c1-200 | tee -a "$O/summary.txt"
cp /tmp/gc/summary.md "$O/gc-summary.md"; tar czf "$O/gc.tgz" -C /tmp gc gc.txt 2>/dev/null
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -gather=false -iters 20"
S=H16_T256_K128+4096,H64_T128_K128+4096
for v in base new; do
  [ $(( $(date +%s) - t0 )) -lt 420 ] || break
  bin=build/ptxgen-gpu; [ $v = base ] && bin=build/base/ptxgen-gpu
  timeout 70 $bin bench $B -shapes $S > "$O/$v.txt" 2>&1
  timeout 50 $bin bench $B -stages 1 -shapes H16_T256_K128+4096 > "$O/${v}_s1.txt" 2>&1
  grep -E "us \(min|FAIL|rror" "$O/$v.txt" "$O/${v}_s1.txt" | sed 's/, ok true//' | cut -c1-170 | tee -a "$O/summary.txt"
done
echo "total $(( $(date +%s) - t0 )) s" | tee -a "$O/summary.txt"
