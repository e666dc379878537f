#!/usr/bin/env bash
# GPU run 85 (session 15): gpu-check on the generator with index tiles issued ahead
# (`ahead` loop clause; the decode and gather past the 2048 indices a CTA preloads),
# then A/B of those shapes against 744bc31 (build/base/ptxgen-gpu: their loops were not
# pipelined), and the new binary with -ahead 0 (none) and -ahead 2. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
O=${OUT:-/tmp/run85}; W=/tmp/run85w; mkdir -p "$O" $W
t0=$(date +%s)
OUT=/tmp/gc timeout 330 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$? after $(( $(date +%s) - t0 )) s"
grep -E "passed\)|^gpu-check" /tmp/gc.txt | tail -4
grep -E "FAIL" /tmp/gc/summary.md | head -10
grep -cE "^\| (memcheck|racecheck|synccheck)" /tmp/gc/summary.md
grep -E "index tiles|4096" /tmp/gc/summary.md | cut -c1-200 | head -16
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -iters 20"
S=H16_T256_K128+4096,H8_T256_K128+4096,H64_T128_K128+4096,H16_T64_K128+8192,H16_T256_K128+1152
for r in 1 2; do
  for v in base new ahead0 ahead2; do
    [ $(( $(date +%s) - t0 )) -lt 500 ] || break 2
    bin=build/ptxgen-gpu; extra=""
    [ $v = base ] && bin=build/base/ptxgen-gpu
    [ $v = ahead0 ] && extra="-ahead 0"
    [ $v = ahead2 ] && extra="-ahead 2"
    timeout 100 $bin bench $B $extra -shapes $S > $W/${v}_$r.txt 2>&1
  done
done
for f in $W/*.txt; do echo "== $(basename $f)"; grep -E "us \(min|FAIL|rror|false" $f | sed 's/, ok true//' | cut -c1-170; done | tee $O/summary.txt
cp /tmp/gc/summary.md $O/gc-summary.md 2>/dev/null
tar czf $O/runs.tgz -C /tmp run85w gc gc.txt 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
