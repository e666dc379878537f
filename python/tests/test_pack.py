"""A call's launches from the shipped manifests: kernels, grids, packed parameters."""

import os
import unittest

from helpers import vllm_call
from ptxgen_mla import catalog, pack
from ptxgen_mla.call import check_call
from ptxgen_mla.errors import PtxgenMLAError
from ptxgen_mla.manifest import load_manifest

MAN = load_manifest(os.path.join(catalog.PACKAGE_DIR, "mla_h64_k128p64_k512p64_exact.json.xz"))
SWA = load_manifest(os.path.join(catalog.PACKAGE_DIR, "mla_h16_k128p64_exact.json.xz"))
BIG = 1 << 40


def sizes(spec, short=None):
    s = {"q": (BIG, "bf16"), "cache0": (BIG, "u8"), "idx0": (BIG, "i32"), "len0": (BIG, "i32"), "cache1": (BIG, "u8"),
         "idx1": (BIG, "i32"), "len1": (BIG, "i32"), "sink": (BIG, "f32"), "out": (BIG, "bf16"), "lse": (BIG, "f32")}
    if short:
        s.update(short)
    return s


def workspace(man, target, sms):
    return {n: (0x7E0000000000 + i * (1 << 32), b) for i, (n, b) in enumerate(pack.workspace_sizes(man, target, sms).items())}


def launches(man, target, sms, short=None, **call):
    spec = check_call(**vllm_call(**call), scale=512 ** -0.5, precision="exact")
    choice = man.rule(target).choose(spec.rows, sms)
    return spec, choice, pack.plan_launches(man, target, choice, spec, sizes(spec, short), workspace(man, target, sms))


class Launches(unittest.TestCase):
    def test_h200_one_row_splits_and_combines(self):
        spec, choice, ls = launches(MAN, "sm_90", 132, b=1)
        self.assertGreater(choice.split, 1)
        self.assertEqual([kl.entry for kl in ls], choice.kernels)
        self.assertTrue(ls[1].entry.startswith("mla_combine_") and ls[1].programmatic)
        self.assertEqual(ls[0].grid[1], 1)
        self.assertEqual(ls[0].grid[2], choice.split)
        by = {p.name: p for p in ls[0].params}
        self.assertEqual(by["q"].source, "slot")
        self.assertEqual(by["q"].value, "q")
        self.assertEqual(by["q_stride_t"].value, 0)  # one row: the row stride steps over nothing
        self.assertEqual(by["page_stride0"].value, 37440)
        self.assertEqual(by["slots1"].value, 64 * 64)
        self.assertEqual(by["split"].value, choice.split)
        self.assertEqual(by["ws_o"].source, "value")
        comb = {p.name: p for p in ls[1].params}
        self.assertEqual((comb["out"].value, comb["lse"].value, comb["sink"].value), ("out", "lse", "sink"))

    def test_many_rows_run_unsplit(self):
        for target, sms in (("sm_90", 132), ("sm_120", 188)):
            spec, choice, ls = launches(MAN, target, sms, b=4096)
            self.assertEqual(choice.split, 1)
            self.assertEqual(len(ls), 1)
            self.assertEqual(ls[0].grid[1], 4096)

    def test_one_segment_kernels_take_no_extra_pointers(self):
        spec, choice, ls = launches(SWA, "sm_120", 188, b=2, h=16, k1=0)
        names = {p.value for kl in ls for p in kl.params if p.source == "slot"}
        self.assertEqual(names, {"q", "cache0", "idx0", "len0", "sink", "out", "lse"})

    def test_refusals_of_the_go_launcher(self):
        with self.assertRaisesRegex(PtxgenMLAError, "kernel may access"):
            launches(MAN, "sm_90", 132, short={"out": (100, "bf16")}, b=2)
        with self.assertRaisesRegex(PtxgenMLAError, "its strides reach"):
            launches(MAN, "sm_90", 132, short={"cache0": (37440 * 31, "u8")}, b=2)
        with self.assertRaisesRegex(PtxgenMLAError, "a f32 tensor, want bf16"):
            launches(MAN, "sm_90", 132, short={"q": (BIG, "f32")}, b=2)
        spec, choice, _ = launches(MAN, "sm_90", 132, b=2)
        with self.assertRaisesRegex(PtxgenMLAError, "page_stride0 = 37448, want a multiple of 16"):
            # call.py refuses it first; the manifest's alignment is checked again here
            pack.plan_launches(MAN, "sm_90", choice, spec._replace(page_stride0=37448), sizes(spec),
                               workspace(MAN, "sm_90", 132))
        small_ws = {n: (a, 16) for n, (a, _) in workspace(MAN, "sm_90", 132).items()}
        if choice.split > 1:
            with self.assertRaisesRegex(PtxgenMLAError, "workspace of 16 bytes"):
                pack.plan_launches(MAN, "sm_90", choice, spec, sizes(spec), small_ws)

    def test_rows_past_the_capacity(self):
        spec = check_call(**vllm_call(b=65535), scale=512 ** -0.5, precision="exact")
        man = load_manifest(os.path.join(catalog.PACKAGE_DIR, "mla_h64_k128p64_k512p64_exact.json.xz"))
        man.capacity = 100
        with self.assertRaisesRegex(PtxgenMLAError, "65535 rows, want 0..100"):
            pack.plan_launches(man, "sm_90", man.rule("sm_90").choose(1, 132), spec, sizes(spec), {})


if __name__ == "__main__":
    unittest.main()
