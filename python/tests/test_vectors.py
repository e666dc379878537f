"""The test-vector reader and the spec's comparison, on the repository's vector folders."""

import json
import math
import os
import shutil
import struct
import tempfile
import time
import unittest

from helpers import VECTORS
from ptxgen_mla import vectors
from ptxgen_mla.catalog import Catalog, Key
from ptxgen_mla.errors import PtxgenMLAError

FOLDERS = vectors.folders_under(VECTORS)


def bf16_round(x):
    if not math.isfinite(x):
        return x
    (u,) = struct.unpack("<I", struct.pack("<f", x))
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return struct.unpack("<f", struct.pack("<I", u << 16))[0]


class Reader(unittest.TestCase):
    def test_reads_every_folder(self):
        self.assertEqual(len(FOLDERS), 5)
        for f in FOLDERS:
            v = vectors.load_folder(f)
            lay = vectors.call_layout(v)
            self.assertEqual(lay["q_shape"], (v["T"], 1, v["H"], 512))
            for s, g in zip(lay["segments"], v["meta"]["segments"]):
                self.assertEqual(s["view_stride"][0], g["page_stride"])
                self.assertEqual(len(v["files"][g["cache"]]), g["pages"] * g["page_stride"])

    def test_every_folder_has_a_shipped_kernel_for_the_gpu_test(self):
        cat = Catalog(env="")
        for f in FOLDERS:
            v = vectors.load_folder(f)
            segs = v["meta"]["segments"]
            k1, p1 = (segs[1]["K"], segs[1]["page_size"]) if len(segs) > 1 else (0, 0)
            key = Key(v["H"], segs[0]["K"], segs[0]["page_size"], k1, p1, "exact", v["meta"]["sm_scale"])
            man, target = cat.find(key, v["T"], "sm_90")
            self.assertEqual(target, "sm_90", f)

    def test_refusals(self):
        src = FOLDERS[0]
        with tempfile.TemporaryDirectory() as d:
            def folder(name, edit=None, special=None):
                dst = os.path.join(d, name)
                shutil.copytree(src, dst)
                if edit:
                    p = os.path.join(dst, "meta.json")
                    with open(p) as f:
                        m = json.load(f)
                    edit(m)
                    with open(p, "w") as f:
                        json.dump(m, f)
                if special:
                    special(dst)
                return dst

            def fifo(dst):
                os.remove(os.path.join(dst, "q.bf16"))
                os.mkfifo(os.path.join(dst, "q.bf16"))

            def zero(dst):
                os.remove(os.path.join(dst, "q.bf16"))
                os.symlink("/dev/zero", os.path.join(dst, "q.bf16"))

            for name, dst, want in [
                ("fifo", folder("fifo", special=fifo), "q.bf16 is not a regular file"),
                ("zero", folder("zero", special=zero), "q.bf16 is a symbolic link"),
                ("escape", folder("escape", lambda m: m["segments"][0].update(idx="../idx0.i32")), "want a file name"),
                ("T string", folder("tstr", lambda m: m.update(T="1")), "meta.json T"),
                ("no counts", folder("nocounts", lambda m: m.pop("valid_candidates_per_row")), "valid_candidates_per_row"),
                ("stride", folder("stride", lambda m: m["segments"][0].update(page_stride=1)), "page_stride"),
                ("scale", folder("scale", lambda m: m.update(sm_scale=1e39)), "sm_scale"),
                ("deep", folder("deep", special=lambda dst: open(os.path.join(dst, "meta.json"), "w").write("[" * 100000)),
                 "nested more than"),
            ]:
                start = time.monotonic()
                with self.subTest(name=name), self.assertRaisesRegex(PtxgenMLAError, want):
                    vectors.load_folder(dst)
                self.assertLess(time.monotonic() - start, 2.0)
            with self.assertRaisesRegex(PtxgenMLAError, "more than 1 "):
                vectors.load_folder(src, limit=1)
            with self.assertRaisesRegex(PtxgenMLAError, "no meta.json"):
                vectors.folders_under(tempfile.mkdtemp(dir=d))


class Compare(unittest.TestCase):
    def test_spec_thresholds(self):
        v = vectors.load_folder(FOLDERS[0])
        want = list(struct.unpack(f"<{len(v['files']['out_ref.f64']) // 8}d", v["files"]["out_ref.f64"]))
        got = [bf16_round(x) for x in want]
        ok, r = vectors.compare(got, want, vectors.OUT_TOL)
        self.assertTrue(ok, r)
        j = next(i for i, x in enumerate(want) if abs(x) > 1e-2)
        bad = list(got)
        bad[j] += 0.05 + abs(bad[j])
        self.assertFalse(vectors.compare(bad, want, vectors.OUT_TOL)[0])
        bad[j] = float("nan")
        ok, r = vectors.compare(bad, want, vectors.OUT_TOL)
        self.assertFalse(ok)
        self.assertEqual(r["nan"], 1)

    def test_infinite_lse_must_match(self):
        want = [1.0, math.inf]
        self.assertTrue(vectors.compare([1.0, math.inf], want, vectors.LSE_TOL)[0])
        self.assertFalse(vectors.compare([1.0, -math.inf], want, vectors.LSE_TOL)[0])
        self.assertFalse(vectors.compare([1.0], want, vectors.LSE_TOL)[0])

    def test_bf16p_checks_rel_l2(self):
        want = [1.0] * 100
        got = [1.0 + 0.005] * 100
        ok, r = vectors.compare(got, want, vectors.OUT_TOL_BF16P)
        self.assertFalse(ok)
        self.assertAlmostEqual(r["rel_l2"], 0.005)


if __name__ == "__main__":
    unittest.main()
