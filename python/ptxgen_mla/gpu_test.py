"""The package's GPU test: python -m ptxgen_mla.gpu_test --vectors DIR [--flashmla ROOT].

Run on a GPU machine after `pip install ./python` (docs/python.md, "GPU test"). Each
step prints what it checks and `ok` or `FAIL` with the numbers; nothing stops the run
but a missing GPU. It ends with `gpu_test: N passed, N failed, N skipped` and exits 0
only when nothing failed.

1. The device, the target the package picks for it, and the custom op (torch.library.opcheck).
2. FlashMLA's own sparse-decode test shapes (tests/test_flash_mla_sparse_decoding.py:
   top-k 64/576/2048, odd page sizes, s_q 1 and 3, b up to 321, all-invalid indices,
   zero lengths, sinks, and the production shapes), each on the same tensors through
   ptxgen_mla (exact, and bf16p where shipped) and, with --flashmla, FlashMLA:
   ptxgen exact against a float64 reference at the spec's thresholds, FlashMLA against
   it (reported), ptxgen against FlashMLA at bf16p's thresholds, the LSE's shape,
   strides and values identical in layout and base, a CUDA graph of the call replayed
   with the eager call's bits, and the host time per eager call (median of
   time.perf_counter around calls, no synchronization inside) beside the kernel time
   (CUDA events) and a graph replay's.
3. Strided views: q a slice of a wider buffer, caches with padded block strides,
   indices a slice: the same bits as the dense call.
4. Refusals with real CUDA tensors, and torch.compile(fullgraph=True) of the call.
5. Every test-vector folder under each --vectors DIR (the shared ones, and bench folders
   written by `ptxgen-gpu bench -vectors-out`) through the package's call, against its
   float64 reference; a folder whose configuration is not shipped is skipped with the
   gen command that adds it.
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
import traceback

from . import catalog, vectors
from .errors import PtxgenMLAError

results = {"passed": 0, "failed": 0, "skipped": 0, "records": []}


def report(ok, what, detail=""):
    tag = {True: "ok  ", False: "FAIL", None: "skip"}[ok]
    print(f"  {tag} {what}{(': ' + detail) if detail else ''}", flush=True)
    results["passed" if ok else "failed" if ok is False else "skipped"] += 1
    results["records"].append({"ok": ok, "what": what, "detail": detail})
    return ok


def step(title):
    print(f"\n== {title}", flush=True)


# ---------------------------------------------------------------------------------------
# Inputs and the float64 reference (spec section 5), on the GPU with torch.


def quantize_fp8ds(torch, k, page_size, page_stride):
    """FlashMLA's fp8ds pages (tests/quant.py, MODEL1) of k (tokens, 512) float32 whose
    token count is a multiple of page_size: [B x 576 records][B x 8 scale bytes] per page,
    each page page_stride bytes. Returns (uint8 flat pool, the dequantized k in float32)."""
    n = k.shape[0]
    pages = n // page_size
    nope, rope = k[:, :448], k[:, 448:]
    blocks = nope.reshape(n, 7, 64)
    amax = blocks.abs().amax(dim=2).clamp(min=1e-30)
    exp = torch.ceil(torch.log2(amax / 448.0)).clamp(-126, 126)  # UE8M0: 2^exp with exp + 127 in a byte
    scaled = (blocks / torch.pow(2.0, exp).unsqueeze(2)).clamp(-448, 448)
    e4m3 = scaled.to(torch.float8_e4m3fn)
    deq_nope = (e4m3.float() * torch.pow(2.0, exp).unsqueeze(2)).reshape(n, 448)
    rope_bf = rope.to(torch.bfloat16)
    pool = torch.zeros(pages, page_stride, dtype=torch.uint8, device=k.device)
    rec = torch.cat([e4m3.reshape(n, 448).view(torch.uint8), rope_bf.contiguous().view(torch.uint8).reshape(n, 128)], 1)
    pool[:, :page_size * 576] = rec.reshape(pages, page_size * 576)
    sc = torch.zeros(n, 8, dtype=torch.uint8, device=k.device)
    sc[:, :7] = (exp + 127).to(torch.uint8)
    pool[:, page_size * 576:page_size * 584] = sc.reshape(pages, page_size * 8)
    return pool.reshape(-1), torch.cat([deq_nope, rope_bf.float()], 1)


def dequantize_pool(torch, flat, pages, page_size, page_stride):
    """Every token of an fp8ds pool as float32 (exact: each value is a bf16), (pages x B, 512)."""
    pool = flat[:pages * page_stride].reshape(pages, page_stride)
    rec = pool[:, :page_size * 576].reshape(pages * page_size, 576)
    sc = pool[:, page_size * 576:page_size * 584].reshape(pages * page_size, 8)[:, :7].float()
    nope = rec[:, :448].contiguous().view(torch.float8_e4m3fn).float().reshape(-1, 7, 64)
    nope = (nope * torch.pow(2.0, sc - 127).unsqueeze(2)).reshape(-1, 448)
    rope = rec[:, 448:].contiguous().view(torch.bfloat16).float()
    return torch.cat([nope, rope], 1)


def reference(torch, q, segs, sink, scale, chunk=32):
    """Spec section 5 in float64: q (rows, H, 512); segs [(dequantized pool (slots, 512),
    idx (rows, K) int64, lengths (rows,) or None)]; sink (H,) or None. Returns out
    (rows, H, 512) float64 and lse (rows, H) float64 (+inf for a row without candidates)."""
    rows, H, _ = q.shape
    out = torch.zeros(rows, H, 512, dtype=torch.float64, device=q.device)
    lse = torch.full((rows, H), math.inf, dtype=torch.float64, device=q.device)
    for r0 in range(0, rows, chunk):
        r1 = min(rows, r0 + chunk)
        ks, valid = [], []
        for pool, idx, lens in segs:
            i = idx[r0:r1]
            ok = (i >= 0) & (i < pool.shape[0])
            if lens is not None:
                ok &= torch.arange(i.shape[1], device=i.device).unsqueeze(0) < lens[r0:r1].clamp(0, i.shape[1]).unsqueeze(1)
            ks.append(pool[i.clamp(0, pool.shape[0] - 1)].double())
            valid.append(ok)
        k = torch.cat(ks, 1)                      # (r, K, 512)
        ok = torch.cat(valid, 1)                  # (r, K)
        logits = scale * torch.einsum("rhd,rkd->rhk", q[r0:r1].double(), k)
        logits = logits.masked_fill(~ok.unsqueeze(1), -math.inf)
        m = logits.amax(dim=2, keepdim=True)
        has = ok.any(dim=1)
        m = torch.where(has.view(-1, 1, 1), m, torch.zeros_like(m))
        p = torch.exp(logits - m)
        s = p.sum(dim=2)
        l = m.squeeze(2) + torch.log(s)
        o = torch.einsum("rhk,rkd->rhd", p / s.unsqueeze(2), k)
        if sink is not None:
            sk = sink.double().view(1, -1)
            g = torch.where(torch.isposinf(sk), torch.zeros_like(l), 1 / (1 + torch.exp(sk - l)))
            o = o * g.unsqueeze(2)
        o = torch.where(has.view(-1, 1, 1), o, torch.zeros_like(o))
        l = torch.where(has.view(-1, 1), l, torch.full_like(l, math.inf))
        out[r0:r1], lse[r0:r1] = o, l
    return out, lse


def compare(torch, got, want, tol):
    """golden.Compare on tensors: (ok, one-line summary)."""
    g, w = got.double().flatten(), want.double().flatten()
    nan = torch.isnan(g)
    inf_w = ~torch.isfinite(w)
    fin = ~inf_w
    d = (g - w).abs()
    bad = nan | (inf_w & (g != w)) | (fin & ~nan & ~(d <= tol["abs"] + tol["rel"] * w.abs()))
    gf, wf = torch.where(fin & ~nan, g, torch.zeros_like(g)), torch.where(fin, w, torch.zeros_like(w))
    gg, ww, dot = float((gf * gf).sum()), float((wf * wf).sum()), float((gf * wf).sum())
    cos = 0.0 if gg == 0 and ww == 0 else 1.0 if gg == 0 or ww == 0 else max(0.0, 1 - dot / math.sqrt(gg * ww))
    dd = float(((gf - wf) ** 2).sum())
    rel_l2 = 0.0 if dd == 0 else (math.inf if ww == 0 else math.sqrt(dd / ww))
    n_bad = int(bad.sum())
    ok = n_bad == 0 and (tol["cos"] is None or cos <= tol["cos"]) and (tol["rel_l2"] is None or rel_l2 <= tol["rel_l2"])
    max_abs = float(d[fin & ~nan].max()) if bool((fin & ~nan).any()) else 0.0
    return ok, f"{g.numel()} elements, {n_bad} outside tol, {int(nan.sum())} NaN, max abs {max_abs:.3g}, cos {cos:.3g}, rel L2 {rel_l2:.3g}"


class Case:
    """One FlashMLA test shape: b, s_q, h_q, and per segment (s_k, topk, block_size)."""

    def __init__(self, name, b, s_q, h_q, seg0, seg1=None, have_len=True, have_extra_len=True, sink=True,
                 all_invalid=False, zero_len=False, timed=False):
        self.name, self.b, self.s_q, self.h_q = name, b, s_q, h_q
        self.segs = [seg0] + ([seg1] if seg1 else [])
        self.have_len, self.have_extra_len, self.sink = have_len, have_extra_len and seg1 is not None, sink
        self.all_invalid, self.zero_len, self.timed = all_invalid, zero_len, timed


def flashmla_cases(quick):
    c = [
        # DeepSeek-V4's decode at one row (FlashMLA's production layout, block 64): the host-time bar.
        Case("dsv4 h64 T=1 128 B64 + 512 B64", 1, 1, 64, (128, 128, 64), (2048, 512, 64), timed=True),
        Case("dsv4 h16 T=1 128 B64 + 512 B64", 1, 1, 16, (128, 128, 64), (2048, 512, 64), timed=True),
        Case("h64 topk64 B69", 4, 1, 64, (512, 64, 69), have_len=False, timed=True),
        Case("h64 topk64 B69 b74 s_q3", 74, 3, 64, (512, 64, 69)),
        Case("h128 topk576 B2 b74", 74, 1, 128, (1024, 576, 2), have_len=False),
        Case("h64 topk2048 B64 b4 s_q3", 4, 3, 64, (2046, 2048, 64)),
        Case("h128 topk2048 B576 b74", 74, 1, 128, (2046, 2048, 576), sink=False),
        Case("h64 topk576 B61 + 64 B5 b74 s_q3", 74, 3, 64, (1024, 576, 61), (512, 64, 5)),
        Case("h128 topk64 B5 + 2048 B576 b4", 4, 1, 128, (512, 64, 5), (2046, 2048, 576), have_extra_len=False),
        Case("h64 topk2048 B1 + 576 B123 b4 s_q3", 4, 3, 64, (2046, 2048, 1), (1024, 576, 123)),
        Case("corner h64 576 B53 + 576 B53 all invalid", 74, 3, 64, (650, 576, 53), (650, 576, 53), all_invalid=True),
        Case("corner h64 576 B53 + 576 B53 zero lengths", 1, 3, 64, (650, 576, 53), (650, 576, 53), zero_len=True),
        Case("corner h128 64 B61 + 64 B61 b321 s_q3", 321, 3, 128, (512, 64, 61), (512, 64, 61)),
        Case("production h64 128 B256 + 512 B64 b64 s_q4", 64, 4, 64, (256, 128, 256), (2048, 512, 64), timed=True),
        Case("production h128 128 B256 + 512 B64 b128 s_q4", 128, 4, 128, (256, 128, 256), (2048, 512, 64), timed=True),
        Case("production h64 b512 s_q4", 512, 4, 64, (256, 128, 256), (2048, 512, 64)),
    ]
    return c[:3] if quick else c


def make_inputs(torch, case, seed):
    """FlashMLA-layout tensors of a case, and the reference's view of them."""
    g = torch.Generator(device="cuda").manual_seed(seed)
    dev = "cuda"
    b, s_q, h = case.b, case.s_q, case.h_q
    rows = b * s_q
    q = torch.randn(b, s_q, h, 512, generator=g, device=dev).to(torch.bfloat16)
    segs = []
    for si, (s_k, topk, B) in enumerate(case.segs):
        pages_per_b = -(-s_k // B)
        pages = b * pages_per_b
        stride = -(-B * 584 // 576) * 576  # padded like vLLM's fp8ds blocks (a multiple of 576)
        k = torch.randn(pages * B, 512, generator=g, device=dev)
        flat, _ = quantize_fp8ds(torch, k, B, stride)
        view = flat.as_strided((pages, B, 1, 584), (stride, 584, 584, 1))
        # Each row picks min(topk, s_k) distinct tokens of its own request's s_k, the rest -1.
        tok = torch.rand(rows, s_k, generator=g, device=dev).argsort(dim=1)[:, :topk]
        n_take = min(topk, s_k)
        base = (torch.arange(rows, device=dev) // s_q) * pages_per_b * B
        idx = torch.full((rows, topk), -1, dtype=torch.int32, device=dev)
        idx[:, :n_take] = (tok[:, :n_take] + base.unsqueeze(1)).to(torch.int32)
        drop = torch.rand(rows, topk, generator=g, device=dev) < 0.1
        idx = torch.where(drop, torch.full_like(idx, -1), idx)
        idx = idx[:, torch.randperm(topk, generator=g, device=dev)]
        if case.all_invalid:
            idx.fill_(-1)
        lens = None
        if (case.have_len if si == 0 else case.have_extra_len):
            lens = torch.randint(0, topk + 1, (b,), generator=g, device=dev, dtype=torch.int32)
            if case.zero_len:
                lens.zero_()
        segs.append({"flat": flat, "view": view, "pages": pages, "B": B, "stride": stride,
                     "idx": idx.view(b, s_q, topk).contiguous(), "lens": lens})
    sink = None
    if case.sink:
        sink = torch.randn(h, generator=g, device=dev).float()
        sink[0], sink[-1] = -math.inf, (math.inf if h > 2 else sink[-1])
    return q, segs, sink


def call_kwargs(q, segs, sink, sched, scale):
    kw = dict(q=q, k_cache=segs[0]["view"], block_table=None, cache_seqlens=None, head_dim_v=512,
              tile_scheduler_metadata=sched, softmax_scale=scale, is_fp8_kvcache=True, indices=segs[0]["idx"],
              attn_sink=sink, topk_length=segs[0]["lens"])
    if len(segs) > 1:
        kw.update(extra_k_cache=segs[1]["view"], extra_indices_in_kvcache=segs[1]["idx"],
                  extra_topk_length=segs[1]["lens"])
    return kw


def reference_of(torch, q, segs, sink, scale, s_q):
    b = q.shape[0]
    rsegs = []
    for s in segs:
        pool = dequantize_pool(torch, s["flat"], s["pages"], s["B"], s["stride"])
        idx = s["idx"].reshape(b * s_q, -1).long()
        lens = s["lens"].repeat_interleave(s_q) if s["lens"] is not None else None
        rsegs.append((pool, idx, lens))
    return reference(torch, q.reshape(b * s_q, q.shape[2], 512), rsegs, sink, scale)


def host_times(torch, fn, n, sync_every=50):
    """Median host time of fn() (perf_counter around each call, no synchronization
    inside), in us; the queue is drained every sync_every calls, outside the timing."""
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    ts = []
    for i in range(n):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
        if i % sync_every == sync_every - 1:
            torch.cuda.synchronize()
    torch.cuda.synchronize()
    return statistics.median(ts) * 1e6


def kernel_times(torch, fn, n):
    """Median CUDA-event time of fn() in us."""
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
    for _ in range(5):
        fn()
    for s, e in ev:
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) * 1e3 for s, e in ev)


def graph_check(torch, fn, out_eager, lse_eager, what):
    """Captures fn (which returns (out, lse)) in a CUDA graph, replays it twice, and
    requires the eager call's bits; returns the median replay time in us or None."""
    try:
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
        torch.cuda.current_stream().wait_stream(s)
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            out, lse = fn()
        same = True
        for _ in range(2):
            out.fill_(float("nan"))
            graph.replay()
            torch.cuda.synchronize()
            same &= torch.equal(out.view(torch.int16), out_eager.view(torch.int16)) and \
                torch.equal(lse.contiguous().view(torch.int32), lse_eager.contiguous().view(torch.int32))
        report(same, f"{what}: CUDA graph capture and 2 replays", "same bits as the eager call" if same else "differ")
        return kernel_times(torch, graph.replay, 50)
    except Exception as e:
        report(False, f"{what}: CUDA graph", f"{type(e).__name__}: {e}")
        return None


def run_case(torch, pm, fm, case, seed, args):
    what = case.name
    print(f"\n-- {what}: b={case.b} s_q={case.s_q} h_q={case.h_q} segments {case.segs}", flush=True)
    q, segs, sink = make_inputs(torch, case, seed)
    scale = 512 ** -0.5
    sched, _ = pm.get_mla_metadata()
    kw = call_kwargs(q, segs, sink, sched, scale)
    try:
        out, lse = pm.flash_mla_with_kvcache(**kw)
        torch.cuda.synchronize()
    except PtxgenMLAError as e:
        if "no generated kernel" in str(e):
            report(None, f"{what}: ptxgen", str(e))
        else:
            report(False, f"{what}: ptxgen call", str(e))
        return
    b, s_q, h = case.b, case.s_q, case.h_q
    report(tuple(out.shape) == (b, s_q, h, 512) and out.dtype == torch.bfloat16, f"{what}: out layout",
           f"{tuple(out.shape)} {out.dtype}")
    report(tuple(lse.shape) == (b, h, s_q) and lse.stride() == (s_q * h, 1, h) and lse.dtype == torch.float32,
           f"{what}: lse layout (b, h_q, s_q), the transpose of a contiguous (b, s_q, h_q)",
           f"{tuple(lse.shape)} strides {lse.stride()}")
    ref_out, ref_lse = reference_of(torch, q, segs, sink, scale, s_q)
    ok, line = compare(torch, out.reshape(b * s_q, h, 512), ref_out, vectors.OUT_TOL)
    report(ok, f"{what}: ptxgen exact out vs float64", line)
    ok, line = compare(torch, lse.transpose(1, 2).reshape(b * s_q, h), ref_lse, vectors.LSE_TOL)
    report(ok, f"{what}: ptxgen exact lse vs float64 (natural log, +inf rows)", line)
    kw_p = dict(kw, tile_scheduler_metadata=pm.get_mla_metadata()[0], precision="bf16p")
    try:
        out_p, _ = pm.flash_mla_with_kvcache(**kw_p)
        ok, line = compare(torch, out_p.reshape(b * s_q, h, 512), ref_out, vectors.OUT_TOL_BF16P)
        report(ok, f"{what}: ptxgen bf16p out vs float64 (bf16p tolerance)", line)
    except PtxgenMLAError as e:
        report(None, f"{what}: ptxgen bf16p", str(e).split(". Generate")[0])
    # The same call again on the same schedule object, as engines reuse it.
    out2, lse2 = pm.flash_mla_with_kvcache(**kw)
    torch.cuda.synchronize()
    report(torch.equal(out2.view(torch.int16), out.view(torch.int16)), f"{what}: deterministic (second call, same sched)")
    fl = None
    if fm is not None:
        fl = run_flashmla(torch, fm, case, kw, out, lse, ref_out, ref_lse)
    if case.timed or args.time_all:
        time_case(torch, pm, fm, case, kw, out, lse, fl)
    else:
        graph_check(torch, lambda: pm.flash_mla_with_kvcache(**dict(kw, tile_scheduler_metadata=None)), out, lse, what)


def run_flashmla(torch, fm, case, kw, out, lse, ref_out, ref_lse):
    what = case.name
    b, s_q, h = case.b, case.s_q, case.h_q
    if h not in (64, 128) or any(topk % 64 for _, topk, _ in case.segs):
        report(None, f"{what}: FlashMLA", "runs h_q 64 or 128 with top-k a multiple of 64 only")
        return None
    try:
        sched, _ = fm.get_mla_metadata()
        fo, fl = fm.flash_mla_with_kvcache(**dict(kw, tile_scheduler_metadata=sched))
        torch.cuda.synchronize()
    except Exception as e:
        report(False, f"{what}: FlashMLA call", f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}")
        return None
    report(tuple(fl.shape) == tuple(lse.shape) and fl.stride() == lse.stride(), f"{what}: LSE layout identical to FlashMLA's",
           f"ptxgen {tuple(lse.shape)} {lse.stride()}, FlashMLA {tuple(fl.shape)} {fl.stride()}")
    ok, line = compare(torch, fo.reshape(b * s_q, h, 512), ref_out, vectors.OUT_TOL)
    print(f"  info FlashMLA out vs float64 at the spec's thresholds: {'within' if ok else 'outside'}: {line}")
    ok, line = compare(torch, out.reshape(b * s_q, h, 512), fo.reshape(b * s_q, h, 512).float(), vectors.OUT_TOL_BF16P)
    report(ok, f"{what}: ptxgen exact vs FlashMLA out (bf16p tolerance: FlashMLA rounds P to bf16)", line)
    ok, line = compare(torch, lse.transpose(1, 2).reshape(b * s_q, h), fl.transpose(1, 2).reshape(b * s_q, h).double(),
                       vectors.LSE_TOL)
    report(ok, f"{what}: ptxgen vs FlashMLA lse (same base, same +inf rows)", line)
    ok, line = compare(torch, fl.transpose(1, 2).reshape(b * s_q, h), ref_lse, vectors.LSE_TOL)
    print(f"  info FlashMLA lse vs float64: {'within' if ok else 'outside'}: {line}")
    return fm


def time_case(torch, pm, fm, case, kw, out, lse, fl):
    what = case.name
    n = 2000
    sched, _ = pm.get_mla_metadata()
    kwp = dict(kw, tile_scheduler_metadata=sched)
    out_buf = torch.empty_like(out)

    def ptx():
        return pm.flash_mla_with_kvcache(**kwp)

    def ptx_out():
        return pm.flash_mla_with_kvcache(**kwp, out=out_buf)

    h_us = host_times(torch, ptx, n)
    h_out_us = host_times(torch, ptx_out, n)
    k_us = kernel_times(torch, ptx, 200)
    g_us = graph_check(torch, ptx, out, lse, what)
    rows = case.b * case.s_q
    print(f"  time ptxgen {what} ({rows} rows): host {h_us:.1f} us per eager call (median of {n}), "
          f"{h_out_us:.1f} us with out=, kernel {k_us:.1f} us (CUDA events), graph replay "
          f"{'-' if g_us is None else f'{g_us:.1f}'} us", flush=True)
    if rows == 1:
        breakdown(torch, kwp, n)
        report(h_us <= 15.0, f"{what}: eager host time per call at most 15 us", f"{h_us:.1f} us ({h_out_us:.1f} with out=)")
    if g_us is not None:
        print(f"  info graph replay {g_us:.1f} us vs eager kernel {k_us:.1f} us: the replay adds {g_us - k_us:+.1f} us")
    if fl is not None:
        fsched, _ = fl.get_mla_metadata()
        fkw = dict(kw, tile_scheduler_metadata=fsched)
        fl.flash_mla_with_kvcache(**fkw)
        fh = host_times(torch, lambda: fl.flash_mla_with_kvcache(**fkw), n)
        fk = kernel_times(torch, lambda: fl.flash_mla_with_kvcache(**fkw), 200)
        print(f"  time FlashMLA {what}: host {fh:.1f} us per eager call, kernel {fk:.1f} us", flush=True)


def breakdown(torch, kw, n):
    """Where an eager call's host time goes: the plan key, the planned call (addresses,
    allocation, launch) and the launches alone."""
    from . import interface
    args = (kw["q"], kw["k_cache"], kw["indices"], kw.get("topk_length"), kw.get("attn_sink"), kw.get("extra_k_cache"),
            kw.get("extra_indices_in_kvcache"), kw.get("extra_topk_length"), None, kw["head_dim_v"], None,
            kw.get("softmax_scale"), False, True, "exact")
    key = interface._key(*args)
    plan = interface._plans.get(key)
    if plan is None:
        print("  info breakdown: no plan under this key")
        return
    ts = []
    for _ in range(n):
        t0 = time.perf_counter()
        interface._key(*args)
        ts.append(time.perf_counter() - t0)
    key_us = statistics.median(ts) * 1e6
    call_us = host_times(torch, lambda: plan(*args[:8], None, None), n)
    stream = torch.cuda.current_stream().cuda_stream
    keep = plan(*args[:8], None, None)  # the slots now hold these live out and lse
    launch_us = host_times(torch, lambda: plan.launcher.run(stream), n)
    del keep
    print(f"  info host time breakdown: plan key {key_us:.1f} us, planned call (addresses, out and lse, launch) "
          f"{call_us:.1f} us, of which the {len(plan.launcher.entries)} launches {launch_us:.1f} us")


# ---------------------------------------------------------------------------------------


def strided_views(torch, pm):
    step("strided views: q, caches and indices as views of wider buffers (vLLM's layouts)")
    case = Case("strided", 8, 1, 64, (256, 128, 64), (1024, 512, 64))
    q, segs, sink = make_inputs(torch, case, 7)
    dense = pm.flash_mla_with_kvcache(**call_kwargs(q, segs, sink, None, None))[0]
    wide_q = torch.zeros(8, 1, 80, 512 + 64, dtype=torch.bfloat16, device="cuda")
    wide_q[:, :, 8:72, :512] = q
    qv = wide_q[:, :, 8:72, :512]
    vsegs = []
    for s in segs:
        B, pages = s["B"], s["pages"]
        stride = s["stride"] + 4096  # a wider block stride than the data needs
        big = torch.zeros(pages, stride, dtype=torch.uint8, device="cuda")
        big[:, :s["stride"]] = s["flat"].view(pages, s["stride"])
        view = big.view(-1).as_strided((pages, B, 1, 584), (stride, 584, 584, 1))
        wide_idx = torch.full((8, 1, s["idx"].shape[2] + 16), -1, dtype=torch.int32, device="cuda")
        wide_idx[:, :, :s["idx"].shape[2]] = s["idx"]
        vsegs.append(dict(s, view=view, idx=wide_idx[:, :, :s["idx"].shape[2]], flat=big.view(-1), stride=stride))
    try:
        got = pm.flash_mla_with_kvcache(**call_kwargs(qv, vsegs, sink, None, None))[0]
        torch.cuda.synchronize()
        report(torch.equal(got.view(torch.int16), dense.view(torch.int16)), "strided q, caches, indices: same bits as dense")
    except PtxgenMLAError as e:
        report(False, "strided views", str(e))
    bad = vsegs[0]["flat"].as_strided((vsegs[0]["pages"] // 2, 64, 1, 584), (vsegs[0]["stride"] + 8, 584, 584, 1))
    try:
        pm.flash_mla_with_kvcache(**dict(call_kwargs(qv, vsegs, sink, None, None), k_cache=bad))
        report(False, "a block stride that is not a multiple of 16 is refused", "accepted")
    except PtxgenMLAError as e:
        report("multiple of 16" in str(e), "a block stride that is not a multiple of 16 is refused", str(e))


def refusals(torch, pm):
    step("refusals with CUDA tensors (FlashMLA's sparse-mode refusals, and what the kernel cannot take)")
    case = Case("refusals", 2, 1, 16, (256, 128, 64), (1024, 512, 64))
    q, segs, sink = make_inputs(torch, case, 3)
    kw = call_kwargs(q, segs, sink, None, None)
    bad = [
        ("causal=True", dict(causal=True), "causal must be False"),
        ("is_fp8_kvcache=False", dict(is_fp8_kvcache=False), "is_fp8_kvcache must be True"),
        ("head_dim_v=576", dict(head_dim_v=576), "head_size_v == 512"),
        ("a bf16 cache", dict(k_cache=torch.zeros(4, 64, 1, 584, dtype=torch.bfloat16, device="cuda")), "fp8_e4m3fn, int8 or uint8"),
        ("num_splits=4", dict(num_splits=4), "num_splits"),
        ("q on the CPU", dict(q=q.cpu()), "on the CPU"),
        ("q misaligned", dict(q=torch.zeros(2 * 16 * 512 + 1, dtype=torch.bfloat16, device="cuda")[1:].view(2, 1, 16, 512)),
         "16-byte aligned"),
        ("softmax_scale=1e308", dict(softmax_scale=1e308), "softmax_scale"),
        ("extra indices without extra_k_cache", dict(extra_k_cache=None), "extra_indices_in_kvcache must not be provided"),
    ]
    for what, change, want in bad:
        try:
            pm.flash_mla_with_kvcache(**dict(kw, **change))
            report(False, f"{what} is refused", "accepted")
        except PtxgenMLAError as e:
            report(want in str(e), f"{what} is refused", str(e))
        except Exception as e:
            report(False, f"{what} is refused with PtxgenMLAError", f"{type(e).__name__}: {e}")


def compile_check(torch, pm):
    step("torch custom op and torch.compile")
    op = pm.register_op()
    if op is None:
        report(None, "custom op", f"torch {torch.__version__} has no torch.library.custom_op")
        return
    report(True, "custom op ptxgen_mla::sparse_decode registered")
    case = Case("compile", 4, 1, 64, (256, 128, 64), (1024, 512, 64))
    q, segs, sink = make_inputs(torch, case, 5)
    kw = call_kwargs(q, segs, sink, None, None)
    eager = pm.flash_mla_with_kvcache(**kw)
    torch.cuda.synchronize()
    opcheck = getattr(torch.library, "opcheck", None)
    if opcheck is not None:
        b, s_q, h = 4, 1, 64
        args = (q, segs[0]["view"], segs[0]["idx"], segs[0]["lens"], sink, segs[1]["view"], segs[1]["idx"],
                segs[1]["lens"], torch.empty(b, s_q, h, 512, dtype=torch.bfloat16, device="cuda"),
                torch.empty(b, s_q, h, dtype=torch.float32, device="cuda"), 512 ** -0.5, "exact")
        try:
            opcheck(torch.ops.ptxgen_mla.sparse_decode.default, args, test_utils=("test_schema", "test_faketensor"))
            report(True, "torch.library.opcheck (schema: the declared mutations; fake tensor: the fake implementation)")
        except Exception as e:
            report(False, "torch.library.opcheck (schema, fake tensor)", f"{type(e).__name__}: {str(e)[:500]}")
        try:
            opcheck(torch.ops.ptxgen_mla.sparse_decode.default, args, test_utils=("test_aot_dispatch_dynamic",))
            print("  info torch.library.opcheck test_aot_dispatch_dynamic: ok")
        except Exception as e:  # the fake implementation specializes the shapes it checks
            print(f"  info torch.library.opcheck test_aot_dispatch_dynamic: {type(e).__name__}: {str(e)[:300]}")

    def fn(q, k0, i0, l0, s, k1, i1, l1):
        return pm.flash_mla_with_kvcache(q, k0, None, None, 512, None, softmax_scale=512 ** -0.5, is_fp8_kvcache=True,
                                         indices=i0, topk_length=l0, attn_sink=s, extra_k_cache=k1,
                                         extra_indices_in_kvcache=i1, extra_topk_length=l1)
    try:
        cfn = torch.compile(fn, fullgraph=True)
        out, lse = cfn(q, segs[0]["view"], segs[0]["idx"], segs[0]["lens"], sink, segs[1]["view"], segs[1]["idx"],
                       segs[1]["lens"])
        torch.cuda.synchronize()
        same = torch.equal(out.view(torch.int16), eager[0].view(torch.int16)) and \
            torch.equal(lse.contiguous().view(torch.int32), eager[1].contiguous().view(torch.int32))
        report(same, "torch.compile(fullgraph=True) of the call: the eager call's bits", f"lse strides {lse.stride()}")
    except Exception as e:
        report(False, "torch.compile(fullgraph=True) of the call", f"{type(e).__name__}: {str(e)[:800]}")


def vector_folders(torch, pm, fm, dirs):
    step(f"test-vector folders through the package's call: {', '.join(dirs)}")
    folders = []
    for d in dirs:
        try:
            folders += vectors.folders_under(d)
        except PtxgenMLAError as e:
            report(False, f"vectors {d}", str(e))
    for folder in folders:
        name = os.path.basename(os.path.normpath(folder))
        try:
            v = vectors.load_folder(folder)
        except PtxgenMLAError as e:
            report(False, f"{name}: read", str(e))
            continue
        m = v["meta"]
        if m["cache"] != "fp8ds":
            report(None, f"{name}", f"cache {m['cache']!r}: FlashMLA's call takes the fp8ds cache only")
            continue
        lay = vectors.call_layout(v)
        T, H, D = v["T"], v["H"], v["D"]
        f = v["files"]

        def tensor(name_, dtype, shape):
            return torch.frombuffer(bytearray(f[name_]), dtype=dtype).reshape(shape).to("cuda")

        q = tensor("q.bf16", torch.bfloat16, lay["q_shape"])
        segs = []
        for s in lay["segments"]:
            flat = torch.frombuffer(bytearray(f[s["cache"]]), dtype=torch.uint8).to("cuda")
            view = flat.as_strided(s["view_shape"], s["view_stride"])
            idx = tensor(s["idx"], torch.int32, s["idx_shape"])
            lens = tensor(s["len"], torch.int32, (T,)) if s["has_len"] else None
            segs.append({"view": view, "idx": idx, "lens": lens})
        sink = tensor("sink.f32", torch.float32, (H,)) if lay["sink"] else None
        ref_out = tensor("out_ref.f64", torch.float64, (T, H, D))
        ref_lse = tensor("lse_ref.f64", torch.float64, (T, H))
        for precision, tol in (("exact", vectors.OUT_TOL), ("bf16p", vectors.OUT_TOL_BF16P)):
            try:
                out, lse = pm.flash_mla_with_kvcache(**call_kwargs(q, segs, sink, pm.get_mla_metadata()[0],
                                                                   lay["softmax_scale"]), precision=precision)
                torch.cuda.synchronize()
            except PtxgenMLAError as e:
                report(None if "no generated kernel" in str(e) else False, f"{name} {precision}", str(e))
                continue
            ok, line = compare(torch, out.reshape(T, H, D), ref_out, tol)
            report(ok, f"{name} (T={T} H={H}) {precision}: out vs out_ref", line)
            ok, line = compare(torch, lse.transpose(1, 2).reshape(T, H), ref_lse, vectors.LSE_TOL)
            report(ok, f"{name} {precision}: lse vs lse_ref", line)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m ptxgen_mla.gpu_test", description=__doc__.split("\n")[0])
    ap.add_argument("--vectors", action="append", default=[], metavar="DIR",
                    help="a test-vector folder or a folder of them (repeatable): shared/testvectors/mla_decode, bench folders")
    ap.add_argument("--flashmla", metavar="ROOT", help="where anchors/flashmla/build.sh built FlashMLA (/tmp/flashmla); "
                                                       "without it FlashMLA is imported only if importable")
    ap.add_argument("--quick", action="store_true", help="three FlashMLA shapes instead of all")
    ap.add_argument("--time-all", action="store_true", help="time every FlashMLA shape, not only the marked ones")
    ap.add_argument("--json", metavar="FILE", help="write every check's result here")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    try:
        import torch
    except ImportError as e:
        print(f"gpu_test: torch is not importable ({e})", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print("gpu_test: torch sees no CUDA device", file=sys.stderr)
        return 2
    import ptxgen_mla as pm
    from .launch import device
    from .targets import device_arch, pick_target
    step("environment")
    cap = torch.cuda.get_device_capability()
    props = torch.cuda.get_device_properties(0)
    print(f"  python {sys.version.split()[0]}, torch {torch.__version__} (CUDA {torch.version.cuda}), "
          f"{props.name}, capability {cap[0]}.{cap[1]}, {props.multi_processor_count} SMs")
    print(f"  ptxgen_mla {pm.__version__} from {os.path.dirname(pm.__file__)}")
    try:
        import cuda.bindings
        print(f"  cuda.bindings {getattr(cuda.bindings, '__version__', '?')}")
        dev = device(torch, torch.cuda.current_device())
        report(True, f"device {dev.arch}: {dev.sms} SMs, {dev.smem_optin} bytes of shared memory per block")
    except Exception as e:
        report(False, "cuda.bindings and the device", f"{type(e).__name__}: {e}")
        traceback.print_exc()
        return finish(args)
    try:
        t = pick_target(device_arch(cap), ["sm_120", "sm_90", "sm_86", "sm_80"])
        report(True, f"the package's DeepSeek-V4 kernels run as {t} PTX on this device")
    except PtxgenMLAError as e:
        report(False, "target choice", str(e))
    configs, skipped = pm.kernel_configs()
    print(f"  {len(configs)} kernel configurations known, {len(skipped)} manifests skipped")
    fm = None
    if args.flashmla:
        if args.flashmla not in sys.path:
            sys.path.insert(0, args.flashmla)
    try:
        import flash_mla as fm  # noqa: F811
        import flash_mla.cuda  # noqa: F401
        print(f"  FlashMLA from {os.path.dirname(fm.__file__)}")
    except ImportError as e:
        fm = None
        msg = f"not importable ({e}): the side-by-side checks are skipped"
        if args.flashmla:
            report(False, "FlashMLA", msg)
        else:
            print(f"  FlashMLA {msg} (--flashmla ROOT)")
    for name, fn in (("custom op", lambda: compile_check(torch, pm)), ("strided views", lambda: strided_views(torch, pm)),
                     ("refusals", lambda: refusals(torch, pm))):
        try:
            fn()
        except Exception as e:
            report(False, f"{name}: unexpected {type(e).__name__}", str(e))
            traceback.print_exc()
    step("FlashMLA's sparse-decode test shapes, side by side")
    for i, case in enumerate(flashmla_cases(args.quick)):
        try:
            run_case(torch, pm, fm, case, args.seed * 1000 + i, args)
        except Exception as e:
            report(False, f"{case.name}: unexpected {type(e).__name__}", str(e))
            traceback.print_exc()
        torch.cuda.empty_cache()
    if args.vectors:
        try:
            vector_folders(torch, pm, fm, args.vectors)
        except Exception as e:
            report(False, f"vector folders: unexpected {type(e).__name__}", str(e))
            traceback.print_exc()
    return finish(args)


def finish(args):
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    print(f"\ngpu_test: {results['passed']} passed, {results['failed']} failed, {results['skipped']} skipped")
    return 1 if results["failed"] or not results["passed"] else 0


if __name__ == "__main__":
    sys.exit(main())
