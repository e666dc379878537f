#!/usr/bin/env bash
# GPU run 5 (2026-12-01): rows at run time (issue 14): gpu-check.sh, the Python host example
# (cuda-python, several batch sizes from one module, CUDA graph replay), and the bench through
# the run-time path against the binary before it, interleaved on the same folders.
set -uo pipefail
G=/tmp/gc; R=/tmp/res; mkdir -p $G $R; V=/tmp/v
OUT=$G timeout 200 bash scripts/gpu-check.sh > /dev/null 2>&1; echo "gpu-check rc=$?"
PYTHONUNBUFFERED=1 timeout 200 python3 examples/python/mla_decode.py --kernels .device/python-kernels --vectors .device/testvectors/mla_decode > $R/python-host.log 2>&1; echo "python rc=$?"
build/ptxgen-gpu bench -vectors-out $V > $R/vectors.txt 2>&1 || tail -3 $R/vectors.txt
C="-vectors-in $V -flush-mb 1024 -bw 4.3e12 -flops 636e12 -sm120-plan=false"
for i in 1 2; do for b in ptxgen-gpu-pre ptxgen-gpu; do timeout 90 build/$b bench $C > $R/${b}_$i.txt 2>&1; done; done
tar czf $OUT/res.tgz -C $R . ; tar czf $OUT/gc.tgz -C $G .
grep -E "^## |gpu-check:|runtime" $G/summary.md | head; grep -E "rows|capacity" $G/summary.md | head -8; tail -15 $R/python-host.log
for f in $R/ptxgen-gpu*_1.txt; do echo "== $f"; grep -h "us (min" $f | cut -c1-25,80-130; done
