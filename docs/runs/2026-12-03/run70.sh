#!/usr/bin/env bash
# GPU run 70 (session 12): (A) the plan's new split rule (b085375: rows that fill the SMs once
# split where an SM holds more than twice their CTAs) with -k-frags against the default, sm_90
# plan, H8 T160-T256, 2 alternating rounds; (B) the sm_120 plan at sm_120's CTAs per SM
# (-planned-residency, ff604c4): default (2 stages, 86.5 KB, 1 CTA per SM), -stages 1,
# -k-frags (1 stage, 44.5 KB, 2 per SM) and -k-frags -stages 2 (60 KB, 1 per SM), H8 and H16
# T64/T256, 2 rounds; and the sm_120 plan without the pad, one round, to tie it to the old
# column. Carry build/.
set -uo pipefail
O=${OUT:-/tmp/run70}; mkdir -p "$O"
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -bf16p=false -iters 30"
A="$B -sm120-plan=false -shapes H8_T160_K128+512,H8_T192_K128+512,H8_T224_K128+512,H8_T256_K128+512"
S="$B -sm120-plan=false -plan-target sm_120 -shapes H8_T64_K128+512,H8_T256_K128+512,H16_T64_K128+512,H16_T256_K128+512"
# Two device calls (10 minutes each at most): PART=1 runs (A) and (B)'s first round, PART=2 the rest.
PART=${PART:-1}
if [ "$PART" = 1 ]; then R="1"; else R="2"; fi
[ "$PART" = 1 ] && for r in 1 2; do
  timeout 120 build/ptxgen-gpu bench $A > $O/a_base_$r.txt 2>&1
  timeout 120 build/ptxgen-gpu bench $A -k-frags > $O/a_kfrags_$r.txt 2>&1
done
for r in $R; do
  timeout 120 build/ptxgen-gpu bench $S -planned-residency > $O/b_base_$r.txt 2>&1
  timeout 120 build/ptxgen-gpu bench $S -planned-residency -stages 1 > $O/b_s1_$r.txt 2>&1
  timeout 120 build/ptxgen-gpu bench $S -planned-residency -k-frags > $O/b_kfrags_$r.txt 2>&1
  timeout 120 build/ptxgen-gpu bench $S -planned-residency -k-frags -stages 2 > $O/b_kfrags_s2_$r.txt 2>&1
done
if [ "$PART" = 2 ]; then
  timeout 120 build/ptxgen-gpu bench $S > $O/b_base_nopad.txt 2>&1
  timeout 120 build/ptxgen-gpu bench $S -k-frags > $O/b_kfrags_nopad.txt 2>&1
fi
for f in $O/*.txt; do echo "== $(basename $f)"; grep -E "us \(min|FAIL|rror" $f | sed 's/ok true//' | cut -c1-150; done
