#!/usr/bin/env bash
# GPU run 75 (session 13, a prototype measurement): a 16-head heads-in-N CTA (Sᵀ = K·Qᵀ and
# Oᵀ = Vᵀ·Pᵀ with N = 16, two n8 tiles) against the 16-head CTA, at sm_120's CTAs per SM and on
# the sm_90 plan. build/hn16/ptxgen-gpu is main at 9be30b8 with MLAConfig.variant taking
# HeadsInN for head block 16 (and no held Q) when HN16 is set: a measurement build, not a
# commit. Variants: -k-frags (computed K and Vᵀ fragments) at 1 and 2 stages, and the bf16
# tile at 2. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/run75}; mkdir -p "$O"
t0=$(date +%s)
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -gather=false -iters 30"
S="-shapes H16_T256_K128+512,H16_T64_K128+512,H16_T8_K128+512,H16_T1_K128+512,H16_T256_K128+1152"
for r in 1 2; do
  timeout 90 build/ptxgen-gpu bench $B $S > $O/base_$r.txt 2>&1
  for x in "-k-frags -stages 1" "-k-frags -stages 2" "-k-frags=false -stages 2"; do
    n=hn16_$(echo "$x" | tr -d ' =-')_$r
    HN16=1 timeout 90 build/hn16/ptxgen-gpu bench $B $S -head-block 16 $x > $O/$n.txt 2>&1
  done
done
for f in $O/*.txt; do echo "== $(basename $f)"; grep -E "us \(min|FAIL|rror" $f | sed 's/, ok true//' | cut -c1-150; done
echo "total $(( $(date +%s) - t0 )) s"
