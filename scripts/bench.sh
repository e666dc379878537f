#!/usr/bin/env bash
# Benchmark mla_decode on the GPU machine against its gather ceiling, FlashMLA and the Triton
# baseline, in one run, on the same inputs, for each pool in POOLS (default "serving sparse":
# docs/bench-h200.json is the serving run's bench.json, docs/bench-h200-sparse.json the sparse
# run's bench-sparse.json). Carry build/ (from `make gpu-bin`) and .anchors/ (a copy of
# ../shared/anchors/flashmla: `mkdir -p .anchors && cp -r ../shared/anchors/flashmla
# .anchors/`; git-ignored, never committed). Steps:
#   1. build FlashMLA from .anchors/flashmla (build.sh, ~1 min on 16 cores), in the
#      background while step 2 runs;
#   then for each pool:
#   2. write every shape's inputs and float64 outputs as test-vector folders under $VEC/POOL
#      (serving: each row gathers from pages of its own in >= 3x L2 of cache per shape;
#      sparse: each row's candidates are a random subset of a sequence of pages of its own);
#   3. time FlashMLA on them (.anchors/flashmla/vs.py --json), once its build is done (no
#      compiler competes with the timed runs);
#   4. time the Triton baseline on them (bench/triton_seed.py), time-boxed;
#   5. time ptxgen's kernels on the same folders (-vectors-in: no second generation), its
#      default plan, the sm_120 plan, the same kernel with -precision bf16p (P as one bf16
#      term, as FlashMLA) and the gather ceiling (mla_gather: the same records
#      through the same indices, summed), and print the merged report: bench.txt, bench.json,
#      bench.md, roofline.svg, bars.svg (the serving pool's), bench-POOL.* etc. (the others').
# Results go to $OUT (or build/bench). Knobs: SHAPES (comma-separated names from
# `ptxgen-gpu bench -list`, default all), POOLS (serving, sparse and/or small, space-separated;
# POOL is read as POOLS when set), NO_TRITON=1,
# TRITON_TIMEOUT (s, 150), TRITON_ARGS (default "--block-n 64 --num-warps 8": the fastest of
# the four configurations at 12 of the 14 shapes of the v6 run, within 9% at the other two;
# one configuration keeps Triton inside the time box), NO_FLASHMLA=1, FLASHMLA_DIR (.anchors/flashmla), FLASHMLA_ROOT
# (/tmp/flashmla), FLASHMLA_TIMEOUT (s, 240), BIN (build/ptxgen-gpu), VEC (vector folders),
# BENCH_ARGS (more ptxgen-gpu bench flags, e.g. -iters 1 -warmup 0 -bw 4.3e12 -flops 636e12).
#
# Rehearse without a GPU: go build -tags ptxgen_fakegpu -o /tmp/fake ./cmd/ptxgen-gpu, then
# BIN=/tmp/fake SHAPES=H8_T1_K128+512 NO_TRITON=1 OUT=/tmp/bench \
#   BENCH_ARGS="-iters 1 -warmup 0 -bw 4.3e12 -flops 636e12" bash scripts/bench.sh
# (the emulator stands in for the GPU; FlashMLA's build then fails without nvcc and torch,
# and the report says so in its FlashMLA column).
set -uo pipefail
OUT=${OUT:-build/bench}
VEC=${VEC:-/tmp/ptxgen-bench-vectors}
B=${BIN:-build/ptxgen-gpu}
SHAPES=${SHAPES:-all}
POOLS=${POOLS:-${POOL:-serving sparse}}
ANCHOR=${FLASHMLA_DIR:-.anchors/flashmla}
export FLASHMLA_ROOT=${FLASHMLA_ROOT:-/tmp/flashmla}
START=$(date +%s)
step() { echo "== $* ($(($(date +%s) - START)) s)"; }
mkdir -p "$OUT"
rm -f "$OUT"/triton*.json "$OUT"/flashmla*.json # never merge a previous run's
$B info || exit 1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv || true

BUILD_PID=""
if [ -z "${NO_FLASHMLA:-}" ]; then
	if [ -f "$ANCHOR/build.sh" ]; then
		step "building FlashMLA in the background (log: $OUT/flashmla_build.txt)"
		(OUT="$OUT" bash "$ANCHOR/build.sh" >"$OUT/flashmla_build.txt" 2>&1; echo $? >"$OUT/flashmla_build.rc") &
		BUILD_PID=$!
	else
		echo "no $ANCHOR/build.sh: FlashMLA skipped (copy ../shared/anchors/flashmla to .anchors/ and carry it)"
	fi
fi

# Every pool's folders are written while FlashMLA builds.
for POOL in $POOLS; do
	SUF=""; [ "$POOL" = serving ] || SUF="-$POOL" # the serving run keeps the historical names
	V="$VEC/$POOL"
	step "$POOL pool: writing the test-vector folders"
	rm -rf "$V"
	$B bench -shapes "$SHAPES" -pool "$POOL" -vectors-out "$V" >"$OUT/vectors$SUF.txt" 2>&1 || { cat "$OUT/vectors$SUF.txt"; exit 1; }
	du -sh "$V" 2>/dev/null || true
done

FLASHMLA_OK=""
if [ -n "$BUILD_PID" ]; then
	wait "$BUILD_PID"
	step "FlashMLA build exit $(cat "$OUT/flashmla_build.rc" 2>/dev/null || echo '?')"
	tail -4 "$OUT/flashmla_build.txt"
	[ "$(cat "$OUT/flashmla_build.rc" 2>/dev/null)" = 0 ] && FLASHMLA_OK=1
fi

# A baseline's JSON joins the report only if it parses (a timeout may cut a write short);
# ptxgen-gpu bench reads both before timing and stops on a bad one.
usable() { [ -s "$1" ] && python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "$1" 2>/dev/null; }
RC=0
for POOL in $POOLS; do
	SUF=""; [ "$POOL" = serving ] || SUF="-$POOL" # the serving run keeps the historical names
	V="$VEC/$POOL"
	if [ -n "$FLASHMLA_OK" ]; then
		step "$POOL pool: FlashMLA (at most ${FLASHMLA_TIMEOUT:-240} s)"
		timeout "${FLASHMLA_TIMEOUT:-240}" python3 "$ANCHOR/vs.py" "$V" --json "$OUT/flashmla$SUF.json" \
			--flashmla-root "$FLASHMLA_ROOT" >"$OUT/flashmla$SUF.txt" 2>&1
		echo "vs.py exit $? (1: a folder failed to run or check; 124: timed out)"; tail -30 "$OUT/flashmla$SUF.txt"
	fi

	if [ -z "${NO_TRITON:-}" ]; then
		step "$POOL pool: Triton baseline (at most ${TRITON_TIMEOUT:-150} s)"
		# Its JSON is rewritten after every folder, so a timeout keeps the folders it finished.
		timeout "${TRITON_TIMEOUT:-150}" python3 bench/triton_seed.py "$V"/* --json "$OUT/triton$SUF.json" \
			--iters 30 --warmup 3 --flush-mb 1024 ${TRITON_ARGS:---block-n 64 --num-warps 8} >"$OUT/triton$SUF.txt" 2>&1
		echo "triton_seed.py exit $? (124: timed out)"; tail -5 "$OUT/triton$SUF.txt"
	fi

	T=""; usable "$OUT/triton$SUF.json" && T="-triton $OUT/triton$SUF.json"
	F=""; usable "$OUT/flashmla$SUF.json" && F="-flashmla $OUT/flashmla$SUF.json"
	echo "merging: ${T:-no Triton} ${F:-no FlashMLA}"
	step "$POOL pool: ptxgen and its gather ceiling"
	# A 1 GB flush keeps the GPU busy (~300 us) while the host queues the timed
	# launches, so host latency cannot leak into the timed region.
	$B bench -shapes "$SHAPES" -pool "$POOL" -vectors-in "$V" -flush-mb 1024 -json "$OUT/bench$SUF.json" -svg "$OUT/roofline$SUF.svg" \
		-bars-svg "$OUT/bars$SUF.svg" -md "$OUT/bench$SUF.md" $T $F ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench$SUF.txt"
	R=${PIPESTATUS[0]}
	step "$POOL pool: ptxgen-gpu bench exit $R"
	[ "$R" = 0 ] || RC=$R
done
step "done, exit $RC"
exit "$RC"
