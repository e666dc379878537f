#!/usr/bin/env bash
# GPU run 58 (session 8): the final generator. (1) the full gpu-check (its sanitizer rows now
# include the score-role CTA at T=64 split 1 and on the bf16 cache); (2) the Python package's
# GPU test (pip install ./python in a fresh venv over the machine's torch, then
# python -m ptxgen_mla.gpu_test beside FlashMLA, built from .anchors/flashmla); (3) racecheck
# and synccheck again on run 57's variants. Carry build, .anchors (flashmla and testvectors).
set -uo pipefail
export PATH=$PATH:/usr/local/cuda/bin:/usr/local/cuda/compute-sanitizer
(OUT=/tmp/fmlogs FLASHMLA_ROOT=/tmp/flashmla bash .anchors/flashmla/build.sh > /tmp/fmbuild.txt 2>&1; echo "flashmla build rc=$?" >> /tmp/fmbuild.txt) &
fm=$!
OUT_SAVE=$OUT
OUT=/tmp/gc timeout 400 bash scripts/gpu-check.sh > /tmp/gc.txt 2>&1
echo "gpu-check rc=$?"
OUT=$OUT_SAVE
tail -40 /tmp/gc.txt
tar czf $OUT/gc.tgz -C /tmp gc gc.txt 2>/dev/null
wait $fm; tail -2 /tmp/fmbuild.txt
python3 -m venv --system-site-packages /tmp/venv && /tmp/venv/bin/pip install -q --no-index --no-deps ./python > /tmp/pip.txt 2>&1; echo "pip rc=$?"; tail -3 /tmp/pip.txt
cd /tmp && PYTHONUNBUFFERED=1 timeout 240 /tmp/venv/bin/python -m ptxgen_mla.gpu_test --vectors $OLDPWD/.anchors/testvectors/mla_decode --flashmla /tmp/flashmla --json $OUT/gpu_test.json > $OUT/gpu_test.log 2>&1
echo "gpu_test rc=$?"; cd - >/dev/null
grep -E "FAIL|host time|gpu_test:" $OUT/gpu_test.log | head -30
B=build/ptxgen-gpu
for tool in racecheck synccheck; do
for a in "-heads 64 -tokens 8 -head-block 64 -split 1" "-heads 128 -tokens 8 -head-block 64" "-heads 64 -tokens 8 -head-block 64 -k1 2048" "-heads 64 -tokens 64 -head-block 64 -split 1 -precision bf16p" "-heads 64 -tokens 64 -head-block 64 -producer-warps 2 -tile 32 -split 1" "-heads 64 -tokens 64 -plan-target sm_120"; do
	r=$(timeout 120 compute-sanitizer --tool $tool $B check -gpu -emu=false -kernel mla_decode -target sm_90 $a 2>&1 | grep -E "SUMMARY|^PASS" | tr '\n' ' ')
	echo "$tool $a: $r"
done; done
