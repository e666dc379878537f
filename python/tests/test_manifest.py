"""The manifest reader refuses bad manifests with one PtxgenMLAError, quickly (issue 31's
list of the example host's defects: huge plan values, deep JSON, tracebacks)."""

import copy
import json
import lzma
import os
import tempfile
import time
import unittest

from helpers import REPO  # noqa: F401
from ptxgen_mla import _files, catalog
from ptxgen_mla.errors import PtxgenMLAError
from ptxgen_mla.manifest import check_manifest, command_flags, load_manifest
from ptxgen_mla.plan import Rule

SRC = os.path.join(catalog.PACKAGE_DIR, "mla_h64_k128p64_k512p64_exact.json.xz")


def clean():
    with open(SRC, "rb") as f:
        return json.loads(lzma.decompress(f.read()))


def plan_target(m):
    return next(t for t in m["targets"] if t["target"] == "sm_90")


class Refusals(unittest.TestCase):
    def refused(self, edit, want, text=None):
        with tempfile.TemporaryDirectory() as d:
            m = clean()
            if edit:
                edit(m)
            path = os.path.join(d, "m.json")
            with open(path, "w") as f:
                f.write(text if text is not None else json.dumps(m))
            start = time.monotonic()
            with self.assertRaises(PtxgenMLAError) as cm:
                load_manifest(path)
            self.assertLess(time.monotonic() - start, 2.0)
            self.assertIn(want, str(cm.exception))
            self.assertNotIn("Traceback", str(cm.exception))

    def test_fields(self):
        fam = lambda k, v: lambda m: plan_target(m)["plan"]["families"][0].update({k: v})  # noqa: E731
        k0 = lambda m: plan_target(m)["kernels"][0]  # noqa: E731
        cases = [
            (lambda m: k0(m).pop("block"), "missing block"),
            (lambda m: k0(m)["params"][1].update(align="16"), "align: '16': want an integer"),
            (lambda m: m.update(capacity=10**9), "capacity: 1000000000: want an integer in 0..65535"),
            (lambda m: m.update(version=4), "want 'ptxgen-launch-manifest' version 5"),
            (fam("head_blocks", 0), "head_blocks: 0: want an integer in 1.."),
            (fam("warps", 64), "warps: 64: want an integer in 1..32"),
            (fam("warp_grid", [4, 4]), "warp_grid: [4, 4]: want at most"),
            (fam("score_warps", 40), "score_warps: 40"),
            (lambda m: plan_target(m).update(ptx="../x.ptx"), "want a file name in the folder"),
            (lambda m: plan_target(m).update(ptx="/etc/passwd"), "want a file name in the folder"),
            (lambda m: k0(m)["grid"][1].update(param="tokens"), "grid[1].param: 'tokens'"),
            (lambda m: k0(m).update(cluster=[2, 1, 1]), "unknown field 'cluster'"),
            (lambda m: k0(m).update(shared_opt_in=not k0(m)["shared_opt_in"]), "shared_opt_in"),
            (lambda m: m["targets"].append(copy.deepcopy(m["targets"][0])), "twice"),
        ]
        for edit, want in cases:
            with self.subTest(want=want):
                self.refused(edit, want)

    def test_huge_plan_examples_are_refused_not_replayed_for_hours(self):
        # The example host accepted rows and sms of 2^31-1 in a plan example, and
        # replaying it (MaxParts walks the rows) looped for hours.
        def huge(m):
            plan_target(m)["plan_examples"][0].update(rows=2**31 - 1, sms=2**31 - 1)
        self.refused(huge, "plan_examples[0].rows: 2147483647: want an integer in 0..65535")

        def huge_sms(m):
            plan_target(m)["plan_examples"][0].update(sms=2**31 - 1)
        self.refused(huge_sms, "sms: 2147483647: want an integer in 1..65536")
        with self.assertRaisesRegex(PtxgenMLAError, "want an integer in 0..65535"):
            Rule(plan_target(clean())["plan"]).max_parts(2**31 - 1, 132)
        start = time.monotonic()
        Rule(plan_target(clean())["plan"]).max_parts(65535, 65536)
        self.assertLess(time.monotonic() - start, 5.0)

    def test_deep_json_is_one_error_not_a_recursion_error(self):
        self.refused(None, "nested more than", text="[" * 100000)
        self.refused(None, "nested more than", text='{"a":' * 100000)
        self.refused(None, "not JSON", text='{"format": ')
        self.refused(None, "not JSON", text='{"capacity": NaN}')
        self.refused(None, "want 'ptxgen-launch-manifest'", text="[]")
        with self.assertRaisesRegex(PtxgenMLAError, "not UTF-8"):
            _files.parse_json(b"\xff\xfe", "m.json")

    def test_files_that_are_not_regular(self):
        with tempfile.TemporaryDirectory() as d:
            fifo = os.path.join(d, "fifo.json")
            os.mkfifo(fifo)
            for path, want in ((fifo, "not a regular file"), ("/dev/zero", "not a regular file"),
                               (os.path.join(d, "none.json"), "No such file")):
                start = time.monotonic()
                with self.assertRaisesRegex(PtxgenMLAError, want):
                    load_manifest(path)
                self.assertLess(time.monotonic() - start, 2.0)
            link = os.path.join(d, "m_sm_90.ptx")
            os.symlink("/dev/zero", link)
            with self.assertRaisesRegex(PtxgenMLAError, "symbolic link"):
                _files.read_file(link, 100)

    def test_check_accepts_every_shipped_manifest(self):
        for name in os.listdir(catalog.PACKAGE_DIR):
            if name.endswith(".json.xz"):
                with self.subTest(name=name), open(os.path.join(catalog.PACKAGE_DIR, name), "rb") as f:
                    check_manifest(json.loads(lzma.decompress(f.read())))

    def test_command_flags(self):
        f = command_flags("ptxgen gen -kernel mla_decode -heads 64 -len0=true -scale 0 -manifest m.json")
        self.assertEqual(f, {"kernel": "mla_decode", "heads": "64", "len0": "true", "scale": "0", "manifest": "m.json"})
        for bad in ("gcc -O2", "ptxgen gen -heads", "ptxgen gen heads 64", "ptxgen gen -k '1"):
            with self.subTest(bad=bad), self.assertRaises(PtxgenMLAError):
                command_flags(bad)

    def test_a_manifest_without_a_plan_launches_every_kernel(self):
        from ptxgen_mla import pack
        from ptxgen_mla.call import check_call
        from helpers import vllm_call
        m = clean()
        t = plan_target(m)
        t["plan"] = None
        t["plan_examples"] = []
        t["kernels"] = [k for k in t["kernels"] if k["entry"] == "mla_decode_h64"]
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "m.json")
            with open(path, "w") as f:
                json.dump(m, f)
            man = load_manifest(path)
            self.assertIsNone(man.rule("sm_90"))
            spec = check_call(**vllm_call(b=3), scale=512 ** -0.5, precision="exact")
            sizes = {n: (1 << 40, e) for n, e in (("q", "bf16"), ("cache0", "u8"), ("idx0", "i32"), ("len0", "i32"),
                                                  ("cache1", "u8"), ("idx1", "i32"), ("len1", "i32"), ("sink", "f32"),
                                                  ("out", "bf16"), ("lse", "f32"))}
            launches = pack.plan_launches(man, "sm_90", None, spec, sizes, {})
            self.assertEqual([kl.entry for kl in launches], ["mla_decode_h64"])
            self.assertEqual(launches[0].grid, (1, 3, 1))


if __name__ == "__main__":
    unittest.main()
