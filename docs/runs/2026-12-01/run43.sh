#!/usr/bin/env bash
# GPU run 43 (session 6): scripts/bench.sh on the serving pool with the final
# generator of this session (P·V 2x4 grouped: branch pv-grid, merged): ptxgen exact,
# bf16p, the sm_120 plan, the gather ceiling and FlashMLA in one run (docs/perf.md,
# docs/bench-h200.json). Then the 64-head CTA with a producer role at the register
# count the lowering now gives 10 warps (168): check -gpu and one timing.
# Carry build/ptxgen-gpu and .anchors.
set -uo pipefail
POOLS="serving" NO_TRITON=1 FLASHMLA_TIMEOUT=150 BENCH_ARGS="-bw 4.3e12 -flops 636e12" timeout 400 bash scripts/bench.sh > /tmp/bench.log 2>&1; echo "bench.sh rc=$?"
cp /tmp/bench.log $OUT/bench.log
grep "^== " /tmp/bench.log
tail -27 build/bench/bench.txt | cut -c1-60,140-250
mkdir -p $OUT/r && cp build/bench/bench.json build/bench/bench.md build/bench/bench.txt build/bench/flashmla*.json build/bench/bars*.svg $OUT/r/ 2>/dev/null; ls $OUT/r
echo "== check -gpu -heads 64 -tokens 256 -producer-warps 2 -tile 32"
timeout 60 build/ptxgen-gpu check -gpu -target sm_90 -heads 64 -tokens 256 -producer-warps 2 -tile 32 2>&1 | grep -E "^(out|lse): |PASS|FAIL|rror" | head -4
timeout 60 build/ptxgen-gpu bench -shapes H64_T256_K128+512 -flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -sm120-plan=false -bf16p=false -iters 30 -tile 32 -producer-warps 2 2>&1 | grep " us (min"
