"""The launcher's argument arrays, read back through a stand-in of cuda.bindings.driver:
each kernel gets its parameters in PTX order, the per-call addresses from the slots and
the packed constants, on the stream given (the GPU runs the real thing in gpu_test)."""

import ctypes
import os
import sys
import types
import unittest
from unittest import mock

from helpers import vllm_call
from ptxgen_mla import catalog, launch, pack
from ptxgen_mla.call import check_call
from ptxgen_mla.errors import PtxgenMLAError
from ptxgen_mla.manifest import load_manifest

READ = {"ptr": ctypes.c_uint64, "i32": ctypes.c_int32, "u32": ctypes.c_uint32, "i64": ctypes.c_int64,
        "u64": ctypes.c_uint64}


def fake_driver(fail_first_with_context=False):
    calls = []

    class CUresult:
        CUDA_SUCCESS = 0
        CUDA_ERROR_INVALID_CONTEXT = 201
        CUDA_ERROR_LAUNCH_FAILED = 719

    class Obj:
        pass

    d = types.ModuleType("cuda.bindings.driver")
    d.CUresult = CUresult
    d.cuInit = lambda flags: (0,)
    d.cuGetErrorName = lambda e: (0, b"CUDA_ERROR_%d" % e)
    d.cuGetErrorString = lambda e: (0, b"a test error")
    d.CUstream = lambda s: ("stream", s)
    d.CUlaunchAttribute = Obj
    d.CUlaunchConfig = Obj
    d.CUlaunchAttributeID = types.SimpleNamespace(CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION=7)
    state = {"pushed": 0, "fail": fail_first_with_context}

    def attr_value():
        return types.SimpleNamespace(programmaticStreamSerializationAllowed=0)

    orig_attr = d.CUlaunchAttribute

    class Attr(orig_attr):
        def __init__(self):
            self.value = attr_value()
    d.CUlaunchAttribute = Attr

    def launch(fn, gx, gy, gz, bx, by, bz, shared, stream, args, extra):
        if state["fail"] and not state["pushed"]:
            return (CUresult.CUDA_ERROR_INVALID_CONTEXT,)
        calls.append(dict(fn=fn, grid=(gx, gy, gz), block=(bx, by, bz), shared=shared, stream=stream, args=args, ex=None))
        return (0,)

    def launch_ex(cfg, fn, args, extra):
        calls.append(dict(fn=fn, grid=(cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ), block=(cfg.blockDimX, cfg.blockDimY,
                          cfg.blockDimZ), shared=cfg.sharedMemBytes, stream=cfg.hStream, args=args, ex=cfg))
        return (0,)

    def push(ctx):
        state["pushed"] += 1
        return (0,)

    def pop():
        state["pushed"] -= 1
        return (0, None)
    d.cuLaunchKernel, d.cuLaunchKernelEx, d.cuCtxPushCurrent, d.cuCtxPopCurrent = launch, launch_ex, push, pop
    return d, calls, state


def read_params(kl, args):
    ptrs = (ctypes.c_void_p * len(kl.params)).from_address(args)
    return [READ[p.kind].from_address(ptrs[i]).value for i, p in enumerate(kl.params)]


class Launcher(unittest.TestCase):
    def setUp(self):
        self.man = load_manifest(os.path.join(catalog.PACKAGE_DIR, "mla_h64_k128p64_k512p64_exact.json.xz"))

    def launcher(self, rows, fail=False):
        d, calls, state = fake_driver(fail)
        mods = {"cuda": types.ModuleType("cuda"), "cuda.bindings": types.ModuleType("cuda.bindings"),
                "cuda.bindings.driver": d}
        patcher = mock.patch.dict(sys.modules, mods)
        patcher.start()
        self.addCleanup(patcher.stop)
        for name in ("_driver", "_SUCCESS", "_INVALID_CONTEXT"):
            p = mock.patch.object(launch, name, None)
            p.start()
            self.addCleanup(p.stop)
        launch.driver()
        spec = check_call(**vllm_call(b=rows), scale=512 ** -0.5, precision="exact")
        choice = self.man.rule("sm_90").choose(rows, 132)
        ws = {n: (0x7E0000000000 + (i << 32), b) for i, (n, b) in enumerate(pack.workspace_sizes(self.man, "sm_90", 132).items())}
        big = 1 << 40
        sizes = {n: (big, e) for n, e in (("q", "bf16"), ("cache0", "u8"), ("idx0", "i32"), ("len0", "i32"), ("cache1", "u8"),
                                          ("idx1", "i32"), ("len1", "i32"), ("sink", "f32"), ("out", "bf16"), ("lse", "f32"))}
        kls = pack.plan_launches(self.man, "sm_90", choice, spec, sizes, ws)
        program = types.SimpleNamespace(funcs={kl.entry: "fn:" + kl.entry for kl in kls},
                                        dev=types.SimpleNamespace(ctx="ctx"))
        return launch.Launcher(program, kls), kls, calls, state, spec

    def test_arguments_in_ptx_order(self):
        lau, kls, calls, _, spec = self.launcher(1)
        addrs = {n: 0x10000 * (i + 1) for i, n in enumerate(pack.SLOTS)}
        for i, n in enumerate(pack.SLOTS):
            lau.slots[i] = addrs[n]
        lau.run(0xABC)
        self.assertEqual([c["fn"] for c in calls], ["fn:" + kl.entry for kl in kls])
        self.assertEqual(len(calls), 2)  # one row on an H200 splits: decode, then combine
        for c, kl in zip(calls, kls):
            want = [addrs[p.value] if p.source == "slot" else p.value for p in kl.params]
            self.assertEqual(read_params(kl, c["args"]), want, kl.entry)
            self.assertEqual((c["grid"], c["block"], c["shared"]), (kl.grid, kl.block, kl.shared))
            self.assertEqual(c["stream"], ("stream", 0xABC))
        self.assertIsNone(calls[0]["ex"])
        self.assertEqual(calls[1]["ex"].attrs[0].value.programmaticStreamSerializationAllowed, 1)
        # A second call with other addresses: only the slots change.
        lau.slots[0] = 0x999990
        lau.run(0xABC)
        q_index = [p.name for p in kls[0].params].index("q")
        self.assertEqual(read_params(kls[0], calls[2]["args"])[q_index], 0x999990)

    def test_another_stream_gets_its_own_launch_config(self):
        lau, kls, calls, _, _ = self.launcher(1)
        lau.run(1)
        lau.run(2)
        self.assertEqual([c["stream"] for c in calls], [("stream", 1)] * 2 + [("stream", 2)] * 2)
        self.assertIsNot(calls[1]["ex"], calls[3]["ex"])

    def test_wrong_context_is_pushed_from_then_on(self):
        lau, kls, calls, state, _ = self.launcher(1, fail=True)
        lau.run(5)
        self.assertTrue(lau.push_context)
        self.assertEqual(state["pushed"], 0)
        self.assertEqual(len(calls), 2)
        lau.run(5)
        self.assertEqual(len(calls), 4)

    def test_a_launch_failure_is_one_error(self):
        lau, kls, calls, state, _ = self.launcher(1)
        launch._driver.cuLaunchKernel = lambda *a: (719,)
        with self.assertRaisesRegex(PtxgenMLAError, "CUDA driver: launch of mla_decode_h16_split_small: CUDA_ERROR_719"):
            lau.run(5)

    def test_many_rows_one_kernel(self):
        lau, kls, calls, _, _ = self.launcher(512)
        lau.run(3)
        self.assertEqual(len(calls), 1)
        self.assertEqual(calls[0]["grid"][1], 512)


if __name__ == "__main__":
    unittest.main()
