#!/usr/bin/env bash
# Benchmark mla_decode on the GPU machine (carry build/ from `make gpu-bin`):
# ptxgen-gpu bench over the shape list, then the 32-heads-per-CTA variant
# of the H=64 shapes under the same ceilings. Results go to $OUT (or build/bench).
set -uo pipefail
OUT=${OUT:-build/bench}
mkdir -p "$OUT"
B=${BIN:-build/ptxgen-gpu}
$B info
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv || true
$B bench -json "$OUT/bench.json" -svg "$OUT/roofline.svg" ${TRITON:+-triton "$TRITON"} 2>&1 | tee "$OUT/bench.txt"
if [ -f "$OUT/bench.json" ]; then
	BW=$(python3 -c "import json;print(json.load(open('$OUT/bench.json'))['ceilings']['bytes_per_sec'])")
	FL=$(python3 -c "import json;print(json.load(open('$OUT/bench.json'))['ceilings']['flops_per_sec'])")
	$B bench -shapes H64_T1_K128+512,H64_T8_K128+512,H64_T64_K128+512,H64_T256_K128+512 -head-block 32 \
		-bw "$BW" -flops "$FL" -json "$OUT/bench_hb32.json" 2>&1 | tee "$OUT/bench_hb32.txt"
fi
