#!/usr/bin/env bash
# GPU run 87 (session 15): for rows past the 2048 preloaded indices under sm_120's
# limits, the computed-fragment family at one stage (2 CTAs per SM, the plan's choice
# since 744bc31) against the bf16-tile family at two stages (1 CTA per SM, pipelined
# with index tiles since c57cf6b): -k-frags=false, on the final generator. Measurement
# only. Carry build/.
set -uo pipefail
O=${OUT:-/tmp/run87}; mkdir -p "$O"
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -gather=false -iters 20"
S=H16_T256_K128+4096,H64_T128_K128+4096,H16_T256_K128+2560
for v in default tile; do
  extra=""; [ $v = tile ] && extra="-k-frags=false"
  timeout 100 build/ptxgen-gpu bench $B $extra -shapes $S > "$O/$v.txt" 2>&1
  grep -E "us \(min|FAIL|rror" "$O/$v.txt" | sed 's/, ok true//' | cut -c1-170 | tee -a "$O/summary.txt"
done
