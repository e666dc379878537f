#!/usr/bin/env bash
# GPU run 32: scripts/bench.sh on the sparse pool, every shape, session 4's final
# generator: ptxgen exact, bf16p, the sm_120 plan, the gather ceiling and FlashMLA in one
# run on the same folders (docs/bench-h200-sparse.json). Carry build and .anchors.
set -uo pipefail
OUT=$OUT/sparse POOLS=sparse NO_TRITON=1 FLASHMLA_TIMEOUT=200 BENCH_ARGS="-bw 4.3e12 -flops 636e12" timeout 550 bash scripts/bench.sh > /tmp/bench-sparse.log 2>&1; echo "bench.sh rc=$?"
cp /tmp/bench-sparse.log $OUT/sparse/sparse.log
grep "^== " $OUT/sparse/sparse.log
tail -32 $OUT/sparse/bench-sparse.txt | cut -c1-250
