#!/usr/bin/env bash
# GPU run 46 (session 7): gpu-check of session 6's final generator (P·V 2x4, warp roles,
# RegThreads). Carry build (make gpu-bin).
# The device returns at most 8 files from $OUT, so gpu-check writes to /tmp/gc and its
# whole folder comes back as $OUT/gc.tgz, with summary.md beside it.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
G=/tmp/gc; mkdir -p $G
{
echo "== $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
nvidia-smi --query-gpu=driver_version,name --format=csv
echo "ptxas: $(command -v ptxas)"; ptxas --version | tail -2
echo "compute-sanitizer: $(command -v compute-sanitizer)"; compute-sanitizer --version | grep -i version
md5sum build/*
start=$(date +%s)
OUT=$G timeout 560 bash scripts/gpu-check.sh > /dev/null 2>&1; echo "gpu-check rc=$? in $(($(date +%s) - start)) s"
tar czf $OUT/gc.tgz -C $G .
cp $G/summary.md $OUT/ 2>/dev/null
grep -E "Shape matrix|gpu-check:|FAIL|rmsnorm|lower.test|runtime.test|spill|64-head" $G/summary.md | head -30
} 2>&1 | tee $OUT/run46.out
