#!/usr/bin/env bash
# GPU run 53 (session 8): racecheck on scripts/proto/named_barrier_race.cu, a role of 4 warps
# with named barriers of its own, then a CTA barrier before another role reads what it wrote.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
nvcc -arch=sm_90 -o /tmp/nbr scripts/proto/named_barrier_race.cu || exit 1
for close in 0 1; do for nb in 0 1 2 3; do for it in 1 2 3; do
	r=$(compute-sanitizer --tool racecheck /tmp/nbr $nb $it $close 2>&1 | grep -E "RACECHECK SUMMARY" )
	echo "nb=$nb iters=$it close=$close: $r"
done; done; done
# The decode's hazards by shared address (smem base 0x400 on sm_90) and PC pair, per variant.
B=build/ptxgen-gpu
summ() { # label, args
	compute-sanitizer --tool racecheck --print-limit 100000 $B check -gpu -emu=false -kernel mla_decode -target sm_90 $2 > /tmp/r.txt 2>&1
	echo "== $1: $(grep -E 'RACECHECK SUMMARY' /tmp/r.txt)"
	python3 scripts/proto/racecheck_summary.py < /tmp/r.txt | sort -k2 | head -40
}
summ "H64 T8 (default)" "-heads 64 -tokens 8 -head-block 64"
summ "H64 T64 split 1" "-heads 64 -tokens 64 -head-block 64 -split 1"
summ "H64 T8 bf16 cache" "-heads 64 -tokens 8 -head-block 64 -cache bf16 -nope 512 -rope 64"
