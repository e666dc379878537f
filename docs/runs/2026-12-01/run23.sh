#!/usr/bin/env bash
# GPU run 23: the first measurement of the gather ceiling (mla_gather: the records each
# shape's decode reads, through its indices, summed), timed by ptxgen-gpu bench in the same
# run as the decode, on the serving pool and on the sparse pool (scattered slots).
set -uo pipefail
C="-sm120-plan=false -flush-mb 1024 -bw 4.3e12 -flops 636e12 -iters 30"
timeout 100 build/ptxgen-gpu bench -shapes H16_T256_K128+512,H16_T64_K128+512,H8_T64_K128+512,H64_T256_K128+512 $C > $OUT/serving.txt 2>&1; echo "serving rc=$?"
timeout 100 build/ptxgen-gpu bench -pool sparse -shapes H16_T256_K128+512,H16_T64_K128+512 $C > $OUT/sparse.txt 2>&1; echo "sparse rc=$?"
grep -iE "gather|us \(min" $OUT/serving.txt $OUT/sparse.txt | cut -c1-200 | head -30
