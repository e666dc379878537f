#!/usr/bin/env bash
# GPU run 88 (session 16): gpu-check on the generator with the 64-head CTA of computed
# K and V fragments under sm_120's limits (-head-block 64 -k-frags -tile 32 -stages 1:
# one stage, 32-candidate tiles, 101,120 bytes; each record read once a row, where the
# sm_120 plan's 16-head families read it four times), its cases, sanitizer rows and
# sm_120 assemblies included; then the sm_120 plan against it at 64 heads, and -k-perm
# against the default. Writes into $OUT as it goes. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
O=${OUT:-/tmp/run88}; mkdir -p "$O"
t0=$(date +%s)
S="$O/summary.txt"
OUT=/tmp/gc timeout 300 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$? after $(( $(date +%s) - t0 )) s" | tee "$S"
grep -E "passed\)|^gpu-check" /tmp/gc.txt | tail -4 | tee -a "$S"
grep -E "FAIL" /tmp/gc/summary.md | head -10 | tee -a "$S"
grep -cE "^\| (memcheck|racecheck|synccheck)" /tmp/gc/summary.md | tee -a "$S"
grep -E "64-head CTA, computed|hb64_kfrags|kperm" /tmp/gc/summary.md | cut -c1-220 | tee -a "$S"
cp /tmp/gc/summary.md "$O/gc-summary.md"; tar czf "$O/gc.tgz" -C /tmp gc gc.txt 2>/dev/null
G=build/ptxgen-gpu
K64="-head-block 64 -k-frags -tile 32 -stages 1"
B="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -bf16p=false -gather=false -iters 20"
SH=H64_T8_K128+512,H64_T32_K128+512,H64_T64_K128+512,H64_T128_K128+512,H64_T256_K128+512
SP=H16_T256_K128+512,H64_T256_K128+512,H16_T256_K128+1152
for r in 1 2; do
  [ $(( $(date +%s) - t0 )) -lt 450 ] || break
  timeout 60 $G bench $B -shapes $SH > "$O/default_$r.txt" 2>&1
  timeout 60 $G bench $B $K64 -shapes $SH > "$O/k64_$r.txt" 2>&1
  [ $(( $(date +%s) - t0 )) -lt 500 ] || break
  timeout 40 $G bench $B -shapes $SP > "$O/pdefault_$r.txt" 2>&1
  timeout 40 $G bench $B -k-perm -shapes $SP > "$O/kperm_$r.txt" 2>&1
  for f in default k64 pdefault kperm; do
    [ -e "$O/${f}_$r.txt" ] && { echo "-- $f $r"; grep -E "us \(min|FAIL|rror" "$O/${f}_$r.txt" | sed 's/, ok true//' | cut -c1-170; } | tee -a "$S"
  done
done
echo "total $(( $(date +%s) - t0 )) s" | tee -a "$S"
