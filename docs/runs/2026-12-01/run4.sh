#!/usr/bin/env bash
# GPU run 4 (2026-12-01): q·k in two accumulator chains (-score-chains 2) against one.
set -uo pipefail
R=/tmp/res; mkdir -p $R; V=/tmp/v; B=build/ptxgen-gpu
S=H64_T8_K128+512,H64_T64_K128+512,H64_T128_K128+512,H64_T256_K128+512,H64_T64_K128+2048,H128_T64_K128+512,H128_T256_K128+512,H16_T256_K128+512,H8_T64_K128+512,H16_T8_K128+512
$B bench -shapes $S -vectors-out $V > $R/vectors.txt 2>&1 || { tail $R/vectors.txt; exit 1; }
C="-vectors-in $V -flush-mb 1024 -bw 4.3e12 -flops 636e12 -sm120-plan=false"
for i in 1 2; do for n in 1 2; do timeout 60 $B bench -shapes $S $C -score-chains $n > $R/c${n}_$i.txt 2>&1; done; done
tar czf $OUT/res.tgz -C $R --exclude=vectors.txt .
for f in $R/c*_*.txt; do echo "== $f"; grep -h "us (min" $f; done
