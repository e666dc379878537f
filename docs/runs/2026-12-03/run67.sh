#!/usr/bin/env bash
# GPU run 67 (session 11): (1) the full gpu-check on this generator (the movmatrix Pᵀ default
# of 99e6420, the emitter scopes, and -k-frags cases: K and Vᵀ fragments computed from the raw
# ring, opt-in), sanitizer rows included; (2) A/B of the heads-in-N decode with and without
# -k-frags, 2 alternating rounds, H8 T64 / T192 / T256 (sm_90 plan and sm_120 plan). Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
OUT_SAVE=${OUT:-/tmp/run67}; mkdir -p "$OUT_SAVE"
OUT=/tmp/gc timeout 400 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$?"
grep -E "passed\)|^gpu-check" /tmp/gc.txt | tail -4
grep -E "FAIL" /tmp/gc/summary.md | head -10
grep -E "^\| (memcheck|racecheck|synccheck)" /tmp/gc/summary.md | grep -E "k-frags|heads in N"
grep -E "kfrags|T64_H8" /tmp/gc/summary.md
tar czf $OUT_SAVE/gc.tgz -C /tmp gc gc.txt 2>/dev/null
A="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -bf16p=false -iters 30 -shapes H8_T64_K128+512,H8_T192_K128+512,H8_T256_K128+512"
for r in 1 2; do
  timeout 100 build/ptxgen-gpu bench $A > $OUT_SAVE/base_$r.txt 2>&1
  timeout 100 build/ptxgen-gpu bench $A -k-frags > $OUT_SAVE/kfrags_$r.txt 2>&1
done
for f in $OUT_SAVE/base_*.txt $OUT_SAVE/kfrags_*.txt; do echo "== $f"; grep -E "H8_T|sm_120|FAIL|error" $f | head -12; done
