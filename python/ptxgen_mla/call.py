"""FlashMLA's sparse decode call, checked without torch: shapes, dtypes, strides, flags.

A tensor is described by a TensorInfo (shape, strides in elements, dtype name, device
index, -1 for the CPU), which interface.py reads off torch tensors once per new shape;
the CPU tests build them by hand. check_call refuses what FlashMLA's sparse decode
refuses (flash_mla_interface.py and csrc/api/sparse_decode.h at the anchor's commit), and
what the generated kernel's parameters cannot express, each with one PtxgenMLAError
naming the argument and the value; it returns the CallSpec the launcher needs.
"""

import collections
import math
import struct

from .catalog import HEAD_DIM, MAX_HEADS, MAX_K, MAX_PAGE, PRECISIONS, TOKEN_BYTES, Key
from .errors import PtxgenMLAError
from .plan import MAX_ROWS

TensorInfo = collections.namedtuple("TensorInfo", "shape stride dtype device")

CACHE_DTYPES = ("float8_e4m3fn", "int8", "uint8")  # FlashMLA: "fp8_e4m3fn, int8 or uint8"
F32_MAX, F32_MIN_SUBNORMAL = 3.4028234663852886e38, 1.401298464324817e-45
MAX_SLOTS = 2**31 - 1  # slots are the kernel's i32

CallSpec = collections.namedtuple("CallSpec", [
    "b", "s_q", "h_q", "rows", "key", "scale", "device",
    "q_stride_t", "q_stride_h",
    "page_stride0", "slots0", "idx_stride0", "has_len0",
    "page_stride1", "slots1", "idx_stride1", "has_len1",
    "has_sink", "has_extra"])


def _fail(msg):
    raise PtxgenMLAError(f"flash_mla_with_kvcache: {msg}")


def _describe(t):
    return f"{t.dtype}{list(t.shape)} strides {list(t.stride)}"


def _dense_strides(shape):
    out, s = [], 1
    for n in reversed(shape):
        out.append(s)
        s *= n
    return tuple(reversed(out))


def _norm(t):
    """t's strides with those of size-1 dimensions set to 0: torch gives such dimensions
    any stride, and the kernel never steps over them."""
    return tuple(0 if n == 1 else s for n, s in zip(t.shape, t.stride))


def _is_dense(t):
    return all(n == 1 or s == d for n, s, d in zip(t.shape, t.stride, _dense_strides(t.shape)))


def _check_tensor(name, t, ndim, dtypes, device):
    if not isinstance(t, TensorInfo):
        _fail(f"{name}: {type(t).__name__}: want a torch.Tensor")
    if len(t.shape) != ndim:
        _fail(f"{name}: {_describe(t)}: want {ndim} dimensions")
    if t.dtype not in dtypes:
        _fail(f"{name}: dtype {t.dtype}: want {' or '.join(dtypes)}")
    if t.device != device:
        where = "the CPU" if t.device < 0 else f"cuda:{t.device}"
        _fail(f"{name} is on {where}, q on cuda:{device}: want every tensor on q's device")
    if any(type(n) is not int or n < 0 for n in t.shape) or any(type(s) is not int for s in t.stride):
        _fail(f"{name}: {_describe(t)}: want non-negative integer sizes and integer strides")


def _row_stride(name, t, b, s_q):
    """The element stride between consecutive (batch, query) rows of t, whose first two
    dimensions are (b, s_q): the kernel steps rows by one stride."""
    s0, s1 = _norm(t)[:2]
    if b == 1:
        return s1
    if s_q == 1:
        return s0
    if s0 == s_q * s1:
        return s1
    _fail(f"{name}: {_describe(t)}: its (batch, query) rows are not evenly strided (stride(0) = {t.stride[0]}, "
          f"want s_q x stride(1) = {s_q * t.stride[1]}): the kernel steps its {b * s_q} rows by one stride")


def _check_scale(softmax_scale):
    if softmax_scale is None:
        return HEAD_DIM ** -0.5  # FlashMLA: q.shape[-1] ** (-0.5), and q's last dimension is 512
    if isinstance(softmax_scale, bool) or not isinstance(softmax_scale, (int, float)):
        _fail(f"softmax_scale {softmax_scale!r}: want a float")
    s = float(softmax_scale)
    # kernels.CheckFloat32, as -scale reads it: finite, within float32, not 0 as one.
    if not (math.isfinite(s) and 0 < s <= F32_MAX) or struct.unpack("<f", struct.pack("<f", s))[0] == 0:
        _fail(f"softmax_scale {softmax_scale!r}: want a positive finite number that is nonzero as a float32 "
              f"({F32_MIN_SUBNORMAL:.3g}..{F32_MAX:.8g})")
    return s


def check_flags(head_dim_v, num_splits, causal, is_fp8_kvcache, indices_given, precision, softmax_scale):
    """The non-tensor arguments, refused as FlashMLA's sparse mode refuses them. Returns
    the softmax scale (FlashMLA's default where None)."""
    if num_splits is not None:
        _fail(f"num_splits {num_splits!r}: must be None (FlashMLA's placeholder)")
    if not indices_given:
        _fail("indices is None: only FlashMLA's sparse decode (indices, topk_length, the extra segment) is "
              "implemented; dense decode (block_table, cache_seqlens) is not")
    if not isinstance(causal, (bool, int)) or causal:
        _fail(f"causal {causal!r}: causal must be False when sparse attention is enabled")
    if not isinstance(is_fp8_kvcache, (bool, int)) or not is_fp8_kvcache:
        _fail(f"is_fp8_kvcache {is_fp8_kvcache!r}: is_fp8_kvcache must be True when sparse attention is enabled "
              "(the cache is FlashMLA's fp8ds layout, 584 bytes per token)")
    if isinstance(head_dim_v, bool) or not isinstance(head_dim_v, int) or head_dim_v != 512:
        _fail(f"head_dim_v {head_dim_v!r}: only head_size_v == 512 is supported for sparse decoding")
    if not isinstance(precision, str) or precision not in PRECISIONS:
        _fail(f"precision {precision!r}: want one of {', '.join(repr(p) for p in PRECISIONS)}")
    return _check_scale(softmax_scale)


def _check_cache(name, t, device):
    _check_tensor(name, t, 4, CACHE_DTYPES + ("bfloat16",), device)
    if t.dtype == "bfloat16":
        _fail(f"{name}: dtype bfloat16: key must have dtype fp8_e4m3fn, int8 or uint8 (is_fp8_kvcache: FlashMLA's "
              "fp8ds layout of 584 bytes per token)")
    nb, page, h_kv, width = t.shape
    if h_kv != 1:
        _fail(f"{name}: {_describe(t)}: currently only MQA (h_kv == 1) is supported for sparse decoding")
    if width != TOKEN_BYTES:
        _fail(f"{name}: {_describe(t)}: want {TOKEN_BYTES} bytes per token (448 e4m3 + 64 bf16 + 8 scale bytes, "
              "DeepSeek-V4's fp8ds cache)")
    if nb < 1 or not 1 <= page <= MAX_PAGE:
        _fail(f"{name}: {_describe(t)}: want at least one block and 1..{MAX_PAGE} tokens per block")
    st = _norm(t)
    if st[3] not in (0, 1) or (page > 1 and st[1] != TOKEN_BYTES):
        _fail(f"{name}: {_describe(t)}: the whole block must be contiguous (stride(1) = {TOKEN_BYTES}, stride(3) = 1)")
    page_bytes = page * TOKEN_BYTES
    stride = st[0] if nb > 1 else -(-page_bytes // 16) * 16
    if stride < page_bytes:
        _fail(f"{name}: stride(0) = {t.stride[0]}: want at least {page_bytes}, the bytes of a block of {page} tokens")
    if stride % 16:
        _fail(f"{name}: stride(0) = {t.stride[0]} bytes: the kernel's 16-byte loads need a multiple of 16")
    if nb * page > MAX_SLOTS:
        _fail(f"{name}: {nb} blocks x {page} tokens = {nb * page} slots: want at most {MAX_SLOTS} (the kernel's i32)")
    return page, stride, nb * page


def _check_lengths(name, t, b, device):
    _check_tensor(name, t, 1, ("int32",), device)
    if t.shape != (b,):
        _fail(f"{name}: {_describe(t)}: want shape [{b}] (batch_size)")
    if b > 1 and t.stride[0] != 1:
        _fail(f"{name}: {_describe(t)}: must be contiguous")


def check_call(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices, extra_topk_length,
               out, scale, precision):
    """The CallSpec of a sparse decode call whose tensors are TensorInfos (or None), after
    check_flags; refuses what FlashMLA or the kernel cannot take."""
    if not isinstance(q, TensorInfo):
        _fail(f"q: {type(q).__name__}: want a torch.Tensor")
    device = q.device
    if device < 0:
        _fail("q is on the CPU: want a CUDA tensor")
    _check_tensor("q", q, 4, ("bfloat16",), device)
    b, s_q, h_q, d = q.shape
    if b < 1 or s_q < 1 or h_q < 1:
        _fail(f"q: {_describe(q)}: want batch_size, seq_len_q and num_heads_q of at least 1")
    if d != HEAD_DIM:
        _fail(f"q: {_describe(q)}: head_dim {d}: want {HEAD_DIM} (DeepSeek-V4: 448 nope + 64 rope; "
              "V3.2's 576 is not supported)")
    if h_q > MAX_HEADS:
        _fail(f"q: num_heads_q {h_q}: want 1..{MAX_HEADS}")
    rows = b * s_q
    if rows > MAX_ROWS:
        _fail(f"q: batch_size x seq_len_q = {rows} rows: want at most {MAX_ROWS} (a grid dimension)")
    qs = _norm(q)
    if qs[3] not in (0, 1):
        _fail(f"q: {_describe(q)}: its last dimension must be contiguous")
    q_stride_h = qs[2]
    q_stride_t = _row_stride("q", q, b, s_q)
    if h_q > 1 and q_stride_h < HEAD_DIM:
        _fail(f"q: stride(2) = {q.stride[2]}: want at least {HEAD_DIM} (heads read over each other)")
    if rows > 1 and q_stride_t < (h_q - 1) * q_stride_h + HEAD_DIM:
        _fail(f"q: {_describe(q)}: rows overlap (row stride {q_stride_t} < {(h_q - 1) * q_stride_h + HEAD_DIM})")
    if q_stride_h % 8 or q_stride_t % 8:
        _fail(f"q: {_describe(q)}: the kernel's 16-byte loads need head and row strides that are multiples of 8 elements")

    page0, page_stride0, slots0 = _check_cache("k_cache", k_cache, device)
    _check_tensor("indices", indices, 3, ("int32",), device)
    if indices.shape[:2] != (b, s_q):
        _fail(f"indices: {_describe(indices)}: want [{b}, {s_q}, topk] (batch_size, seq_len_q, topk)")
    k0 = indices.shape[2]
    if not 1 <= k0 <= MAX_K:
        _fail(f"indices: topk {k0}: want 1..{MAX_K}")
    if k0 > 1 and _norm(indices)[2] != 1:
        _fail(f"indices: {_describe(indices)}: its last dimension must be contiguous")
    idx_stride0 = _row_stride("indices", indices, b, s_q)
    if rows > 1 and idx_stride0 < k0:
        _fail(f"indices: {_describe(indices)}: rows overlap (row stride {idx_stride0} < topk {k0})")
    if topk_length is not None:
        _check_lengths("topk_length", topk_length, b, device)
    if attn_sink is not None:
        _check_tensor("attn_sink", attn_sink, 1, ("float32",), device)
        if attn_sink.shape != (h_q,) or (h_q > 1 and attn_sink.stride[0] != 1):
            _fail(f"attn_sink: {_describe(attn_sink)}: want a contiguous [{h_q}] (num_heads_q)")

    has_extra = extra_k_cache is not None
    k1 = page1 = page_stride1 = slots1 = idx_stride1 = 0
    if has_extra:
        if extra_indices is None:
            _fail("extra_indices_in_kvcache must be provided when extra_k_cache is provided for sparse attention")
        page1, page_stride1, slots1 = _check_cache("extra_k_cache", extra_k_cache, device)
        _check_tensor("extra_indices_in_kvcache", extra_indices, 3, ("int32",), device)
        if extra_indices.shape[:2] != (b, s_q):
            _fail(f"extra_indices_in_kvcache: {_describe(extra_indices)}: want [{b}, {s_q}, extra_topk]")
        k1 = extra_indices.shape[2]
        if not 1 <= k1 <= MAX_K:
            _fail(f"extra_indices_in_kvcache: extra_topk {k1}: want 1..{MAX_K}")
        if k1 > 1 and _norm(extra_indices)[2] != 1:
            _fail(f"extra_indices_in_kvcache: {_describe(extra_indices)}: its last dimension must be contiguous")
        idx_stride1 = _row_stride("extra_indices_in_kvcache", extra_indices, b, s_q)
        if rows > 1 and idx_stride1 < k1:
            _fail(f"extra_indices_in_kvcache: {_describe(extra_indices)}: rows overlap (row stride {idx_stride1} < {k1})")
        if extra_topk_length is not None:
            _check_lengths("extra_topk_length", extra_topk_length, b, device)
    else:
        if extra_indices is not None:
            _fail("extra_indices_in_kvcache must not be provided when extra_k_cache is not provided")
        if extra_topk_length is not None:
            _fail("extra_topk_length must not be provided when extra_k_cache is not provided")

    if out is not None:
        _check_tensor("out", out, 4, ("bfloat16",), device)
        if out.shape != (b, s_q, h_q, 512):
            _fail(f"out: {_describe(out)}: want [{b}, {s_q}, {h_q}, 512] (batch_size, seq_len_q, num_heads_q, head_dim_v)")
        if not _is_dense(out):
            _fail(f"out: {_describe(out)}: the kernel writes out densely: want a contiguous tensor")

    key = Key(h_q, k0, page0, k1, page1, precision, scale)
    return CallSpec(b, s_q, h_q, rows, key, scale, device, q_stride_t, q_stride_h,
                    page_stride0, slots0, idx_stride0, topk_length is not None,
                    page_stride1, slots1, idx_stride1, extra_topk_length is not None,
                    attn_sink is not None, has_extra)
