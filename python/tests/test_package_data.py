"""The shipped kernels: index, manifests, PTX, and the plan port against the Go's choices."""

import hashlib
import json
import lzma
import os
import time
import unittest

from helpers import PYTHON_DIR
from ptxgen_mla import catalog, pack
from ptxgen_mla.catalog import Catalog, Key, key_of_manifest, read_index
from ptxgen_mla.errors import PtxgenMLAError
from ptxgen_mla.manifest import load_manifest

KERNELS = catalog.PACKAGE_DIR


def load_index():
    with open(os.path.join(KERNELS, "index.json")) as f:
        return json.load(f)


class PackageData(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.index = load_index()
        cls.manifests = {c["manifest"]: load_manifest(os.path.join(KERNELS, c["manifest"])) for c in cls.index["configs"]}

    def test_index_lists_every_file_and_their_digests(self):
        listed = {"index.json"}
        for c in self.index["configs"]:
            for name, digest in c["sha256"].items():
                listed.add(name + ".xz")
                with open(os.path.join(KERNELS, name + ".xz"), "rb") as f:
                    self.assertEqual(hashlib.sha256(lzma.decompress(f.read())).hexdigest(), digest, name)
        self.assertEqual(set(os.listdir(KERNELS)) - {"__pycache__"}, listed)

    def test_index_says_what_each_manifest_was_generated_for(self):
        for c in self.index["configs"]:
            man = self.manifests[c["manifest"]]
            with self.subTest(manifest=c["manifest"]):
                self.assertEqual(key_of_manifest(man), Key(c["heads"], c["k0"], c["page0"], c["k1"], c["page1"],
                                                           c["precision"], c["scale"]))
                self.assertEqual(man.capacity, 65535)
                self.assertEqual(sorted(man.targets), sorted(c["targets"]))
                self.assertEqual(man.data["command"], c["command"])
                self.assertTrue(c["manifest"].startswith(catalog.config_name(
                    c["heads"], c["k0"], c["page0"], c["k1"], c["page1"], c["precision"])))

    def test_deepseek_v4_shapes_are_shipped(self):
        keys = {k for k, _, _, _ in read_index(KERNELS)}
        for h in (8, 16, 32, 64, 128):
            for prec in ("exact", "bf16p"):
                self.assertIn(Key(h, 128, 64, 512, 64, prec, 0.0), keys)
                self.assertIn(Key(h, 128, 64, 0, 0, prec, 0.0), keys)
        targets = {tuple(c["targets"]) for c in self.index["configs"] if c["k1"] == 512 and c["page0"] == 64}
        self.assertEqual(targets, {("sm_120", "sm_90", "sm_86", "sm_80")})

    def test_package_stays_small(self):
        total = sum(os.path.getsize(os.path.join(KERNELS, f)) for f in os.listdir(KERNELS))
        self.assertLess(total, 12 << 20, "the package data travels with every checkout")

    def test_every_ptx_reads_and_names_its_kernels(self):
        for name, man in self.manifests.items():
            for target, t in man.targets.items():
                with self.subTest(manifest=name, target=target):
                    ptx = man.ptx(target)
                    self.assertTrue(ptx.startswith(b"//"))
                    self.assertIn(f".target {target}".encode(), ptx)
                    for k in t["kernels"]:
                        self.assertIn(f".entry {k['entry']}(".encode(), ptx)

    def test_plan_port_reproduces_the_go_choices(self):
        n = 0
        for name, man in self.manifests.items():
            for target, t in man.targets.items():
                rule = man.rule(target)
                for ex in t.get("plan_examples", []):
                    c = rule.choose(ex["rows"], ex["sms"])
                    with self.subTest(manifest=name, target=target, rows=ex["rows"], sms=ex["sms"]):
                        self.assertEqual((c.split, c.kernels, rule.max_parts(ex["rows"], ex["sms"])),
                                         (ex["split"], ex["kernels"] or [], ex["max_parts"]))
                    n += 1
        self.assertGreater(n, 1000)

    def test_workspace_for_h200_and_rtx_pro_6000(self):
        man = self.manifests["mla_h64_k128p64_k512p64_exact.json.xz"]
        for target, sms in (("sm_90", 132), ("sm_120", 188)):
            sizes = pack.workspace_sizes(man, target, sms)
            parts = man.rule(target).max_parts(65535, sms)
            self.assertGreater(parts, 0)
            for w in man.targets[target]["workspace"]:
                self.assertEqual(sizes[w["name"]], max(w["bytes"] + w["per_part"] * parts, 16))


class CatalogFind(unittest.TestCase):
    def test_find_picks_the_target_the_device_runs(self):
        cat = Catalog(env="")
        key = Key(64, 128, 64, 512, 64, "exact", 0.0)
        for arch, want in (("sm_90", "sm_90"), ("sm_100", "sm_90"), ("sm_120", "sm_120"), ("sm_121", "sm_120"),
                           ("sm_89", "sm_86"), ("sm_86", "sm_86"), ("sm_80", "sm_80")):
            man, target = cat.find(key, 1, arch)
            self.assertEqual(target, want, arch)
            self.assertTrue(man.path.endswith("mla_h64_k128p64_k512p64_exact.json"))

    def test_a_missing_configuration_names_the_gen_command(self):
        cat = Catalog(env="")
        with self.assertRaises(PtxgenMLAError) as cm:
            cat.find(Key(24, 128, 64, 512, 64, "exact", 0.0), 1, "sm_90")
        msg = str(cm.exception)
        self.assertIn("no generated kernel for h_q=24, K0=128 in pages of 64, extra segment K1=512 in pages of 64", msg)
        self.assertIn("go run ./ptxgen gen -kernel mla_decode -max-tokens 65535 -heads 24 -k0 128 -page0 64 -k1 512 "
                      "-page1 64 -precision exact -targets sm_120,sm_90 -manifest DIR/mla_h24_k128p64_k512p64_exact.json", msg)
        self.assertIn("PTXGEN_MLA_KERNELS", msg)
        with self.assertRaisesRegex(PtxgenMLAError, "-scale 0.05"):
            cat.find(Key(64, 128, 64, 512, 64, "exact", 0.05), 1, "sm_90", 0.05)
        with self.assertRaisesRegex(PtxgenMLAError, "none of the kernel's targets"):
            cat.find(Key(64, 64, 69, 0, 0, "exact", 0.0), 1, "sm_89")  # a GPU-test shape: sm_90 only

    def test_the_default_scale_is_one_over_sqrt_512_as_an_f32_constant(self):
        self.assertEqual(catalog.scale_key(0), catalog.scale_key(512 ** -0.5))
        self.assertEqual(catalog.scale_key(0), catalog.scale_key(0.04419417382415922))
        self.assertNotEqual(catalog.scale_key(0), catalog.scale_key(0.0442))

    def test_an_added_folder_serves_its_configuration(self):
        import tempfile
        src = load_index()["configs"][0]
        with tempfile.TemporaryDirectory() as d:
            for name in src["sha256"]:
                with open(os.path.join(KERNELS, name + ".xz"), "rb") as f, open(os.path.join(d, name), "wb") as g:
                    g.write(lzma.decompress(f.read()))
            with open(os.path.join(d, "notes.json"), "w") as f:
                f.write("{}")
            cat = Catalog(package_dir=None, env=d)
            key = Key(src["heads"], src["k0"], src["page0"], src["k1"], src["page1"], src["precision"], 0.0)
            man, target = cat.find(key, 1, "sm_90")
            self.assertEqual(target, "sm_90")
            self.assertTrue(man.ptx("sm_90").startswith(b"//"))
            configs, skipped = cat.configs()
            self.assertEqual(len(configs), 1)
            self.assertEqual([os.path.basename(p) for p, _ in skipped], ["notes.json"])
            with self.assertRaisesRegex(PtxgenMLAError, "holds 65535 rows"):
                cat.find(key, 65536, "sm_90")

    def test_add_dir_refuses_what_is_not_a_folder(self):
        cat = Catalog(env="")
        for bad in ("/nonexistent/kernels", 3):
            with self.subTest(bad=bad), self.assertRaisesRegex(PtxgenMLAError, "kernel folder"):
                cat.add_dir(bad)


class GenScript(unittest.TestCase):
    def test_configurations_are_listed_with_their_gen_flags(self):
        import subprocess
        import sys
        out = subprocess.run([sys.executable, os.path.join(PYTHON_DIR, "tools", "package_kernels.py"), "list"],
                             capture_output=True, text=True, check=True).stdout
        self.assertEqual(len(out.splitlines()), len(load_index()["configs"]))
        self.assertIn("mla_h64_k128p64_k512p64_exact: ptxgen gen -kernel mla_decode -max-tokens 65535 -heads 64 "
                      "-k0 128 -page0 64 -k1 512 -page1 64 -precision exact -targets sm_120,sm_90,sm_86,sm_80", out)

    def test_index_loads_fast(self):
        start = time.monotonic()
        Catalog(env="").configs()
        self.assertLess(time.monotonic() - start, 2.0)


if __name__ == "__main__":
    unittest.main()


class PublicFunctionsValidate(unittest.TestCase):
    """Each public helper refuses bad arguments with PtxgenMLAError, naming the value (the
    example host raised raw TypeError, KeyError or ZeroDivisionError, or took 0 SMs)."""

    def test_each_refusal(self):
        from ptxgen_mla import gen_command, plan, targets, vectors
        from ptxgen_mla.manifest import command_flags
        cases = [
            (lambda: gen_command(0, 128, 64, 512, 64, "exact"), "heads 0"),
            (lambda: gen_command("64", 128, 64, 512, 64, "exact"), "heads '64'"),
            (lambda: gen_command(64, 128, 64, 512, 0, "exact"), "page1 0"),
            (lambda: gen_command(64, 128, 64, 512, 64, "fp8"), "precision 'fp8'"),
            (lambda: gen_command(64, 128, 64, 512, 64, "exact", 1e39), r"scale 1e\+39"),
            (lambda: gen_command(64, 128, 64, 512, 64, "exact", out_dir=None), "out_dir None"),
            (lambda: load_manifest(None), "manifest path None"),
            (lambda: command_flags(3), "command 3"),
            (lambda: plan.Rule({}), "not a checked manifest plan"),
            (lambda: plan.Rule(None), "not a checked manifest plan"),
            (lambda: Catalog(env="").find((64,), 1, "sm_90"), "want a catalog.Key"),
            (lambda: Catalog(env="").find(Key(64, 128, 64, 512, 64, "exact", 0), -1, "sm_90"), "rows -1"),
            (lambda: targets.pick_target("sm_90", "sm_90"), "want a list"),
            (lambda: vectors.load_folder(None), "want a path"),
            (lambda: vectors.folders_under(5), "want a path"),
            (lambda: vectors.compare([1], [1], {}), "want a dict"),
            (lambda: vectors.compare(["x"], [1.0], vectors.OUT_TOL), "sequences of numbers"),
        ]
        rule = load_manifest(os.path.join(KERNELS, "mla_h64_k128p64_k512p64_exact.json.xz")).rule("sm_90")
        cases += [(lambda: rule.choose(1, 0), "sms 0: want an integer in 1..65536"),
                  (lambda: rule.choose(1.5, 132), "rows 1.5"),
                  (lambda: rule.max_parts(65536, 132), "capacity 65536")]
        for fn, want in cases:
            with self.subTest(want=want), self.assertRaisesRegex(PtxgenMLAError, want):
                fn()
