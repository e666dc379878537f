#!/usr/bin/env bash
# gpu-check.sh: the whole GPU check, for a GPU machine without Go.
#
# Build here first (`make gpu-bin`: build/ptxgen-gpu and build/runtime.test, against CUDA
# 11.8 headers), carry build/ to the GPU machine and run, from the repository root:
#
#   bash scripts/gpu-check.sh            # or: make gpu-check
#
# It runs
#   1. build/runtime.test (the runtime's GPU tests), and build/lower.test -test.run GPU
#      (kernels written as users write them, and the math ops' errors, on the GPU against
#      float64 and the emulator), and build/rmsnorm (examples/rmsnorm: a downstream
#      module's kernel from its IR text form, through its generated launcher, against
#      float64);
#   2. the gemm and mla_decode shape matrices with `ptxgen-gpu check -gpu`, compiled for the
#      GPU's own target (sm_90 on an H200): GPU against the float64 reference, the emulator
#      against it, and GPU against emulator (bound: check.GPUEmuRel and friends);
#   3. CUDA 13 `ptxas -arch=sm_120 -v` on every kernels/testdata/*_sm_120.ptx golden and on
#      sm_120 dumps of the mla_decode configurations (zero warnings, zero spills required);
#   4. compute-sanitizer memcheck, racecheck and synccheck on the default gemm, the
#      default mla_decode and its 64-head CTA (zero errors required);
# and prints a summary table. Everything goes to $OUT (the device tool's result folder) or,
# when OUT is unset, build/gpu-check/: gpu-check.log (everything), summary.md (the
# tables), cases.log, sanitizer.log, ptxas.log, runtime-test.log.
#
# Environment: BIN (default build/ptxgen-gpu), RUNTIME_TEST (build/runtime.test),
# LOWER_TEST (build/lower.test), RMSNORM (build/rmsnorm), PTXAS,
# SANITIZER, CUOBJDUMP (default: found on PATH or under /usr/local/cuda), JOBS (parallel
# cases, default 8), QUICK=1 (a few cases only, for rehearsals), CASES=REGEX (only the
# matrix cases whose label matches, e.g. CASES='large pool' for the pools past 4 GiB),
# POOL_GIB (the large pools' GiB per segment, default 4.5; 0.01 for a fake-GPU rehearsal).
# Rehearse without a GPU (the emulator stands in for an sm_90 GPU; stub ptxas and
# compute-sanitizer with small scripts that print their summary lines):
#   go build -tags ptxgen_fakegpu -o /tmp/fake ./cmd/ptxgen-gpu
#   BIN=/tmp/fake RUNTIME_TEST=none PTXAS=... SANITIZER=... QUICK=1 bash scripts/gpu-check.sh
# Exit status: 0 when everything passed, 1 otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$PWD

BIN=${BIN:-$root/build/ptxgen-gpu}
RUNTIME_TEST=${RUNTIME_TEST:-$root/build/runtime.test}
LOWER_TEST=${LOWER_TEST:-$root/build/lower.test}
RMSNORM=${RMSNORM:-$root/build/rmsnorm}
RESULTS=${OUT:-$root/build/gpu-check}
JOBS=${JOBS:-8}
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
PTXAS=${PTXAS:-$(command -v ptxas || true)}
SANITIZER=${SANITIZER:-$(command -v compute-sanitizer || true)}
CUOBJDUMP=${CUOBJDUMP:-$(command -v cuobjdump || true)}

mkdir -p "$RESULTS"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
log=$RESULTS/gpu-check.log
summary=$RESULTS/summary.md
: >"$log"
: >"$summary"
say() { echo "$@" | tee -a "$log"; }
fail=0

say "# gpu-check $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
say "command: bash scripts/gpu-check.sh${QUICK:+ (QUICK=$QUICK)}${CASES:+ (CASES=$CASES)}${POOL_GIB:+ (POOL_GIB=$POOL_GIB)}"
if command -v nvidia-smi >/dev/null; then
	say "gpu: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -1)"
	say "cuda (driver): $(nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -1)"
fi
[ -n "$PTXAS" ] && say "ptxas: $("$PTXAS" --version 2>&1 | tail -1)"
[ -n "$SANITIZER" ] && say "compute-sanitizer: $("$SANITIZER" --version 2>&1 | grep -i version | head -1)"
if [ ! -x "$BIN" ]; then
	say "missing $BIN: run make gpu-bin here and carry build/"
	exit 1
fi
"$BIN" info 2>&1 | tee -a "$log"

# ---------------------------------------------------------------- 1. runtime tests
rt=skipped
if [ -x "$RUNTIME_TEST" ]; then
	say ""
	say "## runtime.test"
	(cd runtime && timeout 180 "$RUNTIME_TEST" -test.v -test.count=1) >"$RESULTS/runtime-test.log" 2>&1
	rc=$?
	grep -E '^(--- |ok|PASS|FAIL)' "$RESULTS/runtime-test.log" | tee -a "$log"
	if [ $rc = 0 ]; then rt="ok ($(grep -c '^--- PASS' "$RESULTS/runtime-test.log") passed, $(grep -c '^--- SKIP' "$RESULTS/runtime-test.log") skipped)"; else rt="FAIL (exit $rc)"; fail=1; fi
fi

lt=skipped
if [ -x "$LOWER_TEST" ]; then
	say ""
	say "## lower.test -test.run GPU"
	(cd lower && timeout 300 "$LOWER_TEST" -test.run GPU -test.v -test.count=1) >"$RESULTS/lower-test.log" 2>&1
	rc=$?
	grep -E '^(--- |ok|PASS|FAIL)|worst error' "$RESULTS/lower-test.log" | tee -a "$log"
	if [ $rc = 0 ]; then lt="ok ($(grep -c -- '--- PASS' "$RESULTS/lower-test.log") passed)"; else lt="FAIL (exit $rc)"; fail=1; fi
fi

ex=skipped
if [ -x "$RMSNORM" ]; then
	say ""
	say "## examples/rmsnorm (a downstream module's own kernel, from its IR text form)"
	timeout 120 "$RMSNORM" >"$RESULTS/rmsnorm.log" 2>&1
	rc=$?
	tee -a "$log" <"$RESULTS/rmsnorm.log"
	if [ $rc = 0 ]; then ex="ok ($(grep -c 'PASS' "$RESULTS/rmsnorm.log") batches passed)"; else ex="FAIL (exit $rc)"; fail=1; fi
fi

# ---------------------------------------------------------------- 2. shape matrix
# One case per line: label<TAB>flags.
cases=$work/cases.tsv
add() { printf '%s\t%s\n' "$1" "$2" >>"$cases"; }
G="-kernel gemm"
M="-kernel mla_decode"
for shape in "1 1 1" "17 9 33" "100 72 448" "128 128 512" "7 448 100"; do
	set -- $shape
	for out in bf16 f32; do
		add "gemm ${1}x${2}x${3} $out" "$G -m $1 -n $2 -k $3 -out $out"
	done
done
add "mla default (T1 H64 K128+512 B64 fp8ds sink)" "$M"
add "mla default split=1" "$M -split 1"
for h in 1 8 16 24 128; do add "mla H=$h" "$M -heads $h"; done
add "mla H=16 split=1" "$M -heads 16 -split 1"
add "mla head-block 32" "$M -head-block 32"
add "mla H=24 head-block 32 split=1" "$M -heads 24 -head-block 32 -split 1"
add "mla K=1 (one segment)" "$M -k0 1 -k1 0"
add "mla K=63+100" "$M -k0 63 -k1 100"
add "mla K=100+1" "$M -k0 100 -k1 1"
add "mla K=512+1152" "$M -k0 512 -k1 1152"
add "mla K=1152 split=1" "$M -k0 1152 -k1 0 -split 1"
add "mla pages 1+2" "$M -page0 1 -page1 2"
add "mla pages 53+256" "$M -page0 53 -page1 256"
add "mla pages 256+53 K=512+63" "$M -page0 256 -page1 53 -k0 512 -k1 63"
add "mla pages 64+64 K=100+1152 H=24" "$M -heads 24 -k0 100 -k1 1152"
add "mla bf16 cache 512+64" "$M -cache bf16 -nope 512 -rope 64"
add "mla bf16 cache 512+64 split=1 pages 53" "$M -cache bf16 -nope 512 -rope 64 -page0 53 -page1 53 -split 1"
add "mla bf16 cache 200+40" "$M -cache bf16 -nope 200 -rope 40"
add "mla bf16 cache 200+40 H=24 K=100 B=53" "$M -cache bf16 -nope 200 -rope 40 -heads 24 -k0 100 -k1 0 -page0 53"
add "mla T=3" "$M -tokens 3"
add "mla T=3 H=128 K=1152+1152" "$M -tokens 3 -heads 128 -k0 1152 -k1 1152"
add "mla T=64" "$M -tokens 64"
# The 16-head CTA's large kernels (Q held in registers) and the heads-in-N family (H <= 8,
# from the rows that fill the SMs, or 64 on sm_120), which calls of one row never run.
add "mla H=16 T=64 (Q held)" "$M -heads 16 -tokens 64"
add "mla H=16 T=64 split=1 -hold-q=false" "$M -heads 16 -tokens 64 -split 1 -hold-q=false"
add "mla H=8 T=64 (heads in N)" "$M -heads 8 -tokens 64 -head-block 8"
add "mla H=8 T=192 (heads in N, split 2 of rows that fill the SMs)" "$M -heads 8 -tokens 192"
add "mla H=8 T=64 sm_120 plan (heads in N)" "$M -heads 8 -tokens 64 -plan-target sm_120"
add "mla H=8 T=256 sm_120 plan (heads in N)" "$M -heads 8 -tokens 256 -plan-target sm_120"
add "mla H=8 T=64 sm_120 plan (heads in N, -k-frags=false)" "$M -heads 8 -tokens 64 -plan-target sm_120 -k-frags=false"
add "mla H=5 T=64 K=63+100 split=1 (heads in N)" "$M -heads 5 -tokens 64 -k0 63 -k1 100 -split 1 -head-block 8"
add "mla H=8 T=64 bf16 cache 512+64 (heads in N)" "$M -heads 8 -tokens 64 -cache bf16 -nope 512 -rope 64 -head-block 8"
# The heads-in-N family computes its K and Vᵀ fragments from the raw ring by default where
# that adds a CTA per SM (-k-frags auto: sm_90, and sm_120 at one stage); -k-frags=false
# keeps the bf16 K tile.
add "mla H=8 T=64 (heads in N, -k-frags=false)" "$M -heads 8 -tokens 64 -head-block 8 -k-frags=false"
add "mla H=5 T=64 K=63+100 split=1 (heads in N, -k-frags=false)" "$M -heads 5 -tokens 64 -k0 63 -k1 100 -split 1 -head-block 8 -k-frags=false"
# -k-frags (opt-in for the 16-head CTA): its Kᵀ and V fragments (b computed), split-K and replicated scores.
add "mla H=16 T=64 (-k-frags)" "$M -heads 16 -tokens 64 -k-frags"
add "mla H=16 T=1 (-k-frags; its Small kernel keeps the bf16 tile)" "$M -heads 16 -tokens 1 -k-frags"
add "mla H=13 T=64 K=100+53 page 53 split=1 (-k-frags)" "$M -heads 13 -tokens 64 -k0 100 -k1 53 -page1 53 -split 1 -k-frags"
add "mla H=16 T=64 sm_120 plan (-k-frags)" "$M -heads 16 -tokens 64 -plan-target sm_120 -k-frags"
# The 16-head CTA's loop takes held Q's bytes: under sm_120's limits 80 KB with the
# bf16 tile, 33 KB and 2 CTAs per SM with computed fragments, which the plan takes
# (mla_decode_h16_kf) for the calls whose rows fill the SMs.
add "mla H=16 T=256 sm_120 plan (-k-frags: 2 CTAs per SM)" "$M -heads 16 -tokens 256 -plan-target sm_120 -k-frags"
add "mla H=16 T=256 sm_120 plan (rows fill the SMs: h16_kf)" "$M -heads 16 -tokens 256 -plan-target sm_120"
add "mla H=16 T=256 sm_120 plan (-k-frags=false: the bf16 tile)" "$M -heads 16 -tokens 256 -plan-target sm_120 -k-frags=false"
add "mla H=64 T=64 sm_120 plan (rows fill the SMs: h16_kf)" "$M -heads 64 -tokens 64 -plan-target sm_120"
add "mla H=24 T=64 K=100+53 page 53 sm_120 plan for 100 SMs (h16_kf, padded heads)" "$M -heads 24 -tokens 64 -k0 100 -k1 53 -page1 53 -plan-target sm_120 -sms 100"
# h16_kf reads its computed pairs in kperm order (the default since run 88); -k-perm=false pair by pair.
add "mla H=16 T=256 sm_120 plan -k-perm=false (h16_kf read pair by pair)" "$M -heads 16 -tokens 256 -plan-target sm_120 -k-perm=false"
# The 64-head CTA under sm_120's 99 KB (session 16): K and V fragments computed from
# the raw ring, one stage, 32-candidate tiles (101,120 bytes): each record read once a row.
K64="-head-block 64 -k-frags -tile 32 -stages 1"
add "mla H=64 T=256 sm_120 plan $K64 (64-head CTA, computed fragments)" "$M -heads 64 -tokens 256 -plan-target sm_120 $K64"
add "mla H=64 T=64 sm_120 plan $K64 (split)" "$M -heads 64 -tokens 64 -plan-target sm_120 $K64"
add "mla H=72 T=3 K=100+300 page 53 sm_120 plan $K64 (padded heads, split)" "$M -heads 72 -tokens 3 -k0 100 -k1 300 -page1 53 -plan-target sm_120 $K64"
add "mla H=64 T=8 sm_120 plan $K64 out-of-pool" "$M -heads 64 -tokens 8 -plan-target sm_120 $K64 -out-of-pool"
# -score-rows 2 (experimental, session 16): its scores in 2x4, each pair converted twice a tile.
add "mla H=64 T=256 sm_120 plan -score-rows 2 (h64_kf, 2x4 scores)" "$M -heads 64 -tokens 256 -plan-target sm_120 -score-rows 2"
add "mla H=64 T=64 sm_120 plan $K64 -score-rows 2 (split)" "$M -heads 64 -tokens 64 -plan-target sm_120 $K64 -score-rows 2"
add "mla H=16 T=64 sm_120 plan (split kernel: 7 tiles a CTA, no Small)" "$M -heads 16 -tokens 64 -plan-target sm_120"
add "mla H=64 T=8 sm_120 plan (split kernel, no Small)" "$M -heads 64 -tokens 8 -plan-target sm_120"
# One kernel generated for a capacity of 8 rows, called with fewer: the rows at run time.
for r in 1 3 8; do add "mla capacity 8 rows $r" "$M -max-tokens 8 -tokens $r"; done
add "mla capacity 8 rows 3 split=1" "$M -max-tokens 8 -tokens 3 -split 1"
add "mla no sink, no len" "$M -sink=false -len0=false -len1=false"
add "mla seed 7, invalid 0.5" "$M -seed 7 -invalid 0.5"
# Indices slots, slots+1 and INT_MAX inside every row's valid prefix: invalid like -1.
add "mla out-of-pool" "$M -out-of-pool"
add "mla out-of-pool split=1" "$M -out-of-pool -split 1"
add "mla out-of-pool bf16 cache 512+64" "$M -out-of-pool -cache bf16 -nope 512 -rope 64"
add "mla out-of-pool K=2100 split=1 (per-tile index loads)" "$M -out-of-pool -heads 16 -k0 2100 -k1 0 -split 1"
# Past the 2048 indices a CTA preloads, each tile's indices are an index tile issued a
# tile ahead of its gathers (ahead 1), in the 16-head, heads-in-N and 64-head CTAs.
add "mla H=16 T=64 K=128+4096 split=1 (index tiles ahead)" "$M -heads 16 -tokens 64 -k1 4096 -split 1"
add "mla H=8 T=64 K=128+4096 split=1 (heads in N, index tiles ahead)" "$M -heads 8 -tokens 64 -k1 4096 -split 1 -head-block 8"
add "mla H=64 T=16 K=128+4096 split=1 (64-head CTA, index tiles ahead)" "$M -heads 64 -tokens 16 -k1 4096 -split 1 -head-block 64"
add "mla H=16 T=64 K=128+4096 split=1 (index tiles in their iteration: -ahead 0)" "$M -heads 16 -tokens 64 -k1 4096 -split 1 -ahead 0"
# A loop of one stage issues its own gathers' index tiles a tile ahead (ahead 1).
add "mla H=16 T=64 K=128+4096 split=1 -stages 1 (index tiles ahead of a one-stage loop)" "$M -heads 16 -tokens 64 -k1 4096 -split 1 -stages 1"
add "mla H=16 T=64 K=128+4096 sm_120 plan for 64 SMs (h16_kf, one stage, index tiles ahead)" "$M -heads 16 -tokens 64 -k1 4096 -plan-target sm_120 -sms 64"
# Pools of POOL_GIB GiB per segment, candidates in their last pages: every record read
# lies past 2^32 bytes. GPU against the reference only (no emulator run).
P="-pool-gib ${POOL_GIB:-4.5}"
add "mla large pool fp8ds" "$M $P"
add "mla large pool fp8ds split=1 out-of-pool" "$M $P -split 1 -out-of-pool"
add "mla large pool bf16 512+64" "$M $P -cache bf16 -nope 512 -rope 64 -out-of-pool"
add "mla large pool bf16 512+64 split=1" "$M $P -cache bf16 -nope 512 -rope 64 -split 1"
for v in golden/testdata/vectors/mla_decode/*/; do
	v=${v%/}
	add "vectors $(basename "$v")" "$M -vectors $v"
	add "vectors $(basename "$v") split=1" "$M -vectors $v -split 1"
done
if [ -n "${QUICK:-}" ]; then
	awk 'NR==2 || NR==12 || NR==20 || /vectors/ && !/split/ || /out-of-pool\t/ || /large pool fp8ds\t/' "$cases" >"$cases.q" && mv "$cases.q" "$cases"
fi
if [ -n "${CASES:-}" ]; then
	awk -F'\t' -v re="$CASES" '$1 ~ re' "$cases" >"$cases.q" && mv "$cases.q" "$cases"
fi
ncases=$(wc -l <"$cases")
say ""
say "## shape matrix: $ncases cases, $JOBS at a time"
mkdir -p "$work/cases"
runcase() { # index: line of $cases
	local i=$1 label flags start secs rc
	IFS=$'\t' read -r label flags < <(sed -n "${i}p" "$cases")
	start=$(date +%s.%N)
	# shellcheck disable=SC2086
	timeout 240 "$BIN" check -gpu $flags >"$work/cases/$i.out" 2>&1
	rc=$?
	secs=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
	{
		echo "### [$i] $label"
		echo "\$ ptxgen-gpu check -gpu $flags"
		cat "$work/cases/$i.out"
		echo "exit $rc, $secs s"
	} >"$work/cases/$i.log"
	printf '%s\t%s\t%s\n' "$i" "$rc" "$secs" >"$work/cases/$i.rc"
}
export -f runcase
export BIN work cases
seq 1 "$ncases" | xargs -P "$JOBS" -I{} bash -c 'runcase {}' &
matrix_pid=$!

# ---------------------------------------------------------------- 4. sanitizers (beside the matrix)
san_rows=$work/san.rows
: >"$san_rows"
runsan() { # tool label flags
	local tool=$1 label=$2 flags=$3 f rc errs
	f=$work/san-$tool-${label// /_}.log
	# shellcheck disable=SC2086
	timeout 300 "$SANITIZER" --tool "$tool" --error-exitcode 3 --print-limit 20 "$BIN" check -gpu -emu=false $flags >"$f" 2>&1
	rc=$?
	errs=$(grep -Eo '(ERROR SUMMARY|RACECHECK SUMMARY|SYNCCHECK SUMMARY): .*' "$f" | tail -1)
	printf '| %s | %s | %s | %s |\n' "$tool" "$label" "${errs:-no summary line}" "$rc" >"$f.row"
}
if [ -n "$SANITIZER" ]; then
	(
		for tool in memcheck racecheck synccheck; do
			runsan "$tool" "gemm default 128x128x512" "-kernel gemm" &
			runsan "$tool" "mla_decode default" "-kernel mla_decode" &
			# The 64-head CTA: two ring slots, swizzled tiles, the split kernel.
			runsan "$tool" "mla_decode 64-head CTA" "-kernel mla_decode -heads 64 -tokens 8 -head-block 64" &
			# The score role over many tiles (T=64, one split: every CTA loops over all of
			# them) and over the bf16 cache's eleven slices (issue 29's racecheck hazards).
			runsan "$tool" "mla_decode 64-head CTA T=64 split 1" "-kernel mla_decode -heads 64 -tokens 64 -head-block 64 -split 1" &
			runsan "$tool" "mla_decode 64-head CTA bf16 cache" "-kernel mla_decode -heads 64 -tokens 8 -head-block 64 -cache bf16 -nope 512 -rope 64" &
			runsan "$tool" "mla_decode H=16 T=64 (Q held)" "-kernel mla_decode -heads 16 -tokens 64" &
			runsan "$tool" "mla_decode H=8 T=64 (heads in N)" "-kernel mla_decode -heads 8 -tokens 64 -head-block 8" &
			runsan "$tool" "mla_decode H=8 T=64 (heads in N, -k-frags=false)" "-kernel mla_decode -heads 8 -tokens 64 -head-block 8 -k-frags=false" &
			runsan "$tool" "mla_decode H=16 T=64 (-k-frags)" "-kernel mla_decode -heads 16 -tokens 64 -k-frags" &
			runsan "$tool" "mla_decode H=8 T=64 sm_120 plan (heads in N)" "-kernel mla_decode -heads 8 -tokens 64 -plan-target sm_120" &
			runsan "$tool" "mla_decode H=16 T=64 sm_120 plan (split, no Small)" "-kernel mla_decode -heads 16 -tokens 64 -plan-target sm_120" &
			runsan "$tool" "mla_decode H=16 T=64 sm_120 plan (-k-frags)" "-kernel mla_decode -heads 16 -tokens 64 -plan-target sm_120 -k-frags" &
			runsan "$tool" "mla_decode H=16 T=64 sm_120 plan for 64 SMs (rows fill the SMs: h16_kf)" "-kernel mla_decode -heads 16 -tokens 64 -plan-target sm_120 -sms 64" &
			runsan "$tool" "mla_decode H=16 T=8 K=128+4096 split 1 (index tiles ahead)" "-kernel mla_decode -heads 16 -tokens 8 -k1 4096 -split 1" &
			runsan "$tool" "mla_decode H=64 T=4 K=128+4096 split 1 (64-head CTA, index tiles ahead)" "-kernel mla_decode -heads 64 -tokens 4 -k1 4096 -split 1 -head-block 64" &
			runsan "$tool" "mla_decode H=16 T=8 K=128+4096 sm_120 plan for 8 SMs (h16_kf, one stage, index tiles ahead)" "-kernel mla_decode -heads 16 -tokens 8 -k1 4096 -plan-target sm_120 -sms 8" &
			runsan "$tool" "mla_decode H=64 T=8 sm_120 plan -head-block 64 -k-frags -tile 32 -stages 1 (64-head CTA, computed fragments, split)" "-kernel mla_decode -heads 64 -tokens 8 -plan-target sm_120 -head-block 64 -k-frags -tile 32 -stages 1" &
			runsan "$tool" "mla_decode H=64 T=32 split 1 sm_120 plan -head-block 64 -k-frags -tile 32 -stages 1 (64-head CTA, computed fragments, 20 tiles)" "-kernel mla_decode -heads 64 -tokens 32 -split 1 -plan-target sm_120 -head-block 64 -k-frags -tile 32 -stages 1" &
			runsan "$tool" "mla_decode H=64 T=32 split 1 sm_120 plan -head-block 64 -k-frags -tile 32 -stages 1 -score-rows 2 (2x4 scores)" "-kernel mla_decode -heads 64 -tokens 32 -split 1 -plan-target sm_120 -head-block 64 -k-frags -tile 32 -stages 1 -score-rows 2" &
			runsan "$tool" "mla_decode H=16 T=64 sm_120 plan for 64 SMs -k-perm=false (h16_kf read pair by pair)" "-kernel mla_decode -heads 16 -tokens 64 -plan-target sm_120 -sms 64 -k-perm=false" &
		done
		# Out-of-pool indices must never be read: memcheck would report the access.
		runsan memcheck "mla_decode out-of-pool" "-kernel mla_decode -out-of-pool" &
		runsan memcheck "mla_decode out-of-pool bf16 split=1" "-kernel mla_decode -out-of-pool -cache bf16 -nope 512 -rope 64 -split 1" &
		runsan memcheck "mla_decode large pool out-of-pool" "-kernel mla_decode $P -out-of-pool" &
		wait
	) &
	san_pid=$!
fi

# ---------------------------------------------------------------- 3. ptxas sm_120
say ""
say "## ptxas -arch=sm_120 (CUDA 13) on the sm_120 goldens and dumps"
ptxrows=$work/ptxas.rows
: >"$ptxrows"
: >"$RESULTS/ptxas.log"
mkdir -p "$work/ptx"
if [ -n "$PTXAS" ]; then
	"$BIN" dump -kernel mla_decode -target sm_120 -o "$work/ptx/dump_mla_decode_default_sm_120.ptx"
	"$BIN" dump -kernel mla_decode -target sm_120 -split 1 -o "$work/ptx/dump_mla_decode_split1_sm_120.ptx"
	"$BIN" dump -kernel mla_decode -target sm_120 -cache bf16 -nope 512 -rope 64 -o "$work/ptx/dump_mla_decode_bf16_sm_120.ptx"
	"$BIN" dump -kernel mla_decode -target sm_120 -tokens 64 -heads 128 -o "$work/ptx/dump_mla_decode_T64_H128_sm_120.ptx"
	"$BIN" dump -kernel mla_decode -target sm_120 -tokens 64 -heads 16 -o "$work/ptx/dump_mla_decode_T64_H16_sm_120.ptx"
	"$BIN" dump -kernel mla_decode -target sm_120 -tokens 64 -heads 8 -o "$work/ptx/dump_mla_decode_T64_H8_sm_120.ptx"
	"$BIN" dump -kernel mla_decode -target sm_120 -tokens 64 -heads 8 -k-frags -o "$work/ptx/dump_mla_decode_T64_H8_kfrags_sm_120.ptx"
	"$BIN" dump -kernel mla_decode -target sm_120 -tokens 64 -heads 16 -k-frags -o "$work/ptx/dump_mla_decode_T64_H16_kfrags_sm_120.ptx"
	"$BIN" dump -kernel mla_decode -target sm_120 -tokens 1 -heads 16 -k-frags -o "$work/ptx/dump_mla_decode_T1_H16_kfrags_sm_120.ptx"
	"$BIN" dump -kernel mla_decode -target sm_120 -tokens 256 -heads 16 -o "$work/ptx/dump_mla_decode_T256_H16_sm_120.ptx"
	"$BIN" dump -kernel mla_decode -target sm_120 -tokens 256 -heads 16 -k-frags -o "$work/ptx/dump_mla_decode_T256_H16_kfrags_sm_120.ptx"
	"$BIN" dump -kernel mla_decode -target sm_120 -tokens 256 -heads 64 -o "$work/ptx/dump_mla_decode_T256_H64_sm_120.ptx"
	for t in 256 64; do
		"$BIN" dump -kernel mla_decode -target sm_120 -tokens $t -heads 64 -head-block 64 -k-frags -tile 32 -stages 1 -o "$work/ptx/dump_mla_decode_T${t}_H64_hb64_kfrags_sm_120.ptx"
	done
	"$BIN" dump -kernel mla_decode -target sm_120 -tokens 256 -heads 64 -score-rows 2 -o "$work/ptx/dump_mla_decode_T256_H64_rows2_sm_120.ptx"
	"$BIN" dump -kernel mla_decode -target sm_120 -tokens 256 -heads 16 -k-perm=false -o "$work/ptx/dump_mla_decode_T256_H16_pairwise_sm_120.ptx"
	"$BIN" dump -kernel gemm -target sm_120 -m 7 -n 448 -k 100 -out f32 -o "$work/ptx/dump_gemm_7x448x100_f32_sm_120.ptx"
	for f in kernels/testdata/*_sm_120.ptx "$work"/ptx/*.ptx; do
		[ -e "$f" ] || continue
		name=$(basename "$f")
		out=$("$PTXAS" -arch=sm_120 -v -o "$work/x.cubin" "$f" 2>&1)
		rc=$?
		{ echo "### $f (exit $rc)"; echo "$out"; } >>"$RESULTS/ptxas.log"
		warns=$(grep -ci 'warning' <<<"$out")
		spills=$(grep -Eo '[0-9]+ bytes spill (stores|loads)' <<<"$out" | awk '{s+=$1} END{print s+0}')
		stack=$(grep -Eo '[0-9]+ bytes stack frame' <<<"$out" | awk '{s+=$1} END{print s+0}')
		regs=$(grep -Eo 'Used [0-9]+ registers' <<<"$out" | awk '{print $2}' | paste -sd/ -)
		mma="-"
		if [ $rc = 0 ] && [ -n "$CUOBJDUMP" ]; then
			mma=$("$CUOBJDUMP" -sass "$work/x.cubin" 2>/dev/null | grep -Eo '[HQ]MMA\.[0-9A-Z.]+' | sort | uniq -c | awk '{printf "%s%s x%s", sep, $2, $1; sep=", "}')
		fi
		ok=ok
		if [ $rc != 0 ] || [ "$warns" != 0 ] || [ "$spills" != 0 ]; then ok=FAIL; fail=1; fi
		printf '| %s | %s | %s | %s | %s | %s | %s |\n' "$name" "$rc" "$warns" "$spills" "${regs:--}" "${mma:--}" "$ok" >>"$ptxrows"
	done
else
	say "no ptxas found: sm_120 goldens not assembled"
	fail=1
fi
cat "$ptxrows" | tee -a "$log"

# ---------------------------------------------------------------- collect
wait "$matrix_pid"
: >"$RESULTS/cases.log"
rows=$work/case.rows
: >"$rows"
npass=0
for i in $(seq 1 "$ncases"); do
	label=$(sed -n "${i}p" "$cases" | cut -f1)
	if [ ! -e "$work/cases/$i.rc" ]; then
		printf '| %s | %s | not run | | | | |\n' "$i" "$label" >>"$rows"
		fail=1
		continue
	fi
	cat "$work/cases/$i.log" >>"$RESULTS/cases.log"
	IFS=$'\t' read -r _ rc secs <"$work/cases/$i.rc"
	s=$(grep -m1 '^SUMMARY' "$work/cases/$i.out")
	field() { grep -Eo "(^| )$1=[^ ]*" <<<"$s" | head -1 | cut -d= -f2; }
	# per-output GPU-vs-emulator figures: name:differ=a/b,maxabs=..,maxrel=..[,maxulp=..]
	diffs=$(grep -Eo '[a-z]+:differ=[^ ]*' <<<"$s" | sed -E 's/:differ=/ differ /; s/,maxabs=/, abs /; s/,maxrel=/, rel /; s/,maxulp=/, ulp /' | paste -sd';' - | sed 's/;/; /g')
	refs=$(grep -Eo '[a-z]+:ref_maxabs=[^ ]*' <<<"$s" | sed -E 's/:ref_maxabs=/ /; s/,ref_cos=/, cos /' | paste -sd';' - | sed 's/;/; /g')
	if [ "$rc" = 0 ]; then res=PASS; npass=$((npass + 1)); else res="FAIL (exit $rc)"; fail=1; fi
	[ -z "$s" ] && diffs=$(grep -m1 -E 'ptxgen-gpu:' "$work/cases/$i.out" | cut -c1-120)
	printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$i" "$label" "$(field gpu)" "$(field emu)" "$(field diff)" "${diffs:--}" "${refs:--}" "$res ($secs s)" >>"$rows"
done

if [ -n "$SANITIZER" ]; then
	wait "$san_pid"
	: >"$RESULTS/sanitizer.log"
	for f in "$work"/san-*.log; do
		{ echo "### $(basename "$f")"; cat "$f"; } >>"$RESULTS/sanitizer.log"
		cat "$f.row" >>"$san_rows"
		grep -Eq 'SUMMARY: 0 (errors|hazards)' "$f" && [ "$(cut -d'|' -f5 <"$f.row" | tr -d ' ')" = 0 ] || fail=1
	done
else
	echo "| - | - | no compute-sanitizer found | - |" >"$san_rows"
	fail=1
fi

{
	echo "## Shape matrix ($npass of $ncases passed)"
	echo
	echo "| # | case | GPU vs ref | emu vs ref | GPU vs emu | GPU-emu differences (elements differing, max abs, max rel, max bf16 ulp) | GPU vs ref: max abs, cos dist | result |"
	echo "|---|---|---|---|---|---|---|---|"
	cat "$rows"
	echo
	echo "## ptxas -arch=sm_120"
	echo
	echo "| PTX | exit | warnings | spill bytes | registers | tensor-core SASS | result |"
	echo "|---|---|---|---|---|---|---|"
	cat "$ptxrows"
	echo
	echo "## compute-sanitizer"
	echo
	echo "| tool | case | summary | exit |"
	echo "|---|---|---|---|"
	sort "$san_rows"
	echo
	echo "runtime.test: $rt"
	echo "lower.test (user kernels, math ops): $lt"
	echo "examples/rmsnorm: $ex"
	echo
	if [ $fail = 0 ]; then echo "gpu-check: PASS"; else echo "gpu-check: FAIL"; fi
} >"$summary"
say ""
cat "$summary" | tee -a "$log"
exit $fail
