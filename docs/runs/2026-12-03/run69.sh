#!/usr/bin/env bash
# GPU run 69 (session 11): run 68's ncu showed -k-frags raises the heads-in-N CTA's theoretical
# occupancy to 3 CTAs per SM (60 KB) while the T256 grid (256 CTAs, split 1) fills only 2 per SM;
# so: the split forced to 2 and 3, with and without -k-frags, one round. Carry build/.
# Its output is in run69.txt (copied from the command's stdout).
A="-flush-mb 1024 -bw 4.3e12 -flops 636e12 -gather=false -bf16p=false -sm120-plan=false -iters 30 -shapes H8_T192_K128+512,H8_T256_K128+512"
for s in 2 3; do for x in "" "-k-frags"; do echo "== split $s $x"; timeout 100 build/ptxgen-gpu bench $A -split $s $x 2>&1 | grep -E "us \(min" ; done; done
