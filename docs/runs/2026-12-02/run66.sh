#!/usr/bin/env bash
# GPU run 66 (session 10): the heads-in-N decode's Pᵀ from the score fragments by movmatrix
# (lower: bInRegisters) instead of through shared memory: (1) the full gpu-check on this
# generator; (2) A/B against f5eaf24 (build/ptxgen-gpu-hn0: Pᵀ staged), 2 alternating rounds,
# the H8 shapes whose plan runs heads in N (T192 and T256 on the sm_90 plan; T64 and T256 on
# the sm_120 plan). Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
OUT_SAVE=${OUT:-/tmp/run66}; mkdir -p "$OUT_SAVE"
OUT=/tmp/gc timeout 480 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$?"
grep -E "passed\)|^gpu-check|runtime.test|lower.test|rmsnorm" /tmp/gc.txt | tail -8
grep -E "FAIL|fail" /tmp/gc/summary.md | head -10
grep -E "^\| (memcheck|racecheck|synccheck)" /tmp/gc/summary.md | grep -vc "0 errors\|0 hazards" 
grep -E "dump_mla|mla_" /tmp/gc/summary.md | grep -E "sm_120" | head -12
tar czf $OUT_SAVE/gc.tgz -C /tmp gc gc.txt 2>/dev/null
cat > build/ptxgen-gpu-mov <<'X'
#!/bin/sh
exec "$(dirname "$0")/ptxgen-gpu" "$@"
X
chmod +x build/ptxgen-gpu-mov
OUT=$OUT_SAVE/ab BINS="hn0 mov" SHAPES=H8_T64_K128+512,H8_T192_K128+512,H8_T256_K128+512 timeout 300 bash scripts/ab.sh
cat $OUT_SAVE/ab/table.txt
