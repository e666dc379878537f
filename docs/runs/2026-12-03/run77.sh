#!/usr/bin/env bash
# GPU run 77 (session 13): gpu-check on the generator whose plan runs the Small kernels
# (replicated scores) only where a latency-bound launch's CTAs walk at most 2 tiles
# (plan.Rule.SmallMaxTiles, run 76), with matrix cases and a sanitizer row for the sm_120
# plan's split kernel at H16 T64; then one bench round of run 76's shapes on it. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
O=${OUT:-/tmp/run77}; W=/tmp/run77w; mkdir -p "$O" $W
t0=$(date +%s)
OUT=/tmp/gc timeout 330 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$? after $(( $(date +%s) - t0 )) s"
grep -E "passed\)|^gpu-check" /tmp/gc.txt | tail -4
grep -E "FAIL" /tmp/gc/summary.md | head -10
grep -E "no Small" /tmp/gc/summary.md | cut -c1-160
grep -cE "^\| (memcheck|racecheck|synccheck)" /tmp/gc/summary.md
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -gather=false -iters 30"
timeout 80 build/ptxgen-gpu bench $B -shapes H16_T64_K128+512,H16_T32_K128+512,H64_T8_K128+512,H32_T32_K128+512,H16_T8_K128+512,H16_T64_K128+1152 > $W/bench.txt 2>&1
grep -E "us \(min|FAIL|rror" $W/bench.txt | sed 's/, ok true//' | cut -c1-160 | tee $O/summary.txt
tar czf $O/runs.tgz -C /tmp run77w gc gc.txt 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
