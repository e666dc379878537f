"""The vLLM plugin against a stand-in of vLLM's registry API (vllm is not installed here)."""

import enum
import os
import sys
import types
import unittest
from unittest import mock

from helpers import REPO  # noqa: F401
from ptxgen_mla import vllm_plugin


def fake_vllm(major, minor=0):
    """The modules the plugin touches: the registry (AttentionBackendEnum, register_backend
    as vllm/v1/attention/backends/registry.py has them), the platform, the FlashMLA op
    module and a DeepSeek-V4 layer module."""
    overrides = {}

    class AttentionBackendEnum(enum.Enum):
        FLASHMLA_SPARSE_DSV4 = "fakevllm_backends.FlashMLADSV4"
        FLASHINFER_MLA_SPARSE_DSV4 = "fakevllm_backends.FlashInferDSV4"

        def get_path(self):
            return overrides.get(self, self.value)

        def is_overridden(self):
            return self in overrides

    def register_backend(backend, class_path=None):
        overrides[backend] = class_path

    registry = types.ModuleType("vllm.v1.attention.backends.registry")
    registry.AttentionBackendEnum, registry.register_backend = AttentionBackendEnum, register_backend
    platforms = types.ModuleType("vllm.platforms")
    platforms.current_platform = types.SimpleNamespace(
        get_device_capability=lambda: types.SimpleNamespace(major=major, minor=minor))
    backends = types.ModuleType("fakevllm_backends")

    class FlashMLADSV4:
        @staticmethod
        def get_name():
            return "FLASHMLA_SPARSE_DSV4"

    class FlashInferDSV4:
        @staticmethod
        def get_name():
            return "FLASHINFER_MLA_SPARSE_DSV4"

    backends.FlashMLADSV4, backends.FlashInferDSV4 = FlashMLADSV4, FlashInferDSV4
    ops = types.ModuleType("vllm.v1.attention.ops.flashmla")
    ops.flash_mla_with_kvcache = lambda *a, **k: "flashmla"
    layer_mod = types.ModuleType("vllm.models.deepseek_v4.nvidia.flashmla")
    layer_mod.flash_mla_with_kvcache = ops.flash_mla_with_kvcache

    class DeepseekV4FlashMLAAttention:
        @classmethod
        def get_padded_num_q_heads(cls, num_heads):
            return 64 if num_heads <= 64 else 128

    layer_mod.DeepseekV4FlashMLAAttention = DeepseekV4FlashMLAAttention
    mods = {"vllm": types.ModuleType("vllm"), "vllm.v1.attention.backends.registry": registry, "vllm.platforms": platforms,
            "fakevllm_backends": backends, "vllm.v1.attention.ops.flashmla": ops,
            "vllm.models.deepseek_v4.nvidia.flashmla": layer_mod}
    return mods, registry, overrides


class Plugin(unittest.TestCase):
    def setUp(self):
        vllm_plugin._original.clear()
        vllm_plugin._classes.clear()
        vllm_plugin.state.update(registered=None, routed=[], skipped=[])

    def test_hopper_takes_over_flashmla_sparse_dsv4(self):
        mods, registry, overrides = fake_vllm(9)
        with mock.patch.dict(sys.modules, mods), mock.patch.dict(os.environ, {}, clear=False):
            os.environ.pop(vllm_plugin.ENV_SWITCH, None)
            self.assertTrue(vllm_plugin.register())
            member = registry.AttentionBackendEnum.FLASHMLA_SPARSE_DSV4
            self.assertEqual(overrides, {member: "ptxgen_mla.vllm_plugin.PtxgenFlashMLASparseDSV4Backend"})
            cls = vllm_plugin.PtxgenFlashMLASparseDSV4Backend
            self.assertTrue(issubclass(cls, mods["fakevllm_backends"].FlashMLADSV4))
            self.assertEqual(cls.get_name(), "FLASHMLA_SPARSE_DSV4")
            import ptxgen_mla
            self.assertIs(mods["vllm.v1.attention.ops.flashmla"].flash_mla_with_kvcache, ptxgen_mla.flash_mla_with_kvcache)
            self.assertIs(mods["vllm.models.deepseek_v4.nvidia.flashmla"].flash_mla_with_kvcache,
                          ptxgen_mla.flash_mla_with_kvcache)
            layer = mods["vllm.models.deepseek_v4.nvidia.flashmla"].DeepseekV4FlashMLAAttention
            self.assertEqual(layer.get_padded_num_q_heads(8), 8)
            with self.assertRaises(ValueError):
                layer.get_padded_num_q_heads(256)

    def test_blackwell_workstation_takes_over_flashinfer_sparse_dsv4(self):
        mods, registry, overrides = fake_vllm(12, 0)
        with mock.patch.dict(sys.modules, mods):
            self.assertTrue(vllm_plugin.register())
            member = registry.AttentionBackendEnum.FLASHINFER_MLA_SPARSE_DSV4
            self.assertEqual(overrides, {member: "ptxgen_mla.vllm_plugin.PtxgenFlashInferSparseDSV4Backend"})
            self.assertTrue(issubclass(vllm_plugin.PtxgenFlashInferSparseDSV4Backend, mods["fakevllm_backends"].FlashInferDSV4))

    def test_other_devices_and_the_switch(self):
        for major in (8, 10):
            mods, _, overrides = fake_vllm(major)
            with self.subTest(major=major), mock.patch.dict(sys.modules, mods):
                self.assertFalse(vllm_plugin.register())
                self.assertEqual(overrides, {})
        mods, _, overrides = fake_vllm(9)
        with mock.patch.dict(sys.modules, mods), mock.patch.dict(os.environ, {vllm_plugin.ENV_SWITCH: "0"}):
            self.assertFalse(vllm_plugin.register())
            self.assertEqual(overrides, {})

    def test_without_vllm_nothing_raises(self):
        with mock.patch.dict(sys.modules, {"vllm": None, "vllm.v1.attention.backends.registry": None}):
            self.assertFalse(vllm_plugin.register())

    def test_class_before_register_is_an_attribute_error(self):
        with self.assertRaises(AttributeError):
            vllm_plugin.PtxgenFlashMLASparseDSV4Backend  # noqa: B018
        with self.assertRaises(AttributeError):
            vllm_plugin.NoSuchBackend  # noqa: B018

    def test_backend_for(self):
        self.assertEqual(vllm_plugin.backend_for((9, 0)), "FLASHMLA_SPARSE_DSV4")
        self.assertEqual(vllm_plugin.backend_for(types.SimpleNamespace(major=12, minor=1)), "FLASHINFER_MLA_SPARSE_DSV4")
        self.assertIsNone(vllm_plugin.backend_for((10, 0)))
        self.assertIsNone(vllm_plugin.backend_for(None))


if __name__ == "__main__":
    unittest.main()
