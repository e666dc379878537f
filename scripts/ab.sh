#!/usr/bin/env bash
# ab.sh: time several ptxgen-gpu binaries on the same shapes, alternating, and print
# each shape's medians per binary side by side (the method of docs/perf-notes.md: an
# A/B is two or more builds run in turn in one session, never numbers from different
# runs). Build the binaries here (make gpu-bin, then cp build/ptxgen-gpu
# build/ptxgen-gpu-NAME per variant), carry build/ to the GPU machine and run:
#
#   BINS="main defer" SHAPES=H16_T256_K128+512,H16_T64_K128+512 bash scripts/ab.sh
#
# BINS: the NAMEs of build/ptxgen-gpu-NAME (at least one); SHAPES: ptxgen-gpu bench
# shapes; ROUNDS (default 2): passes over the binaries; ARGS: bench flags (default
# "-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -bf16p=false -iters 30": the
# decode only, serving pool; with -bf16p=true the table has a bf16p line per shape
# too). Every flag in ARGS must be known to every binary. Output
# goes to $OUT (or build/ab): one bench log per binary and round, and table.txt.
# Rehearse without a GPU: go build -tags ptxgen_fakegpu -o build/ptxgen-gpu-fake
# ./cmd/ptxgen-gpu, then BINS=fake SHAPES=H8_T1_K128+512 ARGS="-iters 1 -warmup 0 -bw
# 4.3e12 -flops 636e12 -gather=false -bf16p=false -sm120-plan=false" bash scripts/ab.sh
set -uo pipefail
OUT=${OUT:-build/ab}
ROUNDS=${ROUNDS:-2}
ARGS=${ARGS:--flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -bf16p=false -iters 30}
: "${BINS:?set BINS to the names of build/ptxgen-gpu-NAME binaries}"
: "${SHAPES:?set SHAPES to comma-separated bench shapes}"
mkdir -p "$OUT"
for b in $BINS; do
	[ -x "build/ptxgen-gpu-$b" ] || { echo "ab.sh: no build/ptxgen-gpu-$b" >&2; exit 2; }
done
rc=0
for r in $(seq 1 "$ROUNDS"); do
	for b in $BINS; do
		# shellcheck disable=SC2086 # ARGS is a list of flags
		if ! timeout 300 "build/ptxgen-gpu-$b" bench -shapes "$SHAPES" $ARGS >"$OUT/${b}_$r.txt" 2>&1; then
			echo "ab.sh: $b round $r failed (see $OUT/${b}_$r.txt)" >&2
			rc=1
		fi
	done
done
# One row per shape and line kind (the decode, the sm_120 plan), one column per binary:
# its medians over the rounds, comma-separated.
{
	printf "%-28s %-12s" shape line
	for b in $BINS; do printf " %-24s" "$b"; done
	echo
	for s in ${SHAPES//,/ }; do
		for kind in decode "sm_120 plan" bf16p; do
			row=$(printf "%-28s %-12s" "$s" "$kind")
			any=""
			for b in $BINS; do
				vals=""
				for r in $(seq 1 "$ROUNDS"); do
					v=$(grep -E "^${s//+/\\+} +" "$OUT/${b}_$r.txt" 2>/dev/null | grep " us (min" | grep -v "gather ceiling" |
						{ case $kind in decode) grep -v "sm_120 plan\| bf16p "  ;; *) grep " $kind " ;; esac; } |
						sed -E 's/.*: ([0-9.]+) us \(min.*/\1/' | head -1)
					[ -n "$v" ] && any=1
					vals="${vals:+$vals,}${v:--}"
				done
				row="$row $(printf " %-24s" "$vals")"
			done
			[ -n "$any" ] && echo "$row"
		done
	done
} | tee "$OUT/table.txt"
exit $rc
