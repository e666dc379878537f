"""Paths and fakes shared by the CPU tests (standard library only)."""

import importlib.util
import os
import sys

PYTHON_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REPO = os.path.dirname(PYTHON_DIR)
if PYTHON_DIR not in sys.path:
    sys.path.insert(0, PYTHON_DIR)

VECTORS = os.path.join(REPO, "golden", "testdata", "vectors", "mla_decode")
# The FlashMLA anchor: beside a clone in CI (../shared), or /work/shared here.
ANCHOR_CANDIDATES = [os.path.join(REPO, "..", "shared", "anchors", "flashmla", "flashmla-src.tar.xz"),
                     os.path.join(REPO, ".anchors", "flashmla", "flashmla-src.tar.xz")]

HAVE_TORCH = importlib.util.find_spec("torch") is not None


def torch_with_custom_op():
    if not HAVE_TORCH:
        return False
    import torch
    return hasattr(torch, "library") and hasattr(torch.library, "custom_op")


def info(shape, stride=None, dtype="bfloat16", device=0):
    """A TensorInfo; strides default to the dense ones."""
    from ptxgen_mla.call import TensorInfo
    if stride is None:
        stride, s = [], 1
        for n in reversed(shape):
            stride.append(s)
            s *= n
        stride = list(reversed(stride))
    return TensorInfo(tuple(shape), tuple(stride), dtype, device)


def vllm_call(b=4, s_q=1, h=64, k0=128, page0=64, k1=512, page1=64, blocks0=32, blocks1=64, page_stride0=None,
              page_stride1=None, lens=True, sink=True, with_out=False):
    """The TensorInfos of a call as vLLM's DeepSeek-V4 FlashMLA path makes it (q and out
    unsqueezed to s_q = 1, caches (blocks, B, 1, 584) with padded block strides)."""
    ps0 = page_stride0 or -(-page0 * 584 // 576) * 576
    ps1 = page_stride1 or -(-page1 * 584 // 576) * 576
    d = dict(q=info((b, s_q, h, 512)),
             k_cache=info((blocks0, page0, 1, 584), (ps0, 584, 584, 1), "uint8"),
             indices=info((b, s_q, k0), dtype="int32"),
             topk_length=info((b,), dtype="int32") if lens else None,
             attn_sink=info((h,), dtype="float32") if sink else None,
             extra_k_cache=info((blocks1, page1, 1, 584), (ps1, 584, 584, 1), "uint8") if k1 else None,
             extra_indices=info((b, s_q, k1), dtype="int32") if k1 else None,
             extra_topk_length=info((b,), dtype="int32") if k1 and lens else None,
             out=info((b, s_q, h, 512)) if with_out else None)
    return d
