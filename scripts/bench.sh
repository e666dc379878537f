#!/usr/bin/env bash
# Benchmark mla_decode on the GPU machine (carry build/ from `make gpu-bin`): write the
# shapes' inputs as test-vector folders, time the Triton baseline on them
# (bench/triton_seed.py), then time ptxgen's kernels and print the merged report.
# Results go to $OUT (or build/bench).
set -uo pipefail
OUT=${OUT:-build/bench}
VEC=${VEC:-/tmp/ptxgen-bench-vectors}
mkdir -p "$OUT"
B=${BIN:-build/ptxgen-gpu}
$B info
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv || true
$B bench -vectors-out "$VEC" > "$OUT/vectors.txt" 2>&1 || { cat "$OUT/vectors.txt"; exit 1; }
if [ -z "${NO_TRITON:-}" ]; then
	timeout "${TRITON_TIMEOUT:-300}" python3 bench/triton_seed.py "$VEC"/*_K* --json "$OUT/triton.json" \
		--iters 30 --warmup 3 --flush-mb 1024 > "$OUT/triton.txt" 2>&1
	echo "triton_seed.py exit $?"; tail -20 "$OUT/triton.txt"
fi
T=""; [ -s "$OUT/triton.json" ] && T="-triton $OUT/triton.json"
# A 1 GB flush keeps the GPU busy (~300 us) while the host queues the timed
# launches, so host latency cannot leak into the timed region.
$B bench -flush-mb 1024 -json "$OUT/bench.json" -svg "$OUT/roofline.svg" $T 2>&1 | tee "$OUT/bench.txt"
