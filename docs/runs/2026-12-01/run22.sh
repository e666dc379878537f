#!/usr/bin/env bash
# GPU run 22: the final generator of this session (16-head decode pipelined 2 stages, Small kernels included):
# gpu-check (matrices, sanitizers, CUDA 13 ptxas on sm_120, runtime and lower tests,
# examples/rmsnorm), the Python host (manifest version 4) and the bench of the shapes
# run 20 measured, once. Carry build (make gpu-bin) and .device (gen.sh's kernels, the
# shared test vectors).
set -uo pipefail
G=/tmp/gc; mkdir -p $G
OUT=$G timeout 300 bash scripts/gpu-check.sh > /dev/null 2>&1; echo "gpu-check rc=$?"
tar czf $OUT/gc.tgz -C $G .
PYTHONUNBUFFERED=1 timeout 90 python3 examples/python/mla_decode.py --kernels .device/python-kernels --vectors .device/testvectors/mla_decode > $OUT/python-host.log 2>&1; echo "python rc=$?"
S=H64_T64_K128+512,H8_T64_K128+512,H16_T64_K128+512,H16_T256_K128+512,H16_T8_K128+512,H16_T1_K128+512,H8_T256_K128+512
timeout 120 build/ptxgen-gpu bench -shapes $S -flush-mb 1024 -bw 4.3e12 -flops 636e12 > $OUT/bench.txt 2>&1; echo "bench rc=$?"
grep -E "Shape matrix|gpu-check:|FAIL|rmsnorm|lower.test|runtime.test|spill" $G/summary.md | head -20
tail -2 $OUT/python-host.log
grep -h "us (min" $OUT/bench.txt | cut -c1-25,60-150
