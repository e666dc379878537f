"""hn_check.py's reference and comparison, tried without a GPU: the same inputs go through a
heads-in-N kernel in ptxgen's emulator (hn_emu.go) and through hn_check.compare(), which must pass,
and must fail on a corrupted output. Needs torch (CPU is enough) and Go; run from the repository
root:

    python3 scripts/proto/hn_selftest.py PTX "LINE"

where LINE is core_gen.py's output line of the kernel (name smem threads NC bytes GATHER H).
"""
import os
import subprocess
import sys
import tempfile

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hn_check  # noqa: E402

GRID, NTILES = 2, 5


def main():
    ptx, line = sys.argv[1], sys.argv[2].split()
    smem, nc, heads = int(line[1]), int(line[3]), int(line[6])
    dumps = line[0].endswith("_dumps")
    gen = torch.Generator()
    gen.manual_seed(7)
    pool, npages = hn_check.make_pool("cpu", gen, nbytes=24 * hn_check.PAGE_STRIDE)
    idx = torch.randint(0, npages * hn_check.PAGE, (GRID * hn_check.TILES_PER_CTA * nc,), dtype=torch.int32,
                        generator=gen)
    q = (0.2 * torch.randn((heads, 512), generator=gen)).to(torch.bfloat16)
    with tempfile.TemporaryDirectory() as d:
        for n, t in (("pool", pool), ("idx", idx), ("q", q.view(torch.int16))):
            t.numpy().tofile(f"{d}/{n}.bin")
        cmd = ["go", "run", "scripts/proto/hn_emu.go", "-ptx", ptx, "-h", str(heads), "-nc", str(nc), "-smem", str(smem),
               "-grid", str(GRID), "-ntiles", str(NTILES), "-in", d, "-out", f"{d}/out.bin"] + (["-dumps"] if dumps else [])
        print(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.strip())
        out = torch.frombuffer(bytearray(open(f"{d}/out.bin", "rb").read()), dtype=torch.float32).view(GRID, -1)
    res = hn_check.compare(out, pool, idx, q, nc, heads, dumps, NTILES)
    bad = out.clone()
    bad[1, 3 * 512 + 100] *= 1.5                    # one O value of CTA 1, head 3
    res_bad = hn_check.compare(bad, pool, idx, q, nc, heads, dumps, NTILES)
    print(f"hn_check.compare on the emulator's output: {res}; with one O value off by half: {res_bad}")
    if not res.startswith("PASS") or not res_bad.startswith("FAIL"):
        sys.exit(1)


if __name__ == "__main__":
    main()
