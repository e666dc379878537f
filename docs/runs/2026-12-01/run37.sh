#!/usr/bin/env bash
# GPU run 37 (session 5): the final generator (only the copied tiles swizzled: q and the
# rope) against main before the swizzle (base = 40e57ec), 3 alternating rounds.
# Carry build/ptxgen-gpu-{base,final}.
set -uo pipefail
BINS="base final" ROUNDS=3 SHAPES=H64_T256_K128+512,H64_T64_K128+512,H64_T64_K128+2048,H128_T256_K128+512,H128_T64_K128+512,H16_T64_K128+1024,H16_T256_K128+512 timeout 500 bash scripts/ab.sh
