#!/usr/bin/env bash
# Heads-in-N core loops (issue 30 item 0; core_gen.py HN=1) next to the best 16-head loop of v9
# (run 15: W=4 NC=32 DEQ=int GATHER=2 S=3 IDXPF=1) and its gather ceiling: generates them in the
# current folder, assembles each with ptxas for sm_90 (the cubin that is timed) and sm_120
# (registers and spills only), then hn_check.py checks the heads-in-N kernels against float64 and
# times every kernel, one line each. Needs python3 with torch and cuda-python, and CUDA 12.8+
# ptxas ($PTXAS, else ptxas on PATH, else /usr/local/cuda/bin/ptxas); no Go.
#
#   REPO=$PWD; mkdir -p /tmp/hn && cd /tmp/hn && bash $REPO/scripts/proto/hn.sh 2>&1 | tee $OUT/hn.txt
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
PTXAS=${PTXAS:-$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)}
base="W=4 NC=32 DEQ=int GATHER=2 IDXPF=1"
: > hn_variants.txt
while read -r v; do
	[ -z "$v" ] && continue
	python3 "$here/core_gen.py" $base $v >> hn_variants.txt
done <<'LIST'
S=3
S=3 EXACT=0
S=3 COMPUTE=0
S=3 HN=1 H=16
S=3 HN=1 H=16 EXACT=0
S=3 HN=1 H=16 NC=16 REG=168
S=3 HN=1 H=8
S=3 HN=1 H=8 EXACT=0
S=3 HN=1 H=8 REG=168
S=3 HN=1 H=8 REG=168 EXACT=0
S=4 HN=1 H=8 REG=168
S=3 HN=1 H=8 NC=16
S=3 HN=1 H=8 DUMPS=1
S=3 HN=1 H=16 DUMPS=1
LIST
echo "# ptxas: $("$PTXAS" --version | tail -1)"
for n in $(cut -d' ' -f1 hn_variants.txt); do
	"$PTXAS" -arch=sm_90 -v "core_$n.ptx" -o "core_$n.cubin" 2> "core_$n.sm90.txt" || { cat "core_$n.sm90.txt"; exit 1; }
	sed 's/^\.version 7\.8/.version 8.7/; s/^\.target sm_90/.target sm_120/' "core_$n.ptx" > "core_$n.sm120.ptx"
	"$PTXAS" -arch=sm_120 -v "core_$n.sm120.ptx" -o /dev/null 2> "core_$n.sm120.txt" || echo "sm_120 ptxas failed: core_$n.sm120.txt"
	sum() { grep -hoE 'Used [0-9]+ registers|[0-9]+ bytes spill stores|rror.*' "$1" | tr '\n' ' '; }
	echo "# $n  sm_90: $(sum "core_$n.sm90.txt")  sm_120: $(sum "core_$n.sm120.txt")"
done
python3 "$here/hn_check.py" hn_variants.txt --json
