#!/usr/bin/env bash
# same-ptx.sh OLD NEW: compares what two ptxgen binaries print for `dump -all` (every kernel
# gen writes) over gpu-check's gemm and mla_decode matrix and the decode's variants, on sm_90,
# sm_120, sm_80 and sm_90 planned as sm_120; prints each configuration that differs and a
# count. A structural change that claims byte-identical PTX runs it against the binary of the
# generator gpu-check last passed on (go build -o OLD ./ptxgen at that commit).
set -u
OLD=${1:?usage: same-ptx.sh OLD NEW}; NEW=${2:?usage: same-ptx.sh OLD NEW}; n=0; bad=0
M="-kernel mla_decode"
cfgs=(
"-kernel gemm -m 1 -n 1 -k 1" "-kernel gemm -m 17 -n 9 -k 33 -out f32" "-kernel gemm -m 100 -n 72 -k 448" "-kernel gemm -m 7 -n 448 -k 100 -out f32"
"$M" "$M -split 1" "$M -heads 1" "$M -heads 8" "$M -heads 16" "$M -heads 24" "$M -heads 128" "$M -heads 16 -split 1"
"$M -head-block 32" "$M -heads 24 -head-block 32 -split 1" "$M -k0 1 -k1 0" "$M -k0 63 -k1 100" "$M -k0 100 -k1 1"
"$M -k0 512 -k1 1152" "$M -k0 1152 -k1 0 -split 1" "$M -page0 1 -page1 2" "$M -page0 53 -page1 256"
"$M -page0 256 -page1 53 -k0 512 -k1 63" "$M -heads 24 -k0 100 -k1 1152" "$M -cache bf16 -nope 512 -rope 64"
"$M -cache bf16 -nope 512 -rope 64 -page0 53 -page1 53 -split 1" "$M -cache bf16 -nope 200 -rope 40"
"$M -cache bf16 -nope 200 -rope 40 -heads 24 -k0 100 -k1 0 -page0 53" "$M -tokens 3" "$M -tokens 3 -heads 128 -k0 1152 -k1 1152"
"$M -tokens 64" "$M -max-tokens 8 -tokens 3" "$M -sink=false -len0=false -len1=false"
"$M -heads 16 -k0 2100 -k1 0 -split 1" "$M -tokens 256 -heads 16" "$M -tokens 256 -heads 8" "$M -tokens 256 -heads 64" "$M -tokens 64 -heads 64 -precision bf16p"
"$M -tokens 64 -heads 64 -score-warps 8" "$M -tokens 64 -heads 64 -producer-warps 1" "$M -tokens 64 -heads 64 -producer-warps 2 -tile 32"
"$M -tokens 64 -heads 64 -head-block 64 -split 1" "$M -tokens 8 -heads 64 -head-block 64 -k1 2048" "$M -tokens 64 -heads 64 -tile 32"
"$M -tokens 64 -heads 64 -warps64 16" "$M -tokens 256 -heads 128 -precision bf16p" "$M -tokens 64 -heads 32 -head-block 32 -precision bf16p"
"$M -tokens 64 -heads 64 -cache bf16 -nope 512 -rope 64 -head-block 64"
)
for c in "${cfgs[@]}"; do
  for t in "-target sm_90" "-target sm_120" "-target sm_80" "-target sm_90 -plan-target sm_120"; do
    n=$((n+1))
    a=$($OLD dump -all $c $t 2>&1 | md5sum); b=$($NEW dump -all $c $t 2>&1 | md5sum)
    if [ "$a" != "$b" ]; then bad=$((bad+1)); echo "DIFF: $c $t"; fi
  done
done
echo "$n configurations compared, $bad differ"
[ "$bad" = 0 ]
