#!/usr/bin/env bash
# GPU run 31: scripts/bench.sh on the serving pool, every shape, session 4's final
# generator: ptxgen exact, bf16p, the sm_120 plan, the gather ceiling and FlashMLA in one
# run on the same folders (docs/bench-h200.json). Carry build and .anchors.
set -uo pipefail
OUT=$OUT/serving POOLS=serving NO_TRITON=1 FLASHMLA_TIMEOUT=200 BENCH_ARGS="-bw 4.3e12 -flops 636e12" timeout 550 bash scripts/bench.sh > /tmp/bench-serving.log 2>&1; echo "bench.sh rc=$?"
cp /tmp/bench-serving.log $OUT/serving/serving.log
grep "^== " $OUT/serving/serving.log
tail -32 $OUT/serving/bench.txt | cut -c1-250
