#!/usr/bin/env bash
# GPU run 52 (session 8): locate the 64-head CTA's racecheck hazards (issue 29). The full
# racecheck report (shared addresses, threads, PCs) of the default score-role CTA at 2 rows,
# with and without indirect barrier dependencies, the -score-warps 8 control, and the SASS of
# the same PTX (CUDA 13 ptxas, as the driver JITs it) to map the reported PCs to instructions.
# Carry build/ptxgen-gpu.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
B=build/ptxgen-gpu
A="-kernel mla_decode -target sm_90 -heads 64 -head-block 64 -tokens 2"
compute-sanitizer --help 2>&1 | grep -i -A2 racecheck > $OUT/racecheck-options.txt
$B dump $A -o $OUT/h64.ptx
ptxas -arch=sm_90 -v -o /tmp/h64.cubin $OUT/h64.ptx > $OUT/ptxas.txt 2>&1
cuobjdump -sass /tmp/h64.cubin > $OUT/h64.sass 2>&1
echo "== racecheck default"
timeout 200 compute-sanitizer --tool racecheck --racecheck-report all --print-limit 400 $B check -gpu -emu=false $A > $OUT/race-default.txt 2>&1
grep -E "SUMMARY|PASS|FAIL" $OUT/race-default.txt
echo "== racecheck default, indirect barrier dependency"
timeout 200 compute-sanitizer --tool racecheck --racecheck-indirect-barrier-dependency yes --print-limit 20 $B check -gpu -emu=false $A > $OUT/race-indirect.txt 2>&1
grep -E "SUMMARY|PASS|FAIL|rror" $OUT/race-indirect.txt | head -5
echo "== racecheck -score-warps 8"
timeout 200 compute-sanitizer --tool racecheck --print-limit 20 $B check -gpu -emu=false $A -score-warps 8 2>&1 | grep -E "SUMMARY|PASS|FAIL"
gzip -9 $OUT/race-default.txt $OUT/h64.sass
ls -la $OUT
