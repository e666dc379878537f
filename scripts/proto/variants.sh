#!/usr/bin/env bash
# The core-loop variants timed by run 13 (names are core_gen.py's): writes core_*.ptx, deq_check.ptx
# and variants.txt in the current folder.
set -euo pipefail
here=$(dirname "$0")
python3 $here/deq_check_gen.py
: > variants.txt
while read -r v; do
	[ -z "$v" ] && continue
	python3 $here/core_gen.py $v >> variants.txt
done <<'LIST'
W=4 NC=32 DEQ=f32
W=4 NC=32 DEQ=int
W=4 NC=32 DEQ=none
W=4 NC=16 DEQ=int
W=4 NC=16 DEQ=int PIPE=1
W=4 NC=16 DEQ=int PIPE=1 REG=168
W=8 NC=32 DEQ=int
W=8 NC=32 DEQ=int PIPE=1
W=8 NC=32 DEQ=int PIPE=1 REG=128
W=8 NC=16 DEQ=int PIPE=1
W=4 NC=32 DEQ=int GATHER=1 S=2
W=4 NC=32 DEQ=int GATHER=1 S=3
W=4 NC=32 DEQ=int GATHER=1 S=4
W=4 NC=32 DEQ=f32 GATHER=1 S=3
W=4 NC=32 DEQ=int GATHER=1 S=3 EXACT=0
W=4 NC=16 DEQ=int PIPE=1 GATHER=1 S=4
W=8 NC=32 DEQ=int PIPE=1 GATHER=1 S=3
W=4 NC=32 DEQ=int GATHER=2 S=2
W=4 NC=32 DEQ=int GATHER=2 S=3
W=4 NC=32 DEQ=int GATHER=2 S=3 EXACT=0
W=4 NC=32 DEQ=int GATHER=2 S=3 COMPUTE=0
W=4 NC=32 DEQ=int GATHER=2 S=4 COMPUTE=0
W=4 NC=32 DEQ=int GATHER=1 S=3 COMPUTE=0
W=4 NC=32 DEQ=int GATHER=2 S=3 IDXPF=1
W=4 NC=32 DEQ=int GATHER=2 S=3 IDXPF=1 COMPUTE=0
W=4 NC=32 DEQ=int GATHER=2 S=3 IDXPF=1 EXACT=0
W=4 NC=32 DEQ=int GATHER=2 S=3 IDXPF=1 REG=168
W=4 NC=32 DEQ=int GATHER=2 S=3 IDXPF=1 PROD=1
W=4 NC=32 DEQ=int GATHER=2 S=4 IDXPF=1 PROD=1
W=4 NC=32 DEQ=int GATHER=2 S=3 IDXPF=1 PROD=1 EXACT=0
W=4 NC=32 DEQ=int GATHER=2 S=3 IDXPF=1 PROD=1 REG=200
W=4 NC=32 DEQ=int GATHER=2 S=2 IDXPF=1 PROD=1 REG=200
LIST
cat variants.txt
