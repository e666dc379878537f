#!/usr/bin/env bash
# GPU run 9: the run-time plan with one combine per reachable split (8efead1). gpu-check on the
# new kernels (CUDA 13 ptxas spills included); the Python host; scripts/bench.sh (FlashMLA
# built and timed on the serving-pool folders, then ptxgen through the run-time path); the
# bench before (2098cd4, main: per-call generation) and after, alternating, on the same
# folders; ncu per-kernel times of the split shapes, before and after.
set -uo pipefail
G=/tmp/gc; R=/tmp/res; V=/tmp/ptxgen-bench-vectors; mkdir -p $G $R
pack() { tar czf $OUT/res.tgz -C $R . ; }
(OUT=$R bash .anchors/flashmla/build.sh > $R/flashmla_prebuild.txt 2>&1; echo $? > $R/flashmla_prebuild.rc) &
BUILD=$!
OUT=$G timeout 170 bash scripts/gpu-check.sh > /dev/null 2>&1; echo "gpu-check rc=$?"
tar czf $OUT/gc.tgz -C $G .
PYTHONUNBUFFERED=1 timeout 60 python3 examples/python/mla_decode.py --kernels .device/python-kernels --vectors .device/testvectors/mla_decode > $R/python-host.log 2>&1; echo "python rc=$?"
wait $BUILD; echo "flashmla prebuild rc=$(cat $R/flashmla_prebuild.rc)"
S=H8_T64_K128+512,H16_T256_K128+512,H64_T8_K128+512,H64_T32_K128+512,H64_T64_K128+512,H64_T128_K128+512,H64_T256_K128+512,H64_T64_K128+2048,H128_T8_K128+512,H128_T64_K128+512,H128_T256_K128+512
OUT=$R/bench SHAPES=$S NO_TRITON=1 VEC=$V FLASHMLA_TIMEOUT=120 BENCH_ARGS="-bw 4.3e12 -flops 636e12" timeout 200 bash scripts/bench.sh > $R/bench.log 2>&1; echo "bench.sh rc=$?"
pack
C="-vectors-in $V -flush-mb 1024 -bw 4.3e12 -flops 636e12 -sm120-plan=false"
for i in 1 2 3; do for b in ptxgen-gpu-pre ptxgen-gpu; do timeout 45 build/$b bench -shapes $S $C > $R/${b}_$i.txt 2>&1; echo "$b $i rc=$?"; done; done
pack
N=H64_T8_K128+512,H64_T32_K128+512,H128_T8_K128+512,H8_T64_K128+512
for b in ptxgen-gpu-pre ptxgen-gpu; do timeout 60 ncu --clock-control none --kernel-name regex:mla_ --metrics gpu__time_duration.sum,launch__registers_per_thread,launch__block_size --csv build/$b bench -shapes $N -vectors-in $V -flush-mb 0 -iters 3 -warmup 0 -sm120-plan=false > $R/ncu_$b.csv 2> $R/ncu_$b.err; echo "ncu $b rc=$?"; done
pack
grep -E "^## |gpu-check:|FAIL" $G/summary.md | head -20; tail -4 $R/python-host.log
grep -E "us \(min|FlashMLA|flashmla" $R/bench/bench.txt | head -30
for f in $R/ptxgen-gpu*_[123].txt; do echo "== $f"; grep -h "us (min" $f | cut -c1-25,60-140; done
