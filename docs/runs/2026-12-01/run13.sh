#!/usr/bin/env bash
# GPU run 13 (issue 20, item 0): the 16-head decode's core loop as PTX prototypes
# (scripts/proto/core_gen.py), timed per CTA-tile with and without gathers, the integer e4m3
# dequantization checked bit for bit, CUDA 13 ptxas on sm_120, and ncu on the best two.
set -uo pipefail
REPO=$PWD; P=/tmp/proto; mkdir -p $P; cd $P
bash $REPO/scripts/proto/variants.sh > /dev/null
for f in core_*.ptx; do
	sed 's/^\.version 7\.8/.version 8.7/; s/^\.target sm_90/.target sm_120/' $f > /tmp/x120.ptx
	echo "$f sm_120: $(ptxas -arch=sm_120 -v /tmp/x120.ptx -o /dev/null 2>&1 | grep -E 'registers|spill|rror' | tr '\n' ' ')"
done > $OUT/sm120.txt
T=$REPO/scripts/proto/time_core.py
python3 $T deq 2>&1 | tee $OUT/time.txt
for n in $(cut -d' ' -f1 variants.txt); do timeout 60 python3 $T time $n 2>&1 | grep -v Traceback | tail -8 >> $OUT/time.txt; done
grep -v '^JSON' $OUT/time.txt
grep '^JSON' $OUT/time.txt | cut -c6- > results.jsonl
python3 -c "
import json; r=[json.loads(l) for l in open('results.jsonl')]
for g in (False, True):
    c=[x for x in r if ('GBps' in x)==g]
    if c: print(min(c, key=lambda x: x['ns_per_32c_tile'])['name'])
" > best.txt
for n in $(cat best.txt); do
	timeout 90 ncu --clock-control none --kernel-name core --launch-count 1 --section SpeedOfLight --section WarpStateStats --section Occupancy --section LaunchStats python3 $T once $n > $OUT/ncu_$n.txt 2>&1
	echo "ncu $n rc=$?"
done
