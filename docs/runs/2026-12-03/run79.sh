#!/usr/bin/env bash
# GPU run 79 (session 14): gpu-check (every case, CUDA 13 sm_120 assemblies, the
# compute-sanitizer rows) on the generator run 78 timed. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
t0=$(date +%s)
OUT=/tmp/gc timeout 500 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$? after $(( $(date +%s) - t0 )) s"
grep -E "passed\)|^gpu-check" /tmp/gc.txt | tail -4
grep -E "FAIL" /tmp/gc/summary.md | head -10
grep -cE "^\| (memcheck|racecheck|synccheck)" /tmp/gc/summary.md
tar czf $OUT/gc.tgz -C /tmp gc gc.txt 2>/dev/null
