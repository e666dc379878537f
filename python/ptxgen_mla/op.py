"""The torch custom op ptxgen_mla::sparse_decode, for torch.compile and CUDA graphs.

flash_mla_with_kvcache calls it when torch.compile traces the call (in eager mode it
launches directly, which is cheaper and equally capturable in a CUDA graph). The op
mutates out and lse, which the caller allocates, and returns nothing (a custom op may
not return an alias of its input); its fake implementation runs the same shape checks
as the call, so a bad shape fails at trace time. torch.library.custom_op needs torch
2.4 or later; on older torch the op does not exist and only the eager call works.
"""

from typing import Optional

from . import call
from .errors import PtxgenMLAError
from .interface import need_torch

OP_NAME = "ptxgen_mla::sparse_decode"
_op = None


def register():
    """Registers the op once; returns it, or None where torch has no custom_op."""
    global _op
    if _op is not None:
        return _op
    torch = need_torch()
    if not hasattr(torch, "library") or not hasattr(torch.library, "custom_op"):
        return None
    Tensor = torch.Tensor

    def sparse_decode(q: Tensor, k_cache: Tensor, indices: Tensor, topk_length: Optional[Tensor],
                      attn_sink: Optional[Tensor], extra_k_cache: Optional[Tensor], extra_indices: Optional[Tensor],
                      extra_topk_length: Optional[Tensor], out: Tensor, lse: Tensor, softmax_scale: float,
                      precision: str) -> None:
        from .interface import run_into
        run_into(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices, extra_topk_length,
                 out, lse, softmax_scale, precision)

    op = torch.library.custom_op(OP_NAME, mutates_args=("out", "lse"), device_types="cuda")(sparse_decode)

    def fake(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices, extra_topk_length, out, lse,
             softmax_scale, precision):
        check_shapes(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices, extra_topk_length,
                     out, lse, softmax_scale, precision)
        return None

    op.register_fake(fake)
    _op = op
    return op


def _info(t):
    if t is None:
        return None
    from .interface import _dtype_names
    return call.TensorInfo(tuple(int(n) for n in t.shape), tuple(int(s) for s in t.stride()),
                           _dtype_names.get(t.dtype, str(t.dtype).replace("torch.", "")), t.get_device())


def check_shapes(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices, extra_topk_length, out,
                 lse, softmax_scale, precision):
    """The call's checks on shapes, dtypes and strides (no data is read)."""
    scale = call.check_flags(512, None, False, True, True, precision, softmax_scale)
    spec = call.check_call(_info(q), _info(k_cache), _info(indices), _info(topk_length), _info(attn_sink),
                           _info(extra_k_cache), _info(extra_indices), _info(extra_topk_length), _info(out),
                           scale=scale, precision=precision)
    want = (spec.b, spec.s_q, spec.h_q)
    if tuple(lse.shape) != want or str(lse.dtype) != "torch.float32":
        raise PtxgenMLAError(f"{OP_NAME}: lse {tuple(lse.shape)} {lse.dtype}: want float32 {want}")
    return spec


def traced_call(q, k_cache, head_dim_v, num_splits, softmax_scale, causal, is_fp8_kvcache, indices, attn_sink,
                extra_k_cache, extra_indices, topk_length, extra_topk_length, out, precision):
    """flash_mla_with_kvcache under torch.compile: allocate, then the op."""
    torch = need_torch()
    op = _op if _op is not None else register()
    if op is None:
        raise PtxgenMLAError(f"ptxgen_mla: torch {torch.__version__} has no torch.library.custom_op (2.4+), so the "
                             "call cannot be traced by torch.compile; call it eagerly, or upgrade torch")
    # Plain comparisons only: dynamo traces this function. The full checks (the scale's
    # range, shapes, strides) run in the fake implementation, outside the tracer.
    if num_splits is not None or causal or not is_fp8_kvcache or head_dim_v != 512 or indices is None \
            or precision not in ("exact", "bf16p"):
        call.check_flags(head_dim_v, num_splits, causal, is_fp8_kvcache, indices is not None, precision, softmax_scale)
    scale = 512 ** -0.5 if softmax_scale is None else float(softmax_scale)
    b, s_q, h_q = q.shape[0], q.shape[1], q.shape[2]
    if out is None:
        out = torch.empty((b, s_q, h_q, 512), dtype=torch.bfloat16, device=q.device)
    lse = torch.empty((b, s_q, h_q), dtype=torch.float32, device=q.device)
    op(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices, extra_topk_length, out, lse,
       scale, precision)
    return out, lse.transpose(1, 2)
