#!/usr/bin/env bash
# GPU run 2 (2026-12-01): the 8-warp default (dots one at a time) against 16 warps, plan A/Bs,
# CUDA 13 ptxas spill check of the new variants, ncu on H64 T256.
set -uo pipefail
R=/tmp/res; mkdir -p $R; V=/tmp/v; B=build/ptxgen-gpu
S=H64_T8_K128+512,H64_T32_K128+512,H64_T64_K128+512,H64_T128_K128+512,H64_T256_K128+512,H64_T64_K128+2048,H128_T8_K128+512,H128_T64_K128+512,H128_T256_K128+512,H128_T64_K128+2048,H64_T64_K128+512_bf16
$B bench -shapes $S -vectors-out $V > $R/vectors.txt 2>&1 || { tail $R/vectors.txt; exit 1; }
C="-vectors-in $V -flush-mb 1024 -bw 4.3e12 -flops 636e12 -sm120-plan=false"
L=H64_T64_K128+512,H64_T128_K128+512,H64_T256_K128+512,H64_T64_K128+2048,H128_T64_K128+512,H128_T256_K128+512,H128_T64_K128+2048,H64_T64_K128+512_bf16
for i in 1 2; do for w in 8 16; do timeout 60 $B bench -shapes $L $C -warps64 $w > $R/w${w}_$i.txt 2>&1; done; done
for hb in 0 64; do timeout 60 $B bench -shapes H64_T8_K128+512,H64_T32_K128+512,H128_T8_K128+512 $C -head-block $hb > $R/hb${hb}.txt 2>&1; done
P=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas); $P --version | tail -1 > $R/ptxas13.txt
for a in "-tokens 64" "-tokens 256" "-tokens 64 -k1 2048" "-tokens 64 -heads 128" "-tokens 64 -cache bf16" "-tokens 32 -head-block 64"; do
  $B dump -target sm_90 $a > /tmp/k.ptx && echo "$a: $($P -arch=sm_90 -v /tmp/k.ptx -o /tmp/k.cubin 2>&1 | grep -E 'spill|Used' | tr '\n' ' ')" >> $R/ptxas13.txt
done
timeout 120 ncu --clock-control none --kernel-name regex:mla_decode --launch-skip 4 --launch-count 1 --section WarpStateStats --section SourceCounters --section SpeedOfLight --section MemoryWorkloadAnalysis --print-details all $B bench -shapes H64_T256_K128+512 $C -iters 3 -warmup 2 > $R/ncu.txt 2>&1
tar czf $OUT/res.tgz -C $R .
grep -h "us (min" $R/w*_1.txt $R/w*_2.txt $R/hb*.txt; cat $R/ptxas13.txt; grep -E "Warp Cycles|Stall|Throughput|Issued" $R/ncu.txt | head -30
