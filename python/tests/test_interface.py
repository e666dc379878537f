"""The call's signature, the schedule object, the missing-torch error, and (where torch
is installed) the reading of real tensors. The launches themselves run in gpu_test."""

import ast
import inspect
import os
import subprocess
import sys
import tarfile
import unittest

from helpers import ANCHOR_CANDIDATES, HAVE_TORCH, PYTHON_DIR
import ptxgen_mla
from ptxgen_mla import interface
from ptxgen_mla.errors import PtxgenMLAError

# flash_mla_interface.flash_mla_with_kvcache at the anchor's commit, then vLLM's out= and
# this package's precision=.
FLASHMLA_PARAMS = [("q", None), ("k_cache", None), ("block_table", None), ("cache_seqlens", None), ("head_dim_v", None),
                   ("tile_scheduler_metadata", None), ("num_splits", None), ("softmax_scale", None), ("causal", False),
                   ("is_fp8_kvcache", False), ("indices", None), ("attn_sink", None), ("extra_k_cache", None),
                   ("extra_indices_in_kvcache", None), ("topk_length", None), ("extra_topk_length", None)]
NO_DEFAULT = inspect.Parameter.empty


def anchor_signature():
    """[(name, default)] of FlashMLA's own flash_mla_with_kvcache, from the anchor's tarball."""
    for path in ANCHOR_CANDIDATES:
        if os.path.isfile(path):
            with tarfile.open(path, "r:xz") as t:
                member = next(m for m in t.getmembers() if m.name.endswith("flash_mla/flash_mla_interface.py"))
                src = t.extractfile(member).read().decode()
            fn = next(n for n in ast.parse(src).body if isinstance(n, ast.FunctionDef) and n.name == "flash_mla_with_kvcache")
            args = fn.args.args
            defaults = [None] * (len(args) - len(fn.args.defaults)) + [ast.literal_eval(d) for d in fn.args.defaults]
            return [(a.arg, d) for a, d in zip(args, defaults)]
    return None


class Signature(unittest.TestCase):
    def test_flashmla_parameters_then_out_and_precision(self):
        params = list(inspect.signature(ptxgen_mla.flash_mla_with_kvcache).parameters.values())
        got = [(p.name, None if p.default is NO_DEFAULT else p.default) for p in params]
        self.assertEqual(got, FLASHMLA_PARAMS + [("out", None), ("precision", "exact")])
        for p in params[:6]:
            self.assertIs(p.default, NO_DEFAULT, p.name)

    def test_against_the_anchor(self):
        want = anchor_signature()
        if want is None:
            self.skipTest("the FlashMLA anchor tarball is not beside this checkout (../shared/anchors/flashmla)")
        params = list(inspect.signature(ptxgen_mla.flash_mla_with_kvcache).parameters)
        self.assertEqual(params[:len(want)], [n for n, _ in want])
        self.assertEqual(want, FLASHMLA_PARAMS)

    def test_get_mla_metadata(self):
        meta, none = ptxgen_mla.get_mla_metadata(1, 2, cache_seqlens=None)
        self.assertIsNone(none)
        self.assertIsInstance(meta, ptxgen_mla.FlashMLASchedMeta)
        self.assertFalse(meta.have_initialized)
        self.assertIsNot(ptxgen_mla.get_mla_metadata()[0], meta)


class Schedule(unittest.TestCase):
    def test_first_call_records_later_calls_must_match(self):
        cfg = interface.SchedConfig(4, 1, 64, 64, 1, False, True, 128, 64, 512)
        meta = ptxgen_mla.FlashMLASchedMeta()
        interface._check_sched(meta, cfg)
        self.assertTrue(meta.have_initialized)
        interface._check_sched(meta, cfg)
        with self.assertRaisesRegex(PtxgenMLAError, r"sched_meta.config.b \(4\) must be equal to this call's 8"):
            interface._check_sched(meta, cfg._replace(b=8))
        with self.assertRaisesRegex(PtxgenMLAError, "extra_topk"):
            interface._check_sched(meta, cfg._replace(extra_topk=1024))
        interface._check_sched(None, cfg)  # vLLM on sm_12x passes None

    def test_flashmla_s_own_schedule_objects_work(self):
        class Config:  # FlashMLASchedMeta.Config's fields
            def __init__(self, *v):
                for f, x in zip(interface.SchedConfig._fields, v):
                    setattr(self, f, x)
        cfg = interface.SchedConfig(4, 1, 64, 64, 1, False, True, 128, None, None)
        theirs = type("FlashMLASchedMeta", (), {})()
        theirs.have_initialized, theirs.config = True, Config(*cfg)
        interface._check_sched(theirs, cfg)
        with self.assertRaisesRegex(PtxgenMLAError, "topk"):
            interface._check_sched(theirs, cfg._replace(topk=64))
        with self.assertRaisesRegex(PtxgenMLAError, "want what get_mla_metadata"):
            interface._check_sched(object(), cfg)


BLOCK_TORCH = ("import sys\nclass Block:\n    def find_spec(self, name, path=None, target=None):\n"
               "        if name == 'torch' or name.startswith('torch.'):\n            raise ImportError('No module named torch')\n"
               "sys.meta_path.insert(0, Block())\n")


class WithoutTorch(unittest.TestCase):
    def run_py(self, code):
        return subprocess.run([sys.executable, "-c", BLOCK_TORCH + code], cwd=PYTHON_DIR, capture_output=True, text=True,
                              timeout=120)

    def test_the_call_says_torch_is_missing_in_one_line(self):
        r = self.run_py("import ptxgen_mla\ntry:\n    ptxgen_mla.flash_mla_with_kvcache(1, 2, None, None, 512, None)\n"
                        "except ptxgen_mla.PtxgenMLAError as e:\n    print('ERR', e)\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertRegex(r.stdout, r"^ERR ptxgen_mla needs torch for flash_mla_with_kvcache \(.*\); install torch")
        self.assertEqual(len(r.stdout.splitlines()), 1)

    def test_gpu_test_exits_2_with_one_line(self):
        r = self.run_py("import sys\nfrom ptxgen_mla import gpu_test\nsys.exit(gpu_test.main(['--quick']))\n")
        self.assertEqual(r.returncode, 2)
        self.assertNotIn("Traceback", r.stderr)
        self.assertIn("gpu_test: torch is not importable", r.stderr)

    def test_package_imports_with_the_standard_library_only(self):
        r = self.run_py("import ptxgen_mla, ptxgen_mla.vllm_plugin, ptxgen_mla.gpu_test, ptxgen_mla.vectors\n"
                        "print(len(ptxgen_mla.kernel_configs()[0]))\n")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertGreater(int(r.stdout), 40)


@unittest.skipUnless(HAVE_TORCH, "torch is not installed: real tensors are not read here (gpu_test covers them)")
class WithTorch(unittest.TestCase):
    """On the CPU with any torch (Debian's 1.13 included): tensors are read as the call reads them."""

    def setUp(self):
        import torch
        self.torch = torch
        interface.need_torch()

    def vllm_tensors(self, b=3):
        torch = self.torch
        h, B = 16, 64
        output = torch.zeros(b + 2, h, 512, dtype=torch.bfloat16)[:b]   # vLLM: output[:num_decode_tokens]
        q = torch.zeros(b, h, 512, dtype=torch.bfloat16).unsqueeze(1)
        raw = torch.zeros(10, 37440, dtype=torch.uint8)                   # blocks padded to 65 x 576 bytes
        k_cache = raw.view(-1).as_strided((10, B, 1, 584), (37440, 584, 584, 1))
        extra = raw.view(-1).as_strided((10, B, 1, 584), (37440, 584, 584, 1))
        return dict(q=q, k_cache=k_cache, indices=torch.zeros(b, 1, 128, dtype=torch.int32),
                    topk_length=torch.zeros(b, dtype=torch.int32), attn_sink=torch.zeros(h, dtype=torch.float32),
                    extra_k_cache=extra, extra_indices=torch.zeros(b, 1, 512, dtype=torch.int32),
                    extra_topk_length=torch.zeros(b, dtype=torch.int32), out=output.unsqueeze(1))

    def test_tensors_read_as_flashmla_s_layout(self):
        from ptxgen_mla.call import check_call
        t = self.vllm_tensors()
        infos = {k: interface._info(v)._replace(device=0) for k, v in t.items()}
        spec = check_call(**infos, scale=512 ** -0.5, precision="exact")
        self.assertEqual((spec.rows, spec.h_q, spec.page_stride0, spec.slots0), (3, 16, 37440, 640))
        self.assertEqual(spec.key[:5], (16, 128, 64, 512, 64))

    def test_cpu_tensors_are_refused(self):
        t = self.vllm_tensors()
        with self.assertRaisesRegex(PtxgenMLAError, "q is on the CPU"):
            ptxgen_mla.flash_mla_with_kvcache(t["q"], t["k_cache"], None, None, 512, None, is_fp8_kvcache=True,
                                              indices=t["indices"])

    def test_non_tensors_are_named(self):
        t = self.vllm_tensors()
        with self.assertRaisesRegex(PtxgenMLAError, r"topk_length: list \[3\]: want a torch.Tensor or None"):
            ptxgen_mla.flash_mla_with_kvcache(t["q"], t["k_cache"], None, None, 512, None, is_fp8_kvcache=True,
                                              indices=t["indices"], topk_length=[3])

    def test_plan_key_follows_strides(self):
        t = self.vllm_tensors()
        args = [t["q"], t["k_cache"], t["indices"], None, None, None, None, None, None, 512, None, None, False, True, "exact"]
        k1 = interface._key(*args)
        self.assertEqual(k1, interface._key(*args))
        args[1] = t["k_cache"].as_strided((10, 64, 1, 584), (37376, 584, 584, 1))
        self.assertNotEqual(k1, interface._key(*args))


if __name__ == "__main__":
    unittest.main()
