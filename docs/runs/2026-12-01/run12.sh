#!/usr/bin/env bash
# GPU run 12: the +0.6 us of the run-time plan at H64 T32 and H128 T8 with and without
# programmatic dependent launch of the combine (-pdl=false launches it plainly), pre
# (2098cd4, per-call generation) against post (the run-time plan, c101851).
set -uo pipefail
R=/tmp/res; V=/tmp/v; mkdir -p $R
S=H64_T32_K128+512,H128_T8_K128+512
timeout 60 build/ptxgen-gpu bench -shapes $S -vectors-out $V > $R/vectors.txt 2>&1 || tail -3 $R/vectors.txt
for pdl in true false; do
C="-vectors-in $V -flush-mb 1024 -sm120-plan=false -pdl=$pdl"
for i in 1 2 3; do for b in ptxgen-gpu-pre ptxgen-gpu; do timeout 30 build/$b bench -shapes $S $C > $R/${b}_pdl${pdl}_$i.txt 2>&1; echo "$b pdl=$pdl $i rc=$?"; done; done
done
tar czf $OUT/res.tgz -C $R .
for pdl in true false; do for b in ptxgen-gpu-pre ptxgen-gpu; do echo "== $b pdl=$pdl"; grep -h "us (min" $R/${b}_pdl${pdl}_[123].txt | sed -E 's/^(\S+).*: ([0-9.]+) us \(min.*/\1 \2/' | sort | awk '{a[$1]=a[$1]" "$2} END {for (k in a) print k, a[k]}'; done; done
