"""FlashMLA's sparse-decode call on ptxgen's kernels: get_mla_metadata and
flash_mla_with_kvcache, with FlashMLA's signature, layouts and refusals, plus `out=` and
`precision=`.

The first call of a shape (the shapes, strides, dtypes and devices of its tensors and
its flags) checks everything, finds the kernel, loads its module (once per device) and
packs the kernels' arguments; every later call of that shape reads its tensors'
addresses, allocates lse (and out), and launches on torch's current stream. Under
torch.compile the call goes through the custom op ptxgen_mla::sparse_decode (op.py).
"""

import collections
import threading

from . import call, catalog, launch, pack
from .errors import PtxgenMLAError

_torch = None
_catalog = None
_plans = {}
_plans_lock = threading.Lock()
_dtype_names = {}
_raw_stream = None
_compiling = None
MAX_PLANS = 4096  # call shapes kept; an engine has a few per layer type and batch size


def need_torch():
    """torch, imported once; a one-line PtxgenMLAError without it."""
    global _torch, _raw_stream, _compiling
    if _torch is None:
        try:
            import torch
        except ImportError as e:
            raise PtxgenMLAError(f"ptxgen_mla needs torch for flash_mla_with_kvcache ({e}); install torch "
                                 "(docs/python.md lists the versions)") from None
        for name in ("bfloat16", "float8_e4m3fn", "int8", "uint8", "int32", "float32", "float16"):
            dt = getattr(torch, name, None)
            if dt is not None:
                _dtype_names[dt] = name
        get_raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
        _raw_stream = get_raw if get_raw is not None else (lambda i: torch.cuda.current_stream(i).cuda_stream)
        comp = getattr(getattr(torch, "compiler", None), "is_compiling", None)
        if comp is None:
            dyn = getattr(getattr(torch, "_dynamo", None), "is_compiling", None)
            comp = dyn if dyn is not None else (lambda: False)
        _compiling = comp
        _torch = torch
    return _torch


def kernel_catalog():
    global _catalog
    if _catalog is None:
        _catalog = catalog.Catalog()
    return _catalog


def add_kernel_dir(path):
    """Adds a folder of manifests written by `ptxgen gen -manifest` (and their PTX) to the
    kernels flash_mla_with_kvcache looks in, after the package's own."""
    kernel_catalog().add_dir(path)


SchedConfig = collections.namedtuple("SchedConfig", "b s_q h_q page_block_size h_k causal is_fp8_kvcache topk "
                                                    "extra_page_block_size extra_topk")


class FlashMLASchedMeta:
    """What get_mla_metadata returns: FlashMLA's placeholder schedule, filled by the first
    call (which records the call's configuration; later calls must match it, as in
    FlashMLA). The plan itself is kept per call shape, so it is built once however
    many of these an engine makes."""

    __slots__ = ("have_initialized", "config", "tile_scheduler_metadata", "num_splits")

    def __init__(self):
        self.have_initialized = False
        self.config = None
        self.tile_scheduler_metadata = None  # FlashMLA's fields, kept for code that reads them
        self.num_splits = None

    def __repr__(self):
        return f"FlashMLASchedMeta(have_initialized={self.have_initialized}, config={self.config})"


def get_mla_metadata(*args, **kwargs):
    """(FlashMLASchedMeta(), None), as FlashMLA: the arguments are ignored."""
    return FlashMLASchedMeta(), None


_HELP = (" Your input arguments are inconsistent with sched_meta. Please make sure the input arguments are "
         "consistent across different invocations of flash_mla_with_kvcache on the same sched_meta.")


def _check_sched(meta, cfg):
    if meta is None:
        return
    try:
        initialized = meta.have_initialized
    except AttributeError:
        raise PtxgenMLAError(f"flash_mla_with_kvcache: tile_scheduler_metadata {type(meta).__name__}: want what "
                             "get_mla_metadata() returns (or None)") from None
    if not initialized:
        meta.have_initialized = True
        meta.config = cfg
        return
    have = meta.config
    if type(have) is not SchedConfig:
        try:
            have = SchedConfig(*(getattr(have, f) for f in SchedConfig._fields))
        except AttributeError:
            raise PtxgenMLAError("flash_mla_with_kvcache: tile_scheduler_metadata.config: want FlashMLA's "
                                 f"configuration fields {SchedConfig._fields}") from None
    if have != cfg:
        for f, a, b in zip(SchedConfig._fields, have, cfg):
            if a != b:
                raise PtxgenMLAError(f"flash_mla_with_kvcache: sched_meta.config.{f} ({a!r}) must be equal to "
                                     f"this call's {b!r}.{_HELP}")


def _info(t, name="tensor"):
    if t is None:
        return None
    if not isinstance(t, _torch.Tensor):
        raise PtxgenMLAError(f"flash_mla_with_kvcache: {name}: {type(t).__name__} {t!r:.60}: want a torch.Tensor or None")
    return call.TensorInfo(tuple(t.shape), tuple(t.stride()), _dtype_names.get(t.dtype, str(t.dtype).replace("torch.", "")),
                           t.get_device())


def _reach(t):
    """The bytes a view reaches from its data pointer."""
    if t.numel() == 0:
        return 0
    return (sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1) * t.element_size()


_ELEM = {"bfloat16": "bf16", "float8_e4m3fn": "u8", "int8": "u8", "uint8": "u8", "int32": "i32", "float32": "f32"}


class _Plan:
    """One call shape: its spec, launcher and the buffers that stand in for absent ones."""

    def __init__(self, spec, sched_cfg, launcher, dev, len_bufs, program, kernel_path, target):
        torch = _torch
        self.spec, self.sched_cfg, self.launcher, self.dev = spec, sched_cfg, launcher, dev
        self.slots = launcher.slots
        self.lock = threading.Lock()
        self.device = torch.device("cuda", spec.device)
        self.out_shape = (spec.b, spec.s_q, spec.h_q, 512)
        self.lse_shape = (spec.b, spec.s_q, spec.h_q)
        # What the call returns, allocated as it is returned: (b, h_q, s_q) over a
        # contiguous (b, s_q, h_q), FlashMLA's lse, with no transpose per call.
        self.lse_view = ((spec.b, spec.h_q, spec.s_q), (spec.s_q * spec.h_q, 1, spec.h_q))
        self.no_len = dev.no_lengths.data_ptr()
        self.no_sink = dev.no_sink.data_ptr()
        self.len_bufs = len_bufs  # per-row lengths for s_q > 1 (topk_length is per batch)
        self.program, self.kernel_path, self.target = program, kernel_path, target

    def __call__(self, q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices,
                 extra_topk_length, out, lse):
        torch = _torch
        spec = self.spec
        if out is None:
            out = torch.empty(self.out_shape, dtype=torch.bfloat16, device=self.device)
        if lse is None:
            lse = torch.empty_strided(*self.lse_view, dtype=torch.float32, device=self.device)
        len0, len1 = self.len_bufs
        if len0 is not None and topk_length is not None:
            len0.view(spec.b, spec.s_q).copy_(topk_length.view(spec.b, 1).expand(spec.b, spec.s_q))
        if len1 is not None and extra_topk_length is not None:
            len1.view(spec.b, spec.s_q).copy_(extra_topk_length.view(spec.b, 1).expand(spec.b, spec.s_q))
        p_q, p_c0, p_i0 = q.data_ptr(), k_cache.data_ptr(), indices.data_ptr()
        p_l0 = (len0.data_ptr() if len0 is not None else topk_length.data_ptr()) if topk_length is not None else self.no_len
        p_sink = attn_sink.data_ptr() if attn_sink is not None else self.no_sink
        p_out, p_lse = out.data_ptr(), lse.data_ptr()
        if spec.has_extra:
            p_c1, p_i1 = extra_k_cache.data_ptr(), extra_indices.data_ptr()
            p_l1 = ((len1.data_ptr() if len1 is not None else extra_topk_length.data_ptr())
                    if extra_topk_length is not None else self.no_len)
        else:
            p_c1 = p_i1 = p_l1 = 0
        if (p_q | p_c0 | p_c1 | p_out) & 15 or (p_i0 | p_l0 | p_i1 | p_l1 | p_sink | p_lse) & 3:
            _misaligned(q, k_cache, extra_k_cache, out)
        stream = _raw_stream(spec.device)
        with self.lock:
            s = self.slots
            s[0], s[1], s[2], s[3], s[4], s[5], s[6], s[7], s[8], s[9] = (
                p_q, p_c0, p_i0, p_l0, p_c1, p_i1, p_l1, p_sink, p_out, p_lse)
            self.launcher.run(stream)
        return out, lse


def _misaligned(q, k_cache, extra_k_cache, out):
    for name, t, a in (("q", q, 16), ("k_cache", k_cache, 16), ("extra_k_cache", extra_k_cache, 16), ("out", out, 16)):
        if t is not None and t.data_ptr() % a:
            raise PtxgenMLAError(f"flash_mla_with_kvcache: {name} starts at {t.data_ptr():#x}, which is not "
                                 f"{a}-byte aligned: the kernel's {a}-byte loads and stores need it")
    raise PtxgenMLAError("flash_mla_with_kvcache: an int32 or float32 argument is not 4-byte aligned")


def _build_plan(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices, extra_topk_length,
                out, head_dim_v, num_splits, softmax_scale, causal, is_fp8_kvcache, precision):
    torch = _torch
    scale = call.check_flags(head_dim_v, num_splits, causal, is_fp8_kvcache, indices is not None, precision, softmax_scale)
    names = ("q", "k_cache", "indices", "topk_length", "attn_sink", "extra_k_cache", "extra_indices_in_kvcache",
             "extra_topk_length", "out")
    infos = [_info(t, n) for t, n in zip((q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices,
                                          extra_topk_length, out), names)]
    spec = call.check_call(*infos, scale=scale, precision=precision)
    dev = launch.device(torch, spec.device)
    man, target = kernel_catalog().find(spec.key, spec.rows, dev.arch, scale)
    program = dev.program(torch, man, target)
    rule = program.rule
    choice = rule.choose(spec.rows, dev.sms) if rule is not None else None
    len_bufs = [None, None]
    if spec.s_q > 1:
        if spec.has_len0:
            len_bufs[0] = torch.empty(spec.rows, dtype=torch.int32, device=q.device)
        if spec.has_len1:
            len_bufs[1] = torch.empty(spec.rows, dtype=torch.int32, device=q.device)
    no_len = (dev.no_lengths.numel() * 4, "i32")
    sizes = {"q": (_reach(q), "bf16"), "cache0": (_reach(k_cache), "u8"), "idx0": (_reach(indices), "i32"),
             "len0": (spec.rows * 4, "i32") if spec.has_len0 else no_len,
             "sink": (_reach(attn_sink), "f32") if attn_sink is not None else (dev.no_sink.numel() * 4, "f32"),
             "out": (spec.rows * spec.h_q * 512 * 2, "bf16"), "lse": (spec.rows * spec.h_q * 4, "f32")}
    if spec.has_extra:
        sizes.update({"cache1": (_reach(extra_k_cache), "u8"), "idx1": (_reach(extra_indices), "i32"),
                      "len1": (spec.rows * 4, "i32") if spec.has_len1 else no_len})
    launches = pack.plan_launches(man, target, choice, spec, sizes, program.workspace_args())
    sched_cfg = SchedConfig(spec.b, spec.s_q, spec.h_q, k_cache.shape[1], k_cache.shape[2], bool(causal),
                            bool(is_fp8_kvcache), spec.key[1],
                            extra_k_cache.shape[1] if extra_k_cache is not None else None,
                            extra_indices.shape[-1] if extra_indices is not None else None)
    return _Plan(spec, sched_cfg, launch.Launcher(program, launches), dev, len_bufs, program, man.path, target)


def _key(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices, extra_topk_length, out,
         head_dim_v, num_splits, softmax_scale, causal, is_fp8_kvcache, precision):
    """Everything a plan depends on, read cheaply; any non-tensor raises AttributeError."""
    k = [q.shape, q.stride(), q.dtype, q.get_device(), k_cache.shape, k_cache.stride(), k_cache.dtype,
         k_cache.get_device(), indices.shape, indices.stride(), indices.dtype, indices.get_device()]
    for t in (topk_length, attn_sink, extra_k_cache, extra_indices, extra_topk_length, out):
        if t is None:
            k.append(None)
        else:
            k += (t.shape, t.stride(), t.dtype, t.get_device())
    k += (head_dim_v, num_splits, softmax_scale, causal, is_fp8_kvcache, precision)
    return tuple(k)


def flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens, head_dim_v, tile_scheduler_metadata,
                           num_splits=None, softmax_scale=None, causal=False, is_fp8_kvcache=False, indices=None,
                           attn_sink=None, extra_k_cache=None, extra_indices_in_kvcache=None, topk_length=None,
                           extra_topk_length=None, out=None, precision="exact"):
    """FlashMLA's sparse decode (flash_mla_interface.flash_mla_with_kvcache) on ptxgen's
    kernels: returns (out, lse), out (b, s_q, h_q, 512) bf16 and lse (b, h_q, s_q) fp32
    (natural log, without the sink; +inf for a row with no valid candidate), lse being
    the transpose of a contiguous (b, s_q, h_q), as FlashMLA returns it.

    block_table and cache_seqlens are ignored (sparse mode, as in FlashMLA). out, when
    given, is written and returned (vLLM's wrapper's argument). precision "exact" (P in
    two bf16 terms, the spec's thresholds) or "bf16p" (P as one bf16 term, as FlashMLA).
    Anything refused raises PtxgenMLAError, naming the argument and the value."""
    torch = _torch if _torch is not None else need_torch()
    if _compiling():
        from . import op
        return op.traced_call(q, k_cache, head_dim_v, num_splits, softmax_scale, causal, is_fp8_kvcache, indices,
                              attn_sink, extra_k_cache, extra_indices_in_kvcache, topk_length, extra_topk_length,
                              out, precision)
    try:
        key = _key(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices_in_kvcache,
                   extra_topk_length, out, head_dim_v, num_splits, softmax_scale, causal, is_fp8_kvcache, precision)
        plan = _plans.get(key)
    except (AttributeError, TypeError):
        key, plan = None, None  # not tensors, or unhashable flags: the checks below say which
    if plan is None:
        plan = _build_plan(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices_in_kvcache,
                           extra_topk_length, out, head_dim_v, num_splits, softmax_scale, causal, is_fp8_kvcache,
                           precision)
        if key is not None:
            with _plans_lock:
                if len(_plans) >= MAX_PLANS:
                    _plans.clear()
                _plans[key] = plan
    _check_sched(tile_scheduler_metadata, plan.sched_cfg)
    return plan(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices_in_kvcache,
                extra_topk_length, out, None)


def run_into(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices, extra_topk_length, out, lse,
             softmax_scale, precision):
    """The custom op's CUDA implementation: the call with out and lse (b, s_q, h_q) given."""
    need_torch()
    key = ("op",) + _key(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices, extra_topk_length,
                         out, 512, None, softmax_scale, False, True, precision)
    plan = _plans.get(key)
    if plan is None:
        plan = _build_plan(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices,
                           extra_topk_length, out, 512, None, softmax_scale, False, True, precision)
        with _plans_lock:
            _plans[key] = plan
    if tuple(lse.shape) != plan.lse_shape or lse.dtype != _torch.float32 or not lse.is_contiguous():
        raise PtxgenMLAError(f"ptxgen_mla::sparse_decode: lse {tuple(lse.shape)} {lse.dtype}: want a contiguous "
                             f"float32 {plan.lse_shape}")
    plan(q, k_cache, indices, topk_length, attn_sink, extra_k_cache, extra_indices, extra_topk_length, out, lse)


def plan_of(q, k_cache, indices, **kw):
    """The plan a call would use (for tests and diagnostics): kernels, target, manifest."""
    need_torch()
    args = dict(topk_length=None, attn_sink=None, extra_k_cache=None, extra_indices_in_kvcache=None,
                extra_topk_length=None, out=None, head_dim_v=512, num_splits=None, softmax_scale=None,
                causal=False, is_fp8_kvcache=True, precision="exact")
    args.update(kw)
    return _build_plan(q, k_cache, indices, args["topk_length"], args["attn_sink"], args["extra_k_cache"],
                       args["extra_indices_in_kvcache"], args["extra_topk_length"], args["out"], args["head_dim_v"],
                       args["num_splits"], args["softmax_scale"], args["causal"], args["is_fp8_kvcache"],
                       args["precision"])
