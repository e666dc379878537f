#!/usr/bin/env bash
# GPU run 71 (session 12): (1) the full gpu-check on the final generator (-k-frags auto: the
# heads-in-N family computes its K fragments from the raw ring on sm_90 by default; the split
# of rows that fill the SMs once; -k-frags for the 16-head CTA, opt-in), sanitizer rows
# included; (2) run 70's PART 2: the sm_120 plan at sm_120's CTAs per SM; (3) ncu on H16 T256
# with and without the 16-head CTA's -k-frags, as time allows. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
O=${OUT:-/tmp/run71}; mkdir -p "$O"
t0=$(date +%s); L=${LIMIT:-560} # seconds this run may take in all
OUT=/tmp/gc timeout $((L - 90)) bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$? after $(( $(date +%s) - t0 )) s"
grep -E "passed\)|^gpu-check" /tmp/gc.txt | tail -4
grep -E "FAIL" /tmp/gc/summary.md | head -10
grep -E "k-frags|heads in N|T=192" /tmp/gc/summary.md | cut -c1-160
tar czf $O/gc.tgz -C /tmp gc gc.txt 2>/dev/null
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -bf16p=false -iters 30"
S="$B -sm120-plan=false -plan-target sm_120 -shapes H8_T64_K128+512,H8_T256_K128+512,H16_T64_K128+512,H16_T256_K128+512"
for x in "" "-k-frags" "-k-frags -stages 2" "-stages 1"; do
  [ $(( $(date +%s) - t0 )) -lt $((L - 20)) ] || break
  n=b_$(echo "base $x" | tr -d ' -'); timeout 40 build/ptxgen-gpu bench $S -planned-residency $x > $O/$n.txt 2>&1
done
for x in "" "-k-frags"; do
  [ $(( $(date +%s) - t0 )) -lt $L ] || break
  n=b_$(echo "base $x nopad" | tr -d ' -'); timeout 30 build/ptxgen-gpu bench $S $x > $O/$n.txt 2>&1
done
for x in "-k-frags=false" "-k-frags"; do
  [ $(( $(date +%s) - t0 )) -lt $((L - 45)) ] || break
  timeout 45 ncu --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section InstructionStats -k regex:mla_decode_h16 -c 1 build/ptxgen-gpu bench $B -sm120-plan=false -iters 1 -warmup 0 -flush-mb 0 -shapes H16_T256_K128+512 $x > $O/ncu_h16_$(echo $x | tr -d ' =-').txt 2>&1
done
for f in $O/*.txt; do echo "== $(basename $f)"; grep -E "us \(min|FAIL|rror|Duration|Executed Instructions  |Issued Warp Per|Warp Cycles Per Issued|Registers Per|Achieved Occ" $f | sed 's/ok true//' | cut -c1-140; done
echo "total $(( $(date +%s) - t0 )) s"
