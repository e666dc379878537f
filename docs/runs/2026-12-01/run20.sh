#!/usr/bin/env bash
# GPU run 20: the 16-head decode with its candidate loops pipelined 2 stages deep (the
# pipeline pass, `for ... stages 2`: a tile's gathers issued one iteration ahead into a
# 2-slot ring), against main's 1-stage loop, alternating, same shapes, serving pools, CUDA
# events. build/ptxgen-gpu-s2 is main with MLAVariant.Stages 2 for 16-head CTAs.
set -uo pipefail
S=H64_T64_K128+512,H8_T64_K128+512,H16_T64_K128+512,H16_T256_K128+512,H16_T8_K128+512,H16_T1_K128+512,H8_T256_K128+512
C="-flush-mb 1024 -bw 4.3e12 -flops 636e12"
for i in 1 2 3; do for b in ptxgen-gpu ptxgen-gpu-s2; do timeout 120 build/$b bench -shapes $S $C > $OUT/${b}_$i.txt 2>&1; echo "$b $i rc=$?"; done; done
for f in $OUT/ptxgen-gpu*_[123].txt; do echo "== $f"; grep -h "us (min" $f | cut -c1-25,60-150; done
