#!/usr/bin/env bash
# GPU run 18: the plans issue 19 changed, timed. The kernel now asks the lowering for its
# figures, and for fp8ds with one list of K=4096 on sm_90 the 16-head split kernel holds 2
# CTAs per SM, not the 3 the old estimate planned with: the split chosen per call changes.
# Before (bdd44fc, plus the bench's shape parser) against after (main), alternating, same
# shapes, serving pools, CUDA events; H16_T8_K128+512 is a control the change does not touch.
set -uo pipefail
S=H16_T1_K4096+0,H16_T8_K4096+0,H16_T32_K4096+0,H64_T8_K4096+0,H16_T8_K128+512
C="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -sm120-plan=false"
for i in 1 2 3; do for b in ptxgen-gpu-pre ptxgen-gpu; do timeout 100 build/$b bench -shapes $S $C > $OUT/${b}_$i.txt 2>&1; echo "$b $i rc=$?"; done; done
for f in $OUT/ptxgen-gpu*_[123].txt; do echo "== $f"; grep -h "us (min" $f | cut -c1-25,60-150; done
