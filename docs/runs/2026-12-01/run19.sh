#!/usr/bin/env bash
# GPU run 19: the Python host on manifest version 4 (each plan family carries its variant),
# after issue 19's last items: examples/python/gen.sh's kernels in .device/python-kernels,
# the shared test vectors in .device/testvectors (carry .device).
PYTHONUNBUFFERED=1 timeout 120 python3 examples/python/mla_decode.py --kernels .device/python-kernels --vectors .device/testvectors/mla_decode > $OUT/python-host.log 2>&1; echo "python rc=$?"
tail -3 $OUT/python-host.log
