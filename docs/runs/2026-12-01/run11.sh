#!/usr/bin/env bash
# GPU run 11: the run-time plan with the split decode's split parameter last instead of
# second (z), against per-call generation (pre, 2098cd4) and the run-time plan (post):
# run 10 found the +0.6 us at H64 T32 in a build whose decode is pre's PTX plus the
# parameter, which shifts every later parameter's offset.
set -uo pipefail
R=/tmp/res; V=/tmp/v; mkdir -p $R
S=H64_T32_K128+512,H128_T8_K128+512,H64_T8_K128+512,H64_T64_K128+512
timeout 60 build/ptxgen-gpu bench -shapes $S -vectors-out $V > $R/vectors.txt 2>&1 || tail -3 $R/vectors.txt
C="-vectors-in $V -flush-mb 1024 -sm120-plan=false"
for i in 1 2 3; do for b in ptxgen-gpu-pre ptxgen-gpu ptxgen-gpu-z; do timeout 30 build/$b bench -shapes $S $C > $R/${b}_$i.txt 2>&1; echo "$b $i rc=$?"; done; done
tar czf $OUT/res.tgz -C $R .
for b in ptxgen-gpu-pre ptxgen-gpu ptxgen-gpu-z; do echo "== $b"; grep -h "us (min" $R/${b}_[123].txt | sed -E 's/^(\S+).*: ([0-9.]+) us \(min.*/\1 \2/' | sort | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print k, a[k]}'; done
