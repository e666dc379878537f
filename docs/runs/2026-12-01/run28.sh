#!/usr/bin/env bash
# GPU run 28: integer e4m3 dequantization in the staged K tiles (prmt, shl, and, one
# mul.rn.bf16x2 by 2^(e-7) per two elements; first version, no guard for scale exponents
# >= 135) against e1ea8db, alternating; then the shared vectors through it.
set -uo pipefail
S=H16_T256_K128+512,H16_T64_K128+512,H8_T64_K128+512,H16_T8_K128+512,H64_T64_K128+512
C="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -bf16p=false -iters 30"
for i in 1 2; do for b in ptxgen-gpu-base ptxgen-gpu-intdeq; do timeout 120 build/$b bench -shapes $S $C > $OUT/${b}_$i.txt 2>&1; echo "$b $i rc=$?"; grep -h "us (min" $OUT/${b}_$i.txt | cut -c1-25,60-170; done; done
for d in .device/testvectors/mla_decode/*/; do timeout 60 build/ptxgen-gpu-intdeq check -gpu -vectors $d 2>&1 | tail -1; done
