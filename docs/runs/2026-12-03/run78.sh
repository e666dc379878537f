#!/usr/bin/env bash
# GPU run 78 (session 14): scripts/bench.sh on both pools with the generator of b070a2e
# (session 13's final; the session's later commits are structural, PTX byte-identical by
# scripts/same-ptx.sh): ptxgen exact, bf16p, the sm_120 plan at sm_120's residency, the
# gather ceiling, the DRAM floor and FlashMLA in one run (issue 30's report). Carry build/
# and .anchors/.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin
# (As run, bench.sh wrote into the device's $OUT itself, since it reads OUT: prefix the next
# run with OUT=build/bench so that only the tarball below fills the 8 files that come back.)
POOLS="serving sparse" NO_TRITON=1 FLASHMLA_TIMEOUT=150 BENCH_ARGS="-bw 4.3e12 -flops 636e12" timeout 560 bash scripts/bench.sh > /tmp/bench.log 2>&1; echo "bench.sh rc=$?"
cp /tmp/bench.log $OUT/bench.log
grep "^== " /tmp/bench.log
mkdir -p $OUT/r && cp build/bench/bench.json build/bench/bench.md build/bench/bench.txt build/bench/bench-sparse.json build/bench/bench-sparse.md build/bench/bench-sparse.txt build/bench/flashmla*.json build/bench/bars*.svg build/bench/roofline*.svg $OUT/r/ 2>/dev/null; ls $OUT/r; tar czf $OUT/r.tgz -C $OUT r && rm -r $OUT/r
