#!/usr/bin/env bash
# GPU run 50 (session 7): scripts/bench.sh on both pools with the final generator of
# this session (the score role planned in 8-warp 64-head CTAs): ptxgen exact, bf16p,
# the sm_120 plan, the gather ceiling and FlashMLA in one run (docs/perf.md,
# docs/bench-h200.json, bars and roofline). Carry build/ptxgen-gpu and .anchors.
set -uo pipefail
POOLS="serving sparse" NO_TRITON=1 FLASHMLA_TIMEOUT=150 BENCH_ARGS="-bw 4.3e12 -flops 636e12" timeout 500 bash scripts/bench.sh > /tmp/bench.log 2>&1; echo "bench.sh rc=$?"
cp /tmp/bench.log $OUT/bench.log
grep "^== " /tmp/bench.log
for f in bench.txt bench-sparse.txt; do tail -27 build/bench/$f | cut -c1-60,140-250; done
mkdir -p $OUT/r && cp build/bench/bench.json build/bench/bench.md build/bench/bench.txt build/bench/bench-sparse.json build/bench/bench-sparse.md build/bench/bench-sparse.txt build/bench/flashmla*.json build/bench/bars*.svg $OUT/r/ 2>/dev/null; ls $OUT/r; tar czf $OUT/r.tgz -C $OUT r && rm -r $OUT/r
