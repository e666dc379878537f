#!/usr/bin/env bash
# GPU run 17: the final generator of this session (issues 19 and 22 merged, issue 21's
# emulator barriers): gpu-check (runtime.test, lower.test's user kernels and math ops on the
# GPU, examples/rmsnorm through its generated launcher, the shape matrices, CUDA 13 ptxas on
# sm_120, compute-sanitizer) and the Python host (manifest version 3, stride checks) on the
# shared test vectors. Carry build (make gpu-bin) and .device (examples/python/gen.sh's
# kernels in .device/python-kernels, a copy of ../shared/testvectors in .device/testvectors).
set -uo pipefail
G=/tmp/gc; mkdir -p $G
OUT=$G timeout 300 bash scripts/gpu-check.sh > /dev/null 2>&1; echo "gpu-check rc=$?"
tar czf $OUT/gc.tgz -C $G .
PYTHONUNBUFFERED=1 timeout 90 python3 examples/python/mla_decode.py --kernels .device/python-kernels --vectors .device/testvectors/mla_decode > $OUT/python-host.log 2>&1; echo "python rc=$?"
grep -E "gpu-check:|FAIL|rmsnorm|lower.test|runtime.test|matrix" $G/summary.md | head -30
cat $G/rmsnorm.log 2>/dev/null
tail -4 $OUT/python-host.log
