#!/usr/bin/env bash
# GPU run 55 (session 8): the fix for issue 29's race. build/ptxgen-gpu: a phased region
# synchronizes on CTA barriers (the other warps take as many on their skip path), and a role
# that used a named barrier takes it again before a CTA barrier outside regions publishes its
# accesses. (1) racecheck on every 64-head variant of issue 29's table and the producer-role
# CTA; synccheck and memcheck on the default 64-head CTA and the producer role; the roles
# matmul (lower.test) under racecheck; (2) the fix against 0972ef8 (build/ptxgen-gpu-pre),
# 2 alternating rounds on the serving pool. Carry build/ptxgen-gpu, build/ptxgen-gpu-pre,
# build/lower.test.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
B=build/ptxgen-gpu
summ() { # tool label args
	compute-sanitizer --tool $1 --print-limit 100000 $B check -gpu -emu=false -kernel mla_decode -target sm_90 $3 > /tmp/r.txt 2>&1
	echo "== $1 $2: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY|SYNCCHECK SUMMARY' /tmp/r.txt | tail -1) $(grep -cE '^PASS' /tmp/r.txt) PASS"
	[ $1 = racecheck ] && python3 scripts/proto/racecheck_summary.py < /tmp/r.txt | sort -k2 | head -8
}
V=("H64 T8 (default):-heads 64 -tokens 8 -head-block 64"
	"bf16p:-heads 64 -tokens 8 -head-block 64 -precision bf16p"
	"split 1:-heads 64 -tokens 8 -head-block 64 -split 1"
	"T2:-heads 64 -tokens 2 -head-block 64"
	"T64 split 1:-heads 64 -tokens 64 -head-block 64 -split 1"
	"bf16 cache:-heads 64 -tokens 8 -head-block 64 -cache bf16 -nope 512 -rope 64"
	"K1 2048:-heads 64 -tokens 8 -head-block 64 -k1 2048"
	"H128:-heads 128 -tokens 8 -head-block 64"
	"bf16p T64 split 1:-heads 64 -tokens 64 -head-block 64 -split 1 -precision bf16p"
	"score-warps 8:-heads 64 -tokens 8 -head-block 64 -score-warps 8"
	"producer 2 tile 32:-heads 64 -tokens 8 -head-block 64 -producer-warps 2 -tile 32"
	"producer 2 tile 32 T64 split 1:-heads 64 -tokens 64 -head-block 64 -producer-warps 2 -tile 32 -split 1"
	"16-head T64 split 1:-heads 16 -tokens 64 -split 1"
	"sm_120 plan H64 T64:-heads 64 -tokens 64 -plan-target sm_120")
for v in "${V[@]}"; do summ racecheck "${v%%:*}" "${v#*:}"; done
for tool in synccheck memcheck; do
	summ $tool "H64 T64 split 1" "-heads 64 -tokens 64 -head-block 64 -split 1"
	summ $tool "producer T64 split 1" "-heads 64 -tokens 64 -head-block 64 -producer-warps 2 -tile 32 -split 1"
done
echo "== racecheck lower.test -test.run RolesMatmulGPU"
compute-sanitizer --tool racecheck build/lower.test -test.run 'RolesMatmulGPU' -test.v 2>&1 | grep -E "SUMMARY|^(---|ok|PASS|FAIL)" | head -8
SHAPES=H64_T256_K128+512,H64_T64_K128+512,H128_T64_K128+512
COMMON="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -sm120-plan=false -bf16p=false -iters 30"
for r in 1 2; do
	for b in build/ptxgen-gpu-pre build/ptxgen-gpu; do
		timeout 120 $b bench -shapes $SHAPES $COMMON > /tmp/bench.txt 2>&1 || echo "$b round $r failed"
		echo "== $(basename $b) round $r"
		grep " us (min" /tmp/bench.txt | sed -E 's/^(\S+) +(bf16p )?\[([^]]*)\].*: ([0-9.]+) us \(min.*ok (\S+).*/\1 \2[\3] \4 us ok \5/'
	done
done
