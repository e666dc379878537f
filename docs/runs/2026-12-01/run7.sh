#!/usr/bin/env bash
# GPU run 7: the run-time plan (90b08ec). gpu-check on the new kernels; the Python host
# (manifest v2, plan dispatch, graph replay); the bench before (99a5ab6, per-call
# generation) and after (the plan variants through MLACall), alternating, on one set
# of serving-pool vector folders.
set -uo pipefail
G=/tmp/gc; R=/tmp/res; mkdir -p $G $R; V=/tmp/v
OUT=$G timeout 150 bash scripts/gpu-check.sh > /dev/null 2>&1; echo "gpu-check rc=$?"
tar czf $OUT/gc.tgz -C $G .
PYTHONUNBUFFERED=1 timeout 60 python3 examples/python/mla_decode.py --kernels .device/python-kernels --vectors .device/testvectors/mla_decode > $R/python-host.log 2>&1; echo "python rc=$?"
S=H8_T64_K128+512,H16_T256_K128+512,H64_T8_K128+512,H64_T32_K128+512,H64_T64_K128+512,H64_T128_K128+512,H64_T256_K128+512,H64_T64_K128+2048,H128_T8_K128+512,H128_T64_K128+512,H128_T256_K128+512
timeout 60 build/ptxgen-gpu bench -shapes $S -vectors-out $V > $R/vectors.txt 2>&1 || tail -3 $R/vectors.txt
C="-vectors-in $V -flush-mb 1024 -bw 4.3e12 -flops 636e12 -sm120-plan=false"
for i in 1 2; do for b in ptxgen-gpu-pre ptxgen-gpu; do timeout 45 build/$b bench -shapes $S $C > $R/${b}_$i.txt 2>&1; echo "$b $i rc=$?"; tar czf $OUT/res.tgz -C $R .; done; done
grep -E "^## |gpu-check:|FAIL" $G/summary.md | head -20; tail -6 $R/python-host.log
for f in $R/ptxgen-gpu*_1.txt; do echo "== $f"; grep -h "us (min" $f | cut -c1-25,60-140; done
