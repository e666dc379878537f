#!/usr/bin/env bash
# GPU run 72 (session 12): the full gpu-check on the final generator (-k-frags auto now also
# takes the heads-in-N family's computed fragments under sm_120's limits, at one stage and 2
# CTAs per SM, as run 71 measured), sanitizer rows included. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
O=${OUT:-/tmp/run72}; mkdir -p "$O"
OUT=/tmp/gc timeout 400 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$?"
grep -E "passed\)|^gpu-check" /tmp/gc.txt | tail -4
grep -E "FAIL" /tmp/gc/summary.md | head -10
grep -E "sm_120 plan|k-frags" /tmp/gc/summary.md | cut -c1-150
grep -cE "^\| (memcheck|racecheck|synccheck)" /tmp/gc/summary.md
tar czf $O/gc.tgz -C /tmp gc gc.txt 2>/dev/null
