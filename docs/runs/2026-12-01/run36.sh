#!/usr/bin/env bash
# GPU run 36 (session 5): gpu-check of the final generator (swizzled layouts, the 64-head
# CTA in two stages; sanitizers now also on the 64-head CTA). Carry build (make gpu-bin).
set -uo pipefail
G=/tmp/gc; mkdir -p $G
OUT=$G timeout 560 bash scripts/gpu-check.sh > /dev/null 2>&1; echo "gpu-check rc=$?"
tar czf $OUT/gc.tgz -C $G .
grep -E "Shape matrix|gpu-check:|FAIL|rmsnorm|lower.test|runtime.test|spill|64-head" $G/summary.md | head -30
