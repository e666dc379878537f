#!/usr/bin/env bash
# GPU run 54 (session 8): (1) scripts/proto/named_barrier_race.cu v2: which accesses racecheck
# orders across a CTA barrier once a role has used its own named barrier (role writes closed
# or not by the role's barrier, all-warp writes by role warps in a later phase); (2) racecheck
# on every 64-head variant of issue 29's table, before (build/ptxgen-gpu-pre, 0972ef8) and
# after the fix (build/ptxgen-gpu: a region closes its accesses with the role's barrier).
# Carry build/ptxgen-gpu and build/ptxgen-gpu-pre.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
nvcc -arch=sm_90 -lineinfo -o /tmp/nbr scripts/proto/named_barrier_race.cu || exit 1
for args in "2 3 0" "2 3 1" "2 3 2" "2 3 3" "2 3 4" "2 3 5" "2 3 6" "2 3 7" "0 3 6" "0 3 2"; do
	compute-sanitizer --tool racecheck --racecheck-report all --print-limit 100000 /tmp/nbr $args > /tmp/n.txt 2>&1
	echo "== nbr $args (NB ITERS FLAGS; 1 CLOSE 2 DEQ 4 TAIL): $(grep -E 'RACECHECK SUMMARY' /tmp/n.txt)"
	python3 scripts/proto/racecheck_summary.py < /tmp/n.txt | sort | uniq | head -12
done
summ() { # binary label args
	compute-sanitizer --tool racecheck --racecheck-report all --print-limit 100000 $1 check -gpu -emu=false -kernel mla_decode -target sm_90 $3 > /tmp/r.txt 2>&1
	echo "== $(basename $1): $2: $(grep -E 'RACECHECK SUMMARY' /tmp/r.txt) $(grep -cE '^PASS' /tmp/r.txt) PASS"
	python3 scripts/proto/racecheck_summary.py < /tmp/r.txt | sort -k2 | head -12
}
summ build/ptxgen-gpu-pre "H64 T8 (default)" "-heads 64 -tokens 8 -head-block 64"
summ build/ptxgen-gpu-pre "H64 T64 split 1" "-heads 64 -tokens 64 -head-block 64 -split 1"
V=("H64 T8 (default):-heads 64 -tokens 8 -head-block 64"
	"bf16p:-heads 64 -tokens 8 -head-block 64 -precision bf16p"
	"split 1:-heads 64 -tokens 8 -head-block 64 -split 1"
	"T2:-heads 64 -tokens 2 -head-block 64"
	"T64 split 1:-heads 64 -tokens 64 -head-block 64 -split 1"
	"bf16 cache:-heads 64 -tokens 8 -head-block 64 -cache bf16 -nope 512 -rope 64"
	"K1 2048:-heads 64 -tokens 8 -head-block 64 -k1 2048"
	"H128:-heads 128 -tokens 8 -head-block 64"
	"score-warps 8:-heads 64 -tokens 8 -head-block 64 -score-warps 8"
	"bf16p T64 split 1:-heads 64 -tokens 64 -head-block 64 -split 1 -precision bf16p")
for v in "${V[@]}"; do summ build/ptxgen-gpu "${v%%:*}" "${v#*:}"; done
