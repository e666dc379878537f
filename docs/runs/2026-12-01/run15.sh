#!/usr/bin/env bash
# GPU run 15 (issue 20, item 0): token ids loaded one tile ahead (IDXPF=1) against run 14's paged
# variants and the gather-only kernels of the same records, in one run.
set -uo pipefail
REPO=$PWD; P=/tmp/proto; mkdir -p $P; cd $P
bash $REPO/scripts/proto/variants.sh > /dev/null
T=$REPO/scripts/proto/time_core.py
: > $OUT/time.txt
for n in $(cut -d' ' -f1 variants.txt | grep -E '_pg3'); do
	timeout 60 python3 $T time $n 2>&1 | grep -v Traceback | tail -8 >> $OUT/time.txt
done
grep -v '^JSON' $OUT/time.txt
timeout 90 ncu --clock-control none --kernel-name core --launch-count 1 --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis python3 $T once w4_n32_int_p0_pg3_ipf > $OUT/ncu_pg3_ipf.txt 2>&1; echo "ncu rc=$?"
