#!/usr/bin/env bash
# GPU run 25: the 16-head decode's score dots split along the reduction (each warp a
# quarter of the 512 dims, partial scores all-reduced through shared memory, softmax
# replicated, P kept in registers) against main (1c902a5), alternating, serving pools,
# CUDA events. Then the new kernel on the shared vectors and under compute-sanitizer.
set -uo pipefail
S=H16_T256_K128+512,H16_T64_K128+512,H8_T64_K128+512,H16_T8_K128+512,H16_T1_K128+512,H64_T64_K128+512
C="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -iters 30"
for i in 1 2; do for b in ptxgen-gpu-base ptxgen-gpu-splitk; do timeout 120 build/$b bench -shapes $S $C > $OUT/${b}_$i.txt 2>&1; echo "$b $i rc=$?"; done; done
for f in $OUT/ptxgen-gpu*_[12].txt; do echo "== $f"; grep -h "us (min" $f | cut -c1-25,60-170; done
for d in .device/testvectors/mla_decode/*/; do timeout 60 build/ptxgen-gpu-splitk check -gpu -vectors $d 2>&1 | tail -1; done
for a in "-heads 16 -target sm_90" "-heads 8 -target sm_90 -plan-target sm_120" "-heads 64 -target sm_90 -plan-target sm_120"; do timeout 60 build/ptxgen-gpu-splitk check -gpu $a -tokens 5 -sms 1 2>&1 | tail -1; done
for tool in memcheck racecheck synccheck; do timeout 120 compute-sanitizer --tool $tool --error-exitcode 9 build/ptxgen-gpu-splitk check -gpu -heads 16 -tokens 3 -sms 1 -target sm_90 > $OUT/san_$tool.txt 2>&1; echo "$tool rc=$?"; tail -2 $OUT/san_$tool.txt; done
