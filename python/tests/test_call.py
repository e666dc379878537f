"""FlashMLA's sparse-decode call checked without torch: flags, shapes, dtypes, strides."""

import unittest

from helpers import info, vllm_call
from ptxgen_mla.call import check_call, check_flags
from ptxgen_mla.catalog import Key
from ptxgen_mla.errors import PtxgenMLAError

SCALE = 512 ** -0.5


def spec(**kw):
    args = vllm_call(**{k: v for k, v in kw.items() if k in vllm_call.__code__.co_varnames})
    args.update({k: v for k, v in kw.items() if k not in vllm_call.__code__.co_varnames})
    return check_call(**args, scale=SCALE, precision="exact")


class Flags(unittest.TestCase):
    def flags(self, **kw):
        a = dict(head_dim_v=512, num_splits=None, causal=False, is_fp8_kvcache=True, indices_given=True,
                 precision="exact", softmax_scale=None)
        a.update(kw)
        return check_flags(**a)

    def test_default_scale_is_flashmla_s(self):
        self.assertEqual(self.flags(), 512 ** -0.5)
        self.assertEqual(self.flags(softmax_scale=0.125), 0.125)

    def test_flashmla_sparse_mode_refusals(self):
        for kw, want in [(dict(causal=True), "causal must be False when sparse attention is enabled"),
                         (dict(is_fp8_kvcache=False), "is_fp8_kvcache must be True when sparse attention is enabled"),
                         (dict(head_dim_v=576), "only head_size_v == 512 is supported"),
                         (dict(head_dim_v=True), "head_dim_v True"),
                         (dict(num_splits=8), "num_splits 8: must be None"),
                         (dict(indices_given=False), "dense decode"),
                         (dict(precision="fp8"), "precision 'fp8'"),
                         (dict(precision=None), "precision None"),
                         (dict(causal="no"), "causal 'no'")]:
            with self.subTest(kw=kw), self.assertRaisesRegex(PtxgenMLAError, want):
                self.flags(**kw)

    def test_scales_go_refuses(self):
        # -scale refuses what is not a finite positive f32 (docs/bad-inputs.md); so does the call.
        for s in (1e308, 1e39, 1e-50, 0.0, -1.0, float("nan"), float("inf"), True, "0.1"):
            with self.subTest(s=s), self.assertRaisesRegex(PtxgenMLAError, "softmax_scale"):
                self.flags(softmax_scale=s)
        self.assertEqual(self.flags(softmax_scale=1e-45), 1e-45)  # 1.4e-45 as a float32, as Go's -scale takes it
        with self.assertRaisesRegex(PtxgenMLAError, "softmax_scale"):
            self.flags(softmax_scale=5e-46)
        self.assertEqual(self.flags(softmax_scale=3.4e38), 3.4e38)


class Shapes(unittest.TestCase):
    def test_vllm_dsv4_decode(self):
        s = spec(b=8)
        self.assertEqual((s.b, s.s_q, s.h_q, s.rows), (8, 1, 64, 8))
        self.assertEqual(s.key, Key(64, 128, 64, 512, 64, "exact", SCALE))
        self.assertEqual((s.q_stride_t, s.q_stride_h), (64 * 512, 512))
        self.assertEqual((s.page_stride0, s.slots0, s.idx_stride0), (37440, 32 * 64, 128))
        self.assertEqual((s.page_stride1, s.slots1, s.idx_stride1), (37440, 64 * 64, 512))
        self.assertTrue(s.has_len0 and s.has_len1 and s.has_sink and s.has_extra)

    def test_any_head_count_and_one_segment(self):
        for h in (1, 3, 8, 24, 100, 128):
            s = spec(h=h, k1=0)
            self.assertEqual(s.key, Key(h, 128, 64, 0, 0, "exact", SCALE))
            self.assertFalse(s.has_extra)
        with self.assertRaisesRegex(PtxgenMLAError, "num_heads_q 129: want 1..128"):
            spec(h=129)

    def test_s_q_rows(self):
        s = spec(b=4, s_q=3)
        self.assertEqual((s.rows, s.q_stride_t, s.idx_stride0), (12, 64 * 512, 128))
        with self.assertRaisesRegex(PtxgenMLAError, "at most 65535"):
            spec(b=65536)

    def test_strided_views_the_kernel_can_express(self):
        # q heads and rows of a wider buffer, indices rows of a wider list, padded cache blocks.
        q = info((4, 1, 64, 512), (80 * 576, 80 * 576, 576, 1))
        idx = info((4, 1, 128), (200, 200, 1), "int32")
        s = spec(q=q, indices=idx, page_stride0=64 * 584 + 4096)
        self.assertEqual((s.q_stride_t, s.q_stride_h, s.idx_stride0, s.page_stride0), (80 * 576, 576, 200, 64 * 584 + 4096))
        # (b, s_q) rows evenly strided through both dimensions
        q2 = info((2, 3, 16, 512), (3 * 20 * 512, 20 * 512, 512, 1))
        self.assertEqual(spec(b=2, s_q=3, h=16, q=q2).q_stride_t, 20 * 512)
        # size-1 dimensions may have any stride in torch
        q3 = info((1, 1, 64, 512), (7, 3, 512, 1))
        self.assertEqual(spec(b=1, q=q3).q_stride_h, 512)

    def test_strided_views_it_cannot(self):
        for kw, want in [
            (dict(q=info((4, 1, 64, 512), (64 * 1024, 64 * 1024, 1024, 2))), "q: .*last dimension must be contiguous"),
            (dict(q=info((4, 1, 64, 512), (64 * 512, 64 * 512, 0, 1))), "heads read over each other"),
            (dict(q=info((4, 1, 64, 516), (64 * 516, 64 * 516, 516, 1))), "head_dim 516"),
            (dict(q=info((4, 1, 64, 512), (64 * 513, 64 * 513, 513, 1))), "multiples of 8 elements"),
            (dict(b=2, s_q=3, q=info((2, 3, 64, 512), (4 * 64 * 512, 64 * 512, 512, 1))), "not evenly strided"),
            (dict(page_stride0=64 * 584 + 8), "multiple of 16"),
            (dict(page_stride0=63 * 584), "want at least 37376"),
            (dict(k_cache=info((32, 64, 1, 584), (64 * 600, 600, 600, 1), "uint8")), "whole block must be contiguous"),
            (dict(indices=info((4, 1, 128), (256, 256, 2), "int32")), "indices: .*last dimension must be contiguous"),
            (dict(indices=info((4, 1, 128), (100, 100, 1), "int32")), "rows overlap"),
            (dict(out=info((4, 1, 64, 512), (80 * 512, 80 * 512, 512, 1))), "writes out densely"),
        ]:
            with self.subTest(want=want), self.assertRaisesRegex(PtxgenMLAError, want):
                spec(**kw)

    def test_flashmla_layout_refusals(self):
        for kw, want in [
            (dict(k_cache=info((32, 64, 1, 584), None, "bfloat16")), "key must have dtype fp8_e4m3fn, int8 or uint8"),
            (dict(k_cache=info((32, 64, 2, 584), None, "uint8")), "only MQA"),
            (dict(k_cache=info((32, 64, 1, 656), None, "uint8")), "584 bytes per token"),
            (dict(k_cache=info((32, 64, 584), None, "uint8")), "want 4 dimensions"),
            (dict(q=info((4, 1, 64, 576))), "V3.2's 576 is not supported"),
            (dict(q=info((4, 1, 64, 512), dtype="float16")), "q: dtype float16: want bfloat16"),
            (dict(q=info((4, 1, 64, 512), device=-1)), "q is on the CPU"),
            (dict(indices=info((4, 1, 128), dtype="int64")), "indices: dtype int64: want int32"),
            (dict(indices=info((4, 2, 128), dtype="int32")), r"want \[4, 1, topk\]"),
            (dict(indices=info((4, 1, 0), dtype="int32")), "topk 0"),
            (dict(topk_length=info((4, 1), dtype="int32")), "want 1 dimensions"),
            (dict(topk_length=info((3,), dtype="int32")), r"want shape \[4\]"),
            (dict(attn_sink=info((32,), dtype="float32")), r"want a contiguous \[64\]"),
            (dict(attn_sink=info((64,), dtype="bfloat16")), "attn_sink: dtype bfloat16"),
            (dict(extra_indices=None), "extra_indices_in_kvcache must be provided when extra_k_cache is provided"),
            (dict(extra_k_cache=None), "extra_indices_in_kvcache must not be provided when extra_k_cache is not provided"),
            (dict(k1=0, extra_topk_length=info((4,), dtype="int32")), "extra_topk_length must not be provided"),
            (dict(out=info((4, 1, 64, 512), dtype="float32")), "out: dtype float32"),
            (dict(out=info((4, 1, 32, 512))), r"want \[4, 1, 64, 512\]"),
            (dict(indices=info((4, 1, 128), dtype="int32", device=1)), "indices is on cuda:1, q on cuda:0"),
            (dict(q="a tensor"), "q: str: want a torch.Tensor"),
            (dict(blocks0=2**31 // 64 + 1), "slots: want at most 2147483647"),
        ]:
            with self.subTest(want=want), self.assertRaisesRegex(PtxgenMLAError, want):
                spec(**kw)

    def test_a_single_block_cache_needs_no_stride(self):
        s = spec(k_cache=info((1, 64, 1, 584), (5, 584, 584, 1), "uint8"))
        self.assertEqual((s.page_stride0, s.slots0), (37376, 64))


if __name__ == "__main__":
    unittest.main()
