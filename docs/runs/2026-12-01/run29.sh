#!/usr/bin/env bash
# GPU run 29: integer e4m3 dequantization of the staged K tiles with its guard (a warp
# whose scales reach 2^8 takes the f32 path by a vote) against e1ea8db, alternating, same
# flags both (-gather=false: both binaries know it); the shared vectors through it; and
# its bit-exactness on the GPU (lower.test's TestPow2DequantExact runs the emulator; here
# the decode's outputs are checked against float64 and the emulator by check -gpu).
set -uo pipefail
S=H16_T256_K128+512,H16_T64_K128+512,H8_T64_K128+512,H16_T8_K128+512,H64_T64_K128+512
C="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -iters 30"
for i in 1 2; do for b in ptxgen-gpu-rowbytes ptxgen-gpu-intdeq; do timeout 120 build/$b bench -shapes $S $C > $OUT/${b}_$i.txt 2>&1; echo "$b $i rc=$?"; grep -h "us (min" $OUT/${b}_$i.txt | grep -v bf16p | cut -c1-25,60-170; done; done
for d in .device/testvectors/mla_decode/*/; do timeout 60 build/ptxgen-gpu-intdeq check -gpu -vectors $d 2>&1 | tail -1; done
for a in "-heads 16 -target sm_90" "-heads 8 -target sm_90 -plan-target sm_120" "-heads 64 -target sm_90 -plan-target sm_120"; do timeout 60 build/ptxgen-gpu-intdeq check -gpu $a -tokens 5 -sms 1 2>&1 | tail -1; done
