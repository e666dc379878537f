#!/usr/bin/env bash
# GPU run 16 (issue 20, item 0): a producer warp (PROD=1: gathers handed over by named barriers;
# the first try had lane l gather candidate l, uncoalesced: 3.6 us per tile, see perf-notes)
# against run 15's best loop and the gather-only kernel of the same records, in one run.
set -uo pipefail
REPO=$PWD; P=/tmp/proto; mkdir -p $P; cd $P
bash $REPO/scripts/proto/variants.sh > /dev/null
T=$REPO/scripts/proto/time_core.py
: > $OUT/time.txt
for n in $(cut -d' ' -f1 variants.txt | grep -E '_pg3_ipf($|_gatheronly|_prod)|_pg2_ipf_prod'); do
	timeout 60 python3 $T time $n 2>&1 | grep -v Traceback | tail -8 >> $OUT/time.txt
done
grep -v '^JSON' $OUT/time.txt
timeout 90 ncu --clock-control none --kernel-name core --launch-count 1 --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis python3 $T once w4_n32_int_p0_pg3_ipf_prod_r200 > $OUT/ncu_prod_r200.txt 2>&1; echo "ncu rc=$?"
