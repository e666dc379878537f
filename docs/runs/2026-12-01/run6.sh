#!/usr/bin/env bash
# GPU run 6: the Python host example again, after its workspace-dtype fix.
PYTHONUNBUFFERED=1 timeout 200 python3 examples/python/mla_decode.py --kernels .device/python-kernels --vectors .device/testvectors/mla_decode 2>&1 | tee $OUT/python-host.log | tail -40
