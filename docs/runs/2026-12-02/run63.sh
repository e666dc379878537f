#!/usr/bin/env bash
# GPU run 63 (session 10): (1) CUDA 13 ptxas for sm_120 on every kernel of the heads-in-N
# decode (-head-block 8, both plans' sizes); (2) A/B: heads-in-N with 2 stages (hn, 86.5 KB,
# 2 CTAs per SM on the H200) against 1 stage (hn1, a build whose mlaStaged keeps 8-head
# CTAs at one stage: 67 KB, 3 per SM), 2 alternating rounds; (3) the gather ceiling's time with
# and without the 1 GiB L2 flush between calls (ncu measured it at 31.8 us where the bench
# reports 36.8). Carry build/ (ptxgen, ptxgen-gpu, ptxgen-gpu-hn1real and the wrappers).
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin
O=${OUT:-/tmp/run63}; mkdir -p "$O"
echo "== (1) sm_120 ptxas"
for t in 1 8 64 256; do
	build/ptxgen dump -all -kernel mla_decode -target sm_120 -heads 8 -head-block 8 -tokens $t > $O/hn8_t$t.ptx
	ptxas -arch=sm_120 -v $O/hn8_t$t.ptx -o /dev/null > $O/ptxas_t$t.txt 2>&1; echo "T$t rc=$?"
	grep -E "Compiling entry|spill stores|Used [0-9]+ registers" $O/ptxas_t$t.txt | grep -v combine | paste - - - | sed -E 's/ptxas info +: //g' | grep -v "mla_combine" | head -6
done
echo "== (2) A/B stages"
OUT=$O/ab BINS="hn hn1" SHAPES=H8_T8_K128+512,H8_T64_K128+512,H8_T256_K128+512 timeout 300 bash scripts/ab.sh
cat $O/ab/table.txt
echo "== (3) gather, flush"
for f in 1024 0; do
	timeout 120 build/ptxgen-gpu bench -shapes H16_T256_K128+512,H16_T64_K128+512 -flush-mb $f -bw 4.3e12 -flops 636e12 -bf16p=false -sm120-plan=false -iters 30 > $O/gather_flush$f.txt 2>&1
	echo "flush $f MB:"; grep -iE "gather|H16_T" $O/gather_flush$f.txt | head -8
done
