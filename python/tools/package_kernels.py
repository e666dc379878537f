#!/usr/bin/env python3
"""Generates the package's kernels (python/ptxgen_mla/kernels) with `ptxgen gen`, or checks
that the committed ones are what the generator writes today.

    python3 python/tools/package_kernels.py gen   [--ptxgen BIN]   # rewrite the package data
    python3 python/tools/package_kernels.py check [--ptxgen BIN]   # CI: fail when it is stale
    python3 python/tools/package_kernels.py list                   # the configurations and their gen flags

BIN is a built `ptxgen` (default: `go build` of ./ptxgen into a temporary folder). Each
configuration of CONFIGS is generated in a scratch folder with
`ptxgen gen -kernel mla_decode -max-tokens 65535 FLAGS -targets T -manifest NAME.json`;
the manifest and PTX files are stored xz-compressed (about 16x smaller: the package
stays a few MB), and index.json lists each configuration with the sha256 of every
uncompressed file. `check` regenerates and compares those digests, so it does not depend
on the xz library's output bytes; `gen` rewrites a compressed file only when its content
changed. Standard library only.
"""

import argparse
import concurrent.futures
import hashlib
import json
import lzma
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(HERE))
from ptxgen_mla.catalog import CAPACITY, INDEX_FORMAT, INDEX_NAME, INDEX_VERSION, config_name, gen_flags  # noqa: E402

KERNEL_DIR = os.path.join(os.path.dirname(HERE), "ptxgen_mla", "kernels")

# What the package ships. Heads are those of DeepSeek-V4 under tensor parallelism
# (128 or 64 per model, 8..128 per GPU); DSV4 is its decode (a 128-token window in
# pages of 64, 512 compressed top-k candidates in pages of 64), DSV4_SWA the window-only
# layers, TOPK1024 the wider top-k. TESTS are the shapes of FlashMLA's own sparse-decode
# test (tests/test_flash_mla_sparse_decoding.py: its top-k widths and odd page sizes, the
# corner cases and the production shapes) and the configurations of the shared and bench
# test-vector folders, for gpu_test on an H200 (sm_90 only).
HEADS = (8, 16, 32, 64, 128)
ALL_TARGETS = "sm_120,sm_90,sm_86,sm_80"
MAIN_TARGETS = "sm_120,sm_90"


def _configs():
    out = []
    for prec in ("exact", "bf16p"):
        for h in HEADS:
            out.append(((h, 128, 64, 512, 64, prec), ALL_TARGETS))
    for prec in ("exact", "bf16p"):
        for h in HEADS:
            out.append(((h, 128, 64, 0, 0, prec), MAIN_TARGETS))
    for h in HEADS:
        out.append(((h, 128, 64, 1024, 64, "exact"), MAIN_TARGETS))
    tests = [
        # FlashMLA's correctness shapes (s_k, topk, block_size) and extra ones, h_q 64 and 128.
        (64, 64, 69, 0, 0), (128, 576, 2, 0, 0), (64, 2048, 64, 0, 0), (128, 2048, 576, 0, 0),
        (64, 576, 61, 64, 5), (128, 64, 5, 2048, 576), (64, 2048, 1, 576, 123),
        # Its corner cases (all indices invalid, zero lengths, sink) and production shapes.
        (64, 576, 53, 576, 53), (128, 64, 61, 64, 61), (64, 128, 256, 512, 64), (128, 128, 256, 512, 64),
        # The shared test-vector folders that the main sets do not cover.
        (16, 128, 64, 100, 64), (24, 128, 53, 64, 2), (4, 128, 64, 32, 16), (8, 128, 32, 0, 0),
        # The bench shapes (bench.Shapes) past K1 = 512 and 1024.
        (64, 128, 64, 2048, 64), (128, 128, 64, 2048, 64), (16, 128, 64, 1152, 64),
    ]
    for t in tests:
        out.append((t + ("exact",), "sm_90"))
    return out


CONFIGS = _configs()


def build_ptxgen(tmp):
    exe = os.path.join(tmp, "ptxgen")
    subprocess.run(["go", "build", "-o", exe, "./ptxgen"], cwd=REPO, check=True)
    return exe


def generate_one(ptxgen, cfg, targets, out_dir):
    """Runs gen for one configuration in its own folder (the manifest records the
    command, so it must name the manifest relative to it); returns {file: bytes}."""
    name = config_name(*cfg)
    d = os.path.join(out_dir, name)
    os.makedirs(d)
    flags = gen_flags(*cfg)
    r = subprocess.run([ptxgen, "gen"] + flags + ["-targets", targets, "-manifest", name + ".json"],
                       cwd=d, capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"package_kernels: ptxgen gen {' '.join(flags)}: exit {r.returncode}\n{r.stderr}")
    files = {}
    for f in sorted(os.listdir(d)):
        with open(os.path.join(d, f), "rb") as fh:
            files[f] = fh.read()
    return name, cfg, targets, files


def generate_all(ptxgen, out_dir, jobs):
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        return list(ex.map(lambda ct: generate_one(ptxgen, ct[0], ct[1], out_dir), CONFIGS))


def index_of(results):
    configs = []
    for name, (h, k0, p0, k1, p1, prec), targets, files in results:
        man = json.loads(files[name + ".json"])
        configs.append({
            "manifest": name + ".json.xz", "heads": h, "k0": k0, "page0": p0, "k1": k1, "page1": p1,
            "precision": prec, "scale": 0.0, "capacity": man["capacity"], "targets": targets.split(","),
            "command": man["command"],
            "sha256": {f: hashlib.sha256(data).hexdigest() for f, data in sorted(files.items())},
        })
    gen = {json.loads(r[3][r[0] + ".json"])["generator"] for r in results}
    return {"format": INDEX_FORMAT, "version": INDEX_VERSION, "generator": " ".join(sorted(gen)),
            "regenerate": "bash python/gen.sh", "capacity": CAPACITY, "configs": configs}


def index_text(idx):
    return json.dumps(idx, indent=1, sort_keys=False) + "\n"


def decompressed(path):
    with open(path, "rb") as f:
        return lzma.decompress(f.read())


def write_package(results):
    os.makedirs(KERNEL_DIR, exist_ok=True)
    want = {INDEX_NAME}
    for _, _, _, files in results:
        for f, data in files.items():
            path = os.path.join(KERNEL_DIR, f + ".xz")
            want.add(f + ".xz")
            if os.path.exists(path) and decompressed(path) == data:
                continue  # unchanged content: keep the committed bytes
            with open(path, "wb") as fh:
                fh.write(lzma.compress(data, preset=9))
            print(f"package_kernels: wrote {os.path.relpath(path, REPO)}")
    for f in sorted(os.listdir(KERNEL_DIR)):
        if f not in want:
            os.remove(os.path.join(KERNEL_DIR, f))
            print(f"package_kernels: removed {f}")
    with open(os.path.join(KERNEL_DIR, INDEX_NAME), "w") as fh:
        fh.write(index_text(index_of(results)))


def check_package(results):
    """Problems of the committed package data against results (empty when current)."""
    problems = []
    path = os.path.join(KERNEL_DIR, INDEX_NAME)
    try:
        with open(path) as f:
            have = f.read()
    except OSError as e:
        return [f"{INDEX_NAME}: {e}"]
    if have != index_text(index_of(results)):
        problems.append(f"{INDEX_NAME} differs from the index of the configurations generated now")
    want = {INDEX_NAME}
    for _, _, _, files in results:
        for f, data in files.items():
            want.add(f + ".xz")
            p = os.path.join(KERNEL_DIR, f + ".xz")
            try:
                if decompressed(p) != data:
                    problems.append(f"{f}.xz differs from what ptxgen gen writes now")
            except (OSError, lzma.LZMAError) as e:
                problems.append(f"{f}.xz: {e}")
    extra = sorted(set(os.listdir(KERNEL_DIR)) - want)
    problems += [f"{f}: not written by the generator (remove it)" for f in extra]
    return problems


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("command", choices=["gen", "check", "list"])
    ap.add_argument("--ptxgen", help="a built ptxgen binary (default: go build ./ptxgen)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    a = ap.parse_args(argv)
    if a.command == "list":
        for cfg, targets in CONFIGS:
            print(f"{config_name(*cfg)}: ptxgen gen {' '.join(gen_flags(*cfg))} -targets {targets}")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        ptxgen = a.ptxgen or build_ptxgen(tmp)
        results = generate_all(ptxgen, os.path.join(tmp, "out"), max(1, a.jobs))
        if a.command == "gen":
            write_package(results)
            print(f"package_kernels: {len(results)} configurations in {os.path.relpath(KERNEL_DIR, REPO)}")
            return 0
        problems = check_package(results)
    if problems:
        print("package_kernels: the package's kernels are stale or changed by hand:")
        for p in problems:
            print("  " + p)
        print("After an intended change to the generator or to CONFIGS, run `bash python/gen.sh` and commit "
              "python/ptxgen_mla/kernels.")
        return 1
    print(f"package_kernels: {len(results)} configurations current")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
