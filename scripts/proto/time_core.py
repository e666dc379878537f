"""Times the core-loop prototypes of core_gen.py on this GPU (run in the folder of the .ptx files and
variants.txt, whose lines are core_gen.py's output: name smem threads NC bytes-per-record gather).
Per variant and CTAs per SM: SM time per CTA-tile (16 heads x NC candidates), and for gathering
variants the bytes gathered per second. Also checks the integer e4m3 -> bf16 dequantization
(prmt, shl, and, mul.rn.bf16x2) bit for bit against exact values, subnormals included."""
import subprocess, sys, json
import numpy as np, cupy as cp

dev = cp.cuda.Device(0)
sms = dev.attributes["MultiProcessorCount"]


def deq_check():
    k = cp.RawModule(path="deq_check.ptx").get_function("deq")
    words = cp.arange(256 * 256, dtype=cp.uint32)
    words = (words & 0xFF) | ((words >> 8) << 16)          # bytes b0 (0..255) in byte 0, b1 in byte 2
    bad = 0
    for e in (0, 1, 7, 100, 120, 127, 134):
        out = cp.zeros(2 * words.size, dtype=cp.uint32)
        k((words.size // 128,), (128,), (words, out, cp.uint32(e)))
        got = cp.asnumpy(out).view(np.uint16).reshape(-1, 4)   # lo-pair (b0, 0), hi-pair (b1, 0)
        for lane, byte in ((0, np.arange(256 * 256) & 0xFF), (2, (np.arange(256 * 256) >> 8) & 0xFF)):
            val = e4m3(byte) * 2.0 ** (e - 127)
            want = f32_to_bf16_bits(val)
            g = got[:, lane]
            ok = (g == want) | np.isnan(val)     # e4m3 NaN (0x7f, 0xff) becomes a finite value
            bad += int((~ok).sum())
            if (~ok).any():
                i = np.nonzero(~ok)[0][0]
                print(f"  deq mismatch e={e} byte={byte[i]:#x}: got {g[i]:#06x} want {want[i]:#06x}")
    print(f"deq_check: {'PASS' if bad == 0 else f'FAIL {bad}'}")


def e4m3(b):
    b = np.asarray(b, dtype=np.int64)
    s = np.where(b & 0x80, -1.0, 1.0)
    ex = (b >> 3) & 0xF
    m = b & 7
    v = np.where(ex == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * 2.0 ** (ex - 7))
    return np.where((b & 0x7F) == 0x7F, np.nan, s * v)


def f32_to_bf16_bits(x):
    f = np.asarray(x, dtype=np.float32).view(np.uint32).astype(np.uint64)
    r = (f + 0x7FFF + ((f >> 16) & 1)) >> 16     # round to nearest even (exact inputs: no rounding)
    return r.astype(np.uint16)


def run(name, smem, threads, nc, rec, gather, per_sm, ntiles, pool, nrec, reps=5):
    mod = cp.RawModule(path=f"core_{name}.ptx")
    k = mod.get_function("core")
    if smem > 48 * 1024:
        k.max_dynamic_shared_size_bytes = smem
    grid = sms * per_sm
    out = cp.zeros(grid * threads * 80, dtype=cp.float32)
    args = (out, cp.uint32(ntiles)) + ((pool, cp.uint32(nrec)) if gather else ())
    if gather == 2:
        npages = pool.size // (64 * 584)
        idx = cp.random.randint(0, npages * 64, size=grid * 2048 * nc, dtype=cp.int32)
        args = args + (idx,)
    k((grid,), (threads,), args, shared_mem=smem)
    dev.synchronize()
    ts = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        k((grid,), (threads,), args, shared_mem=smem)
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b) * 1e3)
    us = sorted(ts)[len(ts) // 2]
    ns_tile = us * 1e3 / (ntiles * per_sm) * (16 / nc) * 2   # per 16 heads x 32 candidates
    res = dict(name=name, per_sm=per_sm, us=us, ns_per_32c_tile=ns_tile, regs=int(getattr(k, "num_regs", 0)))
    if gather:
        res["GBps"] = grid * ntiles * nc * rec / (us * 1e-6) / 1e9
    return res


if __name__ == "__main__":
    # time_core.py deq | time NAME | once NAME (one launch, for ncu)
    if sys.argv[1] == "deq":
        deq_check()
        sys.exit(0)
    mode, want = sys.argv[1], sys.argv[2]
    nrec = (2 << 30) // 584
    pool = cp.zeros(nrec * 584 + 4096, dtype=cp.uint8)   # records (576 B each), then 8-byte scale words
    pool[:] = cp.random.randint(0, 120, size=pool.size, dtype=cp.uint8)   # finite e4m3 bytes
    for line in open("variants.txt"):
        name, smem, threads, nc, rec, gather = line.split()
        if name != want:
            continue
        smem, threads, nc, rec, gather = int(smem), int(threads), int(nc), int(rec), int(gather)
        for per_sm in ((2,) if mode == "once" else (1, 2, 3, 4)):
            ntiles = (600 if gather else 1500) * (32 // nc)
            r = run(name, smem, threads, nc, rec, gather, per_sm, ntiles, pool, nrec, reps=(1 if mode == "once" else 5))
            print(f"{name:26s} {per_sm} CTA/SM regs {r['regs']:3d}: {r['us']:9.1f} us  {r['ns_per_32c_tile']:7.0f} ns SM-time per 16h x 32c tile"
                  + (f"  {r['GBps']:7.0f} GB/s" if gather else ""), flush=True)
            if mode == "time":
                print("JSON " + json.dumps(r), flush=True)
