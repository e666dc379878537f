#!/usr/bin/env bash
# GPU run 70 (session 12, generator 671ff10). PART=1: the sm_90 plan, default against -k-frags
# (heads in N: the plan's new split rule, b085375; the 16-head CTA: Kᵀ and V fragments from
# the raw ring, b computed, 671ff10), H8 T192/T256 and H16 T1/T8/T64/T256, 2 alternating rounds.
# PART=2: the sm_120 plan at sm_120's CTAs per SM (-planned-residency, ff604c4): the default,
# -k-frags, -k-frags -stages 2 and -stages 1, H8 and H16 T64/T256, one round; and the default
# and -k-frags without the pad. Carry build/.
set -uo pipefail
O=${OUT:-/tmp/run70}; mkdir -p "$O"
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -bf16p=false -iters 30"
if [ "${PART:-1}" = 1 ]; then
  A="$B -sm120-plan=false -shapes H8_T192_K128+512,H8_T256_K128+512,H16_T1_K128+512,H16_T8_K128+512,H16_T64_K128+512,H16_T256_K128+512"
  for r in 1 2; do
    timeout 140 build/ptxgen-gpu bench $A > $O/a_base_$r.txt 2>&1
    timeout 140 build/ptxgen-gpu bench $A -k-frags > $O/a_kfrags_$r.txt 2>&1
  done
elif [ "${PART:-1}" = 2 ]; then
  S="$B -sm120-plan=false -plan-target sm_120 -shapes H8_T64_K128+512,H8_T256_K128+512,H16_T64_K128+512,H16_T256_K128+512"
  timeout 100 build/ptxgen-gpu bench $S -planned-residency > $O/b_base.txt 2>&1
  timeout 100 build/ptxgen-gpu bench $S -planned-residency -k-frags > $O/b_kfrags.txt 2>&1
  timeout 100 build/ptxgen-gpu bench $S -planned-residency -k-frags -stages 2 > $O/b_kfrags_s2.txt 2>&1
  timeout 100 build/ptxgen-gpu bench $S -planned-residency -stages 1 > $O/b_s1.txt 2>&1
  timeout 100 build/ptxgen-gpu bench $S > $O/b_base_nopad.txt 2>&1
  timeout 100 build/ptxgen-gpu bench $S -k-frags > $O/b_kfrags_nopad.txt 2>&1
fi
for f in $O/*.txt; do echo "== $(basename $f)"; grep -E "us \(min|FAIL|rror" $f | sed 's/ok true//' | cut -c1-140; done
# PART=3 (run 70b): ncu on H16 T256, default and -k-frags, to explain the 16-head miss.
if [ "${PART:-1}" = 3 ]; then
  export PATH=$PATH:/usr/local/cuda/bin
  for x in "" "-k-frags"; do
    timeout 200 ncu --section SpeedOfLight --section SchedulerStats --section WarpStateStats --section InstructionStats --section MemoryWorkloadAnalysis -k regex:mla_decode_h16 -c 1 build/ptxgen-gpu bench $B -gather=false -sm120-plan=false -iters 1 -warmup 0 -flush-mb 0 -shapes H16_T256_K128+512 $x > $O/ncu_h16${x:+_kfrags}.txt 2>&1
  done
  for f in $O/ncu_*.txt; do echo "== $f"; grep -E "Duration|Executed Instructions |Issued Warp|Registers Per|Achieved Occ|L1/TEX Cache Throughput|Shared Memory|Stall|Warp Cycles Per Issued" $f | head -20; done
fi
