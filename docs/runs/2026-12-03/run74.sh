#!/usr/bin/env bash
# GPU run 74 (session 13): (1) gpu-check on the generator whose decode and gather walk a
# CTA's share of the candidate list in one pipelined loop across both segments (sanitizer
# rows included); (2) A/B of that generator (build/ptxgen-gpu) against session 12's final
# one (build/old/ptxgen-gpu, f85d048), 2 alternating rounds, serving pool, the decode, the
# sm_120 plan and the gather ceiling; (3) the same shapes with the flush read back clean
# (-flush-clean) and with no flush; (4) ncu of the gather at H16 T256. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
O=${OUT:-/tmp/run74}; W=/tmp/run74w; mkdir -p "$O" $W
t0=$(date +%s); L=${LIMIT:-570}
OUT=/tmp/gc timeout 300 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$? after $(( $(date +%s) - t0 )) s"
grep -E "passed\)|^gpu-check" /tmp/gc.txt | tail -4
grep -E "FAIL" /tmp/gc/summary.md | head -10
grep -cE "^\| (memcheck|racecheck|synccheck)" /tmp/gc/summary.md
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -iters 30"
S=H16_T256_K128+512,H16_T64_K128+512,H8_T64_K128+512,H8_T256_K128+512,H64_T64_K128+512,H64_T256_K128+512,H16_T8_K128+512,H16_T1_K128+512
for r in 1 2; do
  for v in old new; do
    [ $(( $(date +%s) - t0 )) -lt $((L - 60)) ] || break
    bin=build/ptxgen-gpu; [ $v = old ] && bin=build/old/ptxgen-gpu
    timeout 80 $bin bench $B -shapes $S > $W/ab_${v}_$r.txt 2>&1
  done
done
[ $(( $(date +%s) - t0 )) -lt $((L - 60)) ] && timeout 70 build/ptxgen-gpu bench $B -flush-clean -shapes $S > $W/clean.txt 2>&1
[ $(( $(date +%s) - t0 )) -lt $((L - 50)) ] && timeout 50 build/ptxgen-gpu bench $B -flush-mb 0 -sm120-plan=false -shapes H16_T256_K128+512,H16_T64_K128+512,H8_T64_K128+512 > $W/noflush.txt 2>&1
[ $(( $(date +%s) - t0 )) -lt $((L - 30)) ] && timeout 40 ncu --section SpeedOfLight --section WarpStateStats --section LaunchStats -k regex:mla_gather -c 1 build/ptxgen-gpu bench $B -sm120-plan=false -iters 1 -warmup 0 -flush-mb 0 -shapes H16_T256_K128+512 > $W/ncu_gather.txt 2>&1
for f in $W/*.txt; do echo "== $(basename $f)"; grep -E "us \(min|FAIL|rror|Duration|Throughput|Warp Cycles Per Issued|flushed" $f | sed 's/, ok true//' | cut -c1-150; done | tee $O/summary.txt
tar czf $O/runs.tgz -C /tmp run74w gc gc.txt 2>/dev/null
echo "total $(( $(date +%s) - t0 )) s"
