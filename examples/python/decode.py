#!/usr/bin/env python3
"""A DeepSeek-V4 decode step through ptxgen_mla, called as FlashMLA is called.

    pip install ./python            # once, from the repository root (offline is fine)
    python3 examples/python/decode.py [--heads 16] [--rows 4] [--kernels DIR]

Builds one layer's inputs on the GPU in FlashMLA's layouts (q (b, 1, h_q, 512) bf16, a
sliding-window cache and a compressed cache of fp8ds pages viewed (blocks, 64, 1, 584)
with padded block strides, their indices and lengths, a sink), makes the call, and
prints the shapes FlashMLA would return and the kernels that ran. --kernels adds a
folder written by `ptxgen gen -manifest` (a configuration the package does not ship).
"""

import argparse
import sys


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--heads", type=int, default=16)
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--precision", default="exact", choices=["exact", "bf16p"])
    ap.add_argument("--kernels", help="a folder of ptxgen gen -manifest output to add")
    a = ap.parse_args()
    import torch
    import ptxgen_mla
    if a.kernels:
        ptxgen_mla.add_kernel_dir(a.kernels)
    b, h, dev = a.rows, a.heads, "cuda"
    block, stride = 64, 65 * 576  # 64 tokens of 584 bytes, blocks padded to a multiple of 576
    q = torch.randn(b, 1, h, 512, device=dev).to(torch.bfloat16)
    # Random bytes stand in for quantized keys here; gpu_test quantizes real ones.
    swa = torch.randint(0, 120, (32 * stride,), dtype=torch.uint8, device=dev)
    comp = torch.randint(0, 120, (256 * stride,), dtype=torch.uint8, device=dev)
    swa_cache = swa.as_strided((32, block, 1, 584), (stride, 584, 584, 1))
    comp_cache = comp.as_strided((256, block, 1, 584), (stride, 584, 584, 1))
    swa_idx = torch.randint(0, 32 * block, (b, 1, 128), dtype=torch.int32, device=dev)
    comp_idx = torch.randint(0, 256 * block, (b, 1, 512), dtype=torch.int32, device=dev)
    swa_len = torch.full((b,), 128, dtype=torch.int32, device=dev)
    comp_len = torch.randint(0, 513, (b,), dtype=torch.int32, device=dev)
    sink = torch.zeros(h, dtype=torch.float32, device=dev)
    sched, _ = ptxgen_mla.get_mla_metadata()
    try:
        out, lse = ptxgen_mla.flash_mla_with_kvcache(
            q, swa_cache, None, None, 512, sched, is_fp8_kvcache=True, indices=swa_idx, topk_length=swa_len,
            attn_sink=sink, extra_k_cache=comp_cache, extra_indices_in_kvcache=comp_idx, extra_topk_length=comp_len,
            precision=a.precision)
    except ptxgen_mla.PtxgenMLAError as e:
        print(f"decode.py: {e}", file=sys.stderr)
        return 2
    torch.cuda.synchronize()
    from ptxgen_mla.interface import plan_of
    plan = plan_of(q, swa_cache, swa_idx, topk_length=swa_len, attn_sink=sink, extra_k_cache=comp_cache,
                   extra_indices_in_kvcache=comp_idx, extra_topk_length=comp_len, precision=a.precision)
    print(f"out {tuple(out.shape)} {out.dtype}, lse {tuple(lse.shape)} strides {lse.stride()}")
    print(f"ran {', '.join(plan.launcher.entries)} ({plan.target} PTX of {plan.kernel_path})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
