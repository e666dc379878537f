#!/usr/bin/env bash
# GPU run 83 (session 14, the device time's remainder): the final generator (run 82's,
# with the 16-head CTA's computed fragments back to opt-in): CUDA 13 ptxas for sm_120 on
# its sm_120 plan's 16-head kernels (the tile path with held Q's bytes freed, 80 KB),
# and check -gpu of that kernel under sm_120's limits. Carry build/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin
t0=$(date +%s)
for a in "-tokens 256 -heads 16" "-tokens 64 -heads 16" "-tokens 64 -heads 64"; do
  n=$(echo $a | tr -d ' -'); build/ptxgen-gpu dump -kernel mla_decode -target sm_120 $a -o /tmp/$n.ptx
  ptxas -arch=sm_120 -v /tmp/$n.ptx -o /tmp/$n.cubin 2>&1 | grep -E "mla_decode_h16\b|Used|spill" | paste - - - | sed 's/ptxas info    ://g' | cut -c1-200 | head -4
done
timeout 60 build/ptxgen-gpu check -gpu -kernel mla_decode -heads 16 -tokens 256 -plan-target sm_120 2>&1 | tail -2
echo "total $(( $(date +%s) - t0 )) s"
