#!/usr/bin/env bash
# GPU run 30: session 4's final generator (score dots split along the reduction, staged
# stores held back, copy addresses before cp.asyncs, scale rows in one load; bench's bf16p
# column): gpu-check (matrices, sanitizers, CUDA 13 ptxas on sm_120, runtime and lower
# tests, examples/rmsnorm), the Python host (manifest version 4), bf16p on every shared
# vector folder. Carry build (make gpu-bin) and .device (gen.sh's kernels, the vectors).
set -uo pipefail
G=/tmp/gc; mkdir -p $G
OUT=$G timeout 330 bash scripts/gpu-check.sh > /dev/null 2>&1; echo "gpu-check rc=$?"
tar czf $OUT/gc.tgz -C $G .
PYTHONUNBUFFERED=1 timeout 90 python3 examples/python/mla_decode.py --kernels .device/python-kernels --vectors .device/testvectors/mla_decode > $OUT/python-host.log 2>&1; echo "python rc=$?"
for d in .device/testvectors/mla_decode/*/; do timeout 60 build/ptxgen-gpu check -gpu -precision bf16p -vectors $d > $OUT/bf16p_$(basename $d).txt 2>&1; echo "bf16p $(basename $d) rc=$?"; done
grep -E "Shape matrix|gpu-check:|FAIL|rmsnorm|lower.test|runtime.test|spill" $G/summary.md | head -20
tail -2 $OUT/python-host.log
