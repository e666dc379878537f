"""Checks and times core_gen.py kernels on this GPU with torch and cuda-python only (no cupy, no Go).

    python3 hn_check.py VARIANTS [--json]

VARIANTS holds core_gen.py's output lines (name smem threads NC record-bytes GATHER [H]); the
kernels are core_<name>.cubin (from ptxas) or else core_<name>.ptx, in the current folder. All
kernels gather from the same 2 GiB paged pool (pages of 64 records of 584 bytes, as the cache lays
them out: finite e4m3 bytes, scale exponents 118..122, bf16 rope values) through the same
per-CTA index slices (random token ids, 2048 tiles per CTA).

Per variant, one line:
- check (heads-in-N kernels, H field present): one launch of 2 CTAs per SM x 7 tiles against a
  float64 reference computed here with torch: per CTA and head the softmax over its 224
  candidates, O = sum p v / sum p and lse; the kernel's O / L and its lse (max + log2 of the row
  sum) must meet the spec's bf16 thresholds (out: 1e-3 + 2.01/128 |ref|, lse: 1e-6 + 8/65536
  |ref|); DUMPS kernels also their last tile's scores (1e-5 of sum |q k| per score). The 16-head
  heads-in-M prototypes compute on fake fragments: "n/a".
- time: SM time per CTA-tile of 32 candidates (time x SMs / CTA-tiles, median of 5 launches of
  600 tiles per CTA) at 1-4 CTAs launched per SM, the CTAs resident per SM, and the GB/s
  gathered at the best.
"""
import ctypes
import json
import math
import os
import sys

import torch

cu = None   # cuda.bindings.driver, imported by main (compare() and the reference run without a GPU)

PAGE, REC, ROW = 64, 584, 576
PAGE_STRIDE = PAGE * REC
TILES_PER_CTA = 2048
CHECK_TILES = 7
TIME_TILES = 600


def check(res, what):
    err, *rest = res
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"{what}: {cu.cuGetErrorName(err)[1]}")
    return rest[0] if len(rest) == 1 else rest


class Kernel:
    def __init__(self, name, smem, threads):
        self.mod = None
        if os.path.exists(f"core_{name}.cubin"):
            path = f"core_{name}.cubin"
            err, mod = cu.cuModuleLoadData(open(path, "rb").read())
            if err == cu.CUresult.CUDA_SUCCESS:
                self.mod = mod
            else:
                print(f"# {path}: {cu.cuGetErrorName(err)[1]}: the driver JIT-compiles the PTX instead", flush=True)
        if self.mod is None:
            path = f"core_{name}.ptx"
            self.mod = check(cu.cuModuleLoadData(open(path, "rb").read() + b"\0"), f"load {path}")
        self.fn = check(cu.cuModuleGetFunction(self.mod, b"core"), "core")
        attr = cu.CUfunction_attribute
        check(cu.cuFuncSetAttribute(self.fn, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, smem), "smem")
        self.regs = check(cu.cuFuncGetAttribute(attr.CU_FUNC_ATTRIBUTE_NUM_REGS, self.fn), "regs")
        self.resident = check(cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(self.fn, threads, smem), "occupancy")
        self.smem, self.threads, self.path = smem, threads, path

    def launch(self, grid, args):
        """args: the kernel's parameters in order, pointers as torch tensors, u32 as ints."""
        vals = [ctypes.c_uint64(a.data_ptr()) if isinstance(a, torch.Tensor) else ctypes.c_uint32(a) for a in args]
        ptrs = (ctypes.c_void_p * len(vals))(*[ctypes.addressof(v) for v in vals])
        stream = cu.CUstream(torch.cuda.current_stream().cuda_stream)
        check(cu.cuLaunchKernel(self.fn, grid, 1, 1, self.threads, 1, 1, self.smem, stream, ctypes.addressof(ptrs), 0),
              "launch")


def e4m3_table():
    b = torch.arange(256, dtype=torch.int64)
    s = torch.where(b & 0x80 != 0, -1.0, 1.0).double()
    e, m = (b >> 3) & 15, (b & 7).double()
    v = torch.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * torch.exp2((e - 7).double()))
    return s * v


def make_pool(dev, gen, nbytes=2 << 30):
    npages = nbytes // PAGE_STRIDE
    pool = torch.empty(npages * PAGE_STRIDE + 4096, dtype=torch.uint8, device=dev)
    pages = pool[:npages * PAGE_STRIDE].view(npages, PAGE_STRIDE)
    recs = pages[:, :PAGE * ROW].view(npages, PAGE, ROW)
    nope = recs[..., :448]
    nope.copy_(torch.randint(0, 256, nope.shape, dtype=torch.uint8, device=dev, generator=gen))
    nope.sub_(((nope & 0x7F) == 0x7F).to(torch.uint8))            # no e4m3 NaN
    rope = torch.randn((npages, PAGE, 64), device=dev, generator=gen).to(torch.bfloat16)
    recs[..., 448:].copy_(rope.view(torch.uint8))
    scales = pages[:, PAGE * ROW:].view(npages, PAGE, 8)
    scales.copy_(torch.randint(118, 123, scales.shape, dtype=torch.uint8, device=dev, generator=gen))
    return pool, npages


def reference(pool, idx, q, grid, nc, ntiles):
    """float64 scores, max, sum and normalized O of every CTA's first ntiles tiles."""
    dev = pool.device
    ids = idx[:grid * TILES_PER_CTA * nc].view(grid, TILES_PER_CTA * nc)[:, :ntiles * nc].long()
    page, off = ids // PAGE, ids % PAGE
    rec = page * PAGE_STRIDE + off * ROW
    raw = pool[rec[..., None] + torch.arange(ROW, device=dev)]
    sc = pool[(page * PAGE_STRIDE + PAGE * ROW + off * 8)[..., None] + torch.arange(7, device=dev)]
    nope = e4m3_table().to(dev)[raw[..., :448].long()] * torch.exp2(sc.double() - 127).repeat_interleave(64, dim=-1)
    rope = raw[..., 448:].contiguous().view(torch.bfloat16).double()
    k = torch.cat([nope, rope], dim=-1)                          # [grid, n, 512]
    qd = q.double()
    s = k @ qd.T                                                 # [grid, n, H], log2 units
    m = s.max(dim=1).values
    p = torch.exp2(s - m[:, None, :])
    l = p.sum(dim=1)
    o = torch.einsum("gnh,gnd->ghd", p, k) / l[..., None]
    bound = k.abs() @ qd.abs().T
    return s, m, l, o, bound


def hn_check(kern, pool, npages, idx, q, sms, nc, heads, dumps):
    grid = 2 * sms
    blk = heads * 512 + 2 * heads + (nc * heads if dumps else 0)
    out = torch.full((grid, blk), float("nan"), dtype=torch.float32, device=pool.device)
    kern.launch(grid, (out, CHECK_TILES, pool, npages * PAGE, idx, q))
    torch.cuda.synchronize()
    return compare(out, pool, idx, q, nc, heads, dumps, CHECK_TILES)


def compare(out, pool, idx, q, nc, heads, dumps, ntiles):
    """The kernel's output block per CTA ([grid, blk] f32: O[h][d] unnormalized, max, sum, and for
    DUMPS the last tile's scores [candidate][head]) against the float64 reference."""
    grid = out.shape[0]
    s, m, l, o, bound = reference(pool, idx, q, grid, nc, ntiles)
    km = out[:, heads * 512:heads * 512 + heads].double()
    kl = out[:, heads * 512 + heads:heads * 512 + 2 * heads].double()
    ko = out[:, :heads * 512].view(grid, heads, 512).double() / kl[..., None]
    lse, klse = (m + torch.log2(l)) * math.log(2), (km + torch.log2(kl)) * math.log(2)
    eo, el = (ko - o).abs(), (klse - lse).abs()
    bad = int((~(eo <= 1e-3 + 2.01 / 128 * o.abs())).sum()) + int((~(el <= 1e-6 + 8 / 65536 * lse.abs())).sum())
    txt = f"max|dO| {eo.max().item():.1e} max|dlse| {el.max().item():.1e}"
    if dumps:
        ks = out[:, heads * 514:].view(grid, nc, heads).double()
        es = (ks - s[:, -nc:, :]).abs()
        bad += int((~(es <= 1e-5 * bound[:, -nc:, :] + 1e-6)).sum())
        txt += f" max|dS| {es.max().item():.1e}"
    if bad:
        g, h = divmod(int(torch.nan_to_num(eo, nan=1e30).amax(dim=2).argmax()), heads)
        return f"FAIL {bad} values ({txt}; worst O at CTA {g} head {h})"
    return f"PASS ({txt})"


def time_kernel(kern, grid, args_of, reps=5):
    a = args_of(grid)
    kern.launch(grid, a)
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        kern.launch(grid, a)
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) * 1e3)
    return sorted(ts)[len(ts) // 2]


def main():
    want_json = "--json" in sys.argv
    path = [a for a in sys.argv[1:] if not a.startswith("--")][0]
    global cu
    from cuda.bindings import driver as cu
    torch.cuda.init()
    dev = torch.device("cuda")
    torch.empty(1, device=dev)                                   # torch's primary context is current
    check(cu.cuInit(0), "cuInit")
    sms = torch.cuda.get_device_properties(dev).multi_processor_count
    gen = torch.Generator(device=dev)
    gen.manual_seed(30)
    pool, npages = make_pool(dev, gen)
    lines = [l.split() for l in open(path) if l.strip()]
    max_nc = max(int(f[3]) for f in lines)
    idx = torch.randint(0, npages * PAGE, (4 * sms * TILES_PER_CTA * max_nc,), dtype=torch.int32, device=dev,
                        generator=gen)
    qs = {h: (0.2 * torch.randn((h, 512), device=dev, generator=gen)).to(torch.bfloat16) for h in (8, 16)}
    print(f"# {torch.cuda.get_device_name(dev)}, {sms} SMs; ns = SM time per CTA-tile of 32 candidates "
          f"(median of 5 launches, {TIME_TILES} tiles per CTA) at 1/2/3/4 CTAs launched per SM", flush=True)
    for f in lines:
        name, smem, threads, nc, rec = f[0], *map(int, f[1:5])
        heads = int(f[6]) if len(f) > 6 else None
        kern = Kernel(name, smem, threads)
        dumps = name.endswith("_dumps")
        if heads:
            q = qs[heads]
            res = hn_check(kern, pool, npages, idx, q, sms, nc, heads, dumps)
            blk = heads * 512 + 2 * heads + (nc * heads if dumps else 0)
            outs = torch.zeros(4 * sms * blk, dtype=torch.float32, device=dev)

            def args_of(grid):
                return (outs, TIME_TILES, pool, npages * PAGE, idx, q)
        else:
            res = "n/a (fake fragments: a timing prototype)"
            outs = torch.zeros(4 * sms * threads * 80, dtype=torch.float32, device=dev)

            def args_of(grid):
                return (outs, TIME_TILES, pool, npages * PAGE, idx)
        ns = []
        for per_sm in (1, 2, 3, 4):
            us = time_kernel(kern, sms * per_sm, args_of)
            ns.append(us * 1e3 / (TIME_TILES * per_sm) * (32 / nc))
        if heads:
            o = outs[:2 * sms * blk].view(2 * sms, blk)
            if not torch.isfinite(o[:, heads * 512:heads * 514]).all():
                res = "FAIL (non-finite max or sum in the timed run) " + res
        best = min(range(4), key=lambda i: ns[i])
        gbps = sms * 32 * rec / ns[best]                        # bytes of a 32-candidate tile per ns of SM time
        layout = (f"heads in N, H={heads:2d}" if heads else "gather only     " if "_gatheronly" in name
                  else "heads in M, H=16")
        print(f"{name:36s} {layout} {kern.path.rsplit('.', 1)[1]:5s} regs {kern.regs:3d} smem {smem:6d} "
              f"resident {kern.resident}/SM  ns "
              + " / ".join(f"{x:5.0f}" for x in ns)
              + f"  best {ns[best]:5.0f} at {best + 1}/SM {gbps:5.0f} GB/s  check: {res}", flush=True)
        if want_json:
            print("JSON " + json.dumps(dict(name=name, heads=heads or 16, heads_in_n=bool(heads), regs=kern.regs,
                                            resident=kern.resident, ns_per_32c_tile=ns, best=ns[best],
                                            GBps=gbps, check=res)), flush=True)


if __name__ == "__main__":
    main()
