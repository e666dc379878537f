#!/usr/bin/env bash
# GPU run 56 (session 8): synccheck and racecheck on scripts/proto/skip_path_barrier.cu: a
# role region's barriers taken by the other warps at another instruction, per barrier form;
# and synccheck on run 55's decode (the region on bar.sync 0), for the message.
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
nvcc -arch=sm_90 -lineinfo -o /tmp/spb scripts/proto/skip_path_barrier.cu || exit 1
for mode in 0 1 2 3; do for tool in synccheck racecheck; do
	compute-sanitizer --tool $tool --print-limit 3 /tmp/spb $mode 3 > /tmp/s.txt 2>&1
	echo "== mode $mode $tool: $(grep -E 'SUMMARY' /tmp/s.txt)"
	grep -E "Barrier|Divergent|hazard|Error" /tmp/s.txt | head -2
done; done
compute-sanitizer --tool synccheck --print-limit 3 build/ptxgen-gpu check -gpu -emu=false -kernel mla_decode -target sm_90 -heads 64 -tokens 8 -head-block 64 -split 1 2>&1 | grep -vE "Host Frame|^== |^(out|lse|  )" | head -20
