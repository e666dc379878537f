#!/usr/bin/env bash
# GPU run 76 (session 13, a rule measurement): latency-bound launches whose CTAs walk many
# tiles, with and without the replicated-scores Small kernels. build/smallmax/ptxgen-gpu is
# main at b7091f6 with plan.Rule.Choose skipping the Small kernel where a CTA walks more than
# SMALLMAX tiles (a measurement build, not a commit); unset, it is main. 2 alternating rounds,
# serving pool; the sm_120 plan column is where such launches are (1 CTA per SM). Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/run76}; mkdir -p "$O"
t0=$(date +%s)
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -gather=false -iters 30"
S="-shapes H16_T64_K128+512,H16_T32_K128+512,H64_T8_K128+512,H32_T32_K128+512,H16_T8_K128+512,H16_T64_K128+1152"
for r in 1 2; do
  timeout 90 build/smallmax/ptxgen-gpu bench $B $S > $O/base_$r.txt 2>&1
  SMALLMAX=2 timeout 90 build/smallmax/ptxgen-gpu bench $B $S > $O/max2_$r.txt 2>&1
done
for f in $O/*.txt; do echo "== $(basename $f)"; grep -E "us \(min|FAIL|rror" $f | sed 's/, ok true//' | cut -c1-160; done
echo "total $(( $(date +%s) - t0 )) s"
