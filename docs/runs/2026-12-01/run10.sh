#!/usr/bin/env bash
# GPU run 10: where the run-time plan's +2% at H64 T32 comes from. Binaries: pre (2098cd4,
# per-call generation), post (the run-time plan), x (post with the split decode's index
# preload sized for 4-way splits, as a split-4 call needs: valid for these shapes only),
# y (x with the chunk size a constant too: pre's code plus an unused split parameter).
set -uo pipefail
R=/tmp/res; V=/tmp/v; mkdir -p $R
S=H64_T32_K128+512,H128_T8_K128+512
timeout 60 build/ptxgen-gpu bench -shapes $S -vectors-out $V > $R/vectors.txt 2>&1 || tail -3 $R/vectors.txt
C="-vectors-in $V -flush-mb 1024 -sm120-plan=false"
for i in 1 2 3; do for b in ptxgen-gpu-pre ptxgen-gpu ptxgen-gpu-x ptxgen-gpu-y; do timeout 30 build/$b bench -shapes $S $C > $R/${b}_$i.txt 2>&1; echo "$b $i rc=$?"; done; done
for b in ptxgen-gpu-pre ptxgen-gpu ptxgen-gpu-x ptxgen-gpu-y; do timeout 60 ncu --clock-control none --kernel-name regex:mla_decode --metrics gpu__time_duration.sum,smsp__inst_executed.sum,dram__bytes_read.sum,lts__t_bytes.sum --csv build/$b bench -shapes H64_T32_K128+512 -vectors-in $V -flush-mb 0 -iters 5 -warmup 0 -sm120-plan=false > $R/ncu_$b.csv 2> $R/ncu_$b.err; echo "ncu $b rc=$?"; done
tar czf $OUT/res.tgz -C $R .
for f in $R/ptxgen-gpu*_[123].txt; do echo "== $f"; grep -h "us (min" $f | cut -c1-25,90-140; done
