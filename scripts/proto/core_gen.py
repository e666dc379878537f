"""Core-loop prototypes of the 16-head sparse MLA decode (issue 20, item 0), written as PTX.

One CTA = 16 heads; its W warps split the 512 dims (split-D: warp w owns DPW = 512/W dims of
q.k and of O). Per tile of NC candidates, each warp:
  raw e4m3 words (LDS.128 from its own ring rows) -> K B-fragments (dequantized in registers)
  -> partial scores by mma.sync against Q held in registers (loaded once)
  -> partial scores all-reduced through shared memory (one bar.sync per tile, double-buffered)
  -> online softmax (running max, ex2, partial row sums kept per warp)
  -> O *= alpha, P packed as bf16 hi + lo (exact) -> V B-fragments by movmatrix.trans of the K
     fragments -> P.V mma.sync into the warp's O columns.
Reduction order of q.k is permuted so that one 32-bit raw word of a candidate is one k-step's two
B registers (lane (g,q) of k-step k takes dims 32q' + 4k + 0..3 of its block; Q is loaded with the
same permutation). The fake shared addresses are conflict-free, as a ring whose 16-byte chunks are
XOR-swizzled by candidate row would be.

Options (name=value on the command line):
  W=4|8          warps per CTA (DPW = 128 | 64 dims per warp)
  NC=16|32       candidates per tile
  DEQ=f32|int|none
                 f32: cvt e4m3x2->f16x2, f16->f32, fmul by the f32 scale, cvt to bf16x2 (ptxgen today)
                 int: bytes placed by prmt (sign replicated into the next byte), shl 4, and with
                      0x87f087f0 -> bf16 bits of e4m3 * 2^-120, then mul.rn.bf16x2 by 2^(e-7)
                 none: raw words used as fragments (wrong values, same data flow)
  PIPE=0|1       1: q.k of tile j+1 is issued in the same block as softmax tail and P.V of tile j
                 (software pipelining inside the warp; the exchange of j+1 is written before the
                 barrier that ends iteration j)
  GATHER=0|1     1: each warp cp.async-gathers its own slice of every candidate of tile j+S-1 from
                 a pool of 584-byte records (random record ids from a hash) into an S-stage ring;
                 its visibility is the warp's own cp.async.wait_group + bar.warp.sync
  S=2|3|4        ring stages for GATHER=1
  EXACT=1|0      P as bf16 hi + lo (1) or one bf16 term (0)
  REG=N          .maxnreg N (0: none), to buy CTAs per SM
  GATHER=2       as 1, but the records come from a paged pool as in the cache (pages of 64 records,
                 584 B each: 576-byte records then 8-byte scale words), the token ids from an index
                 array (one ld.global.nc per chunk, L1 hits), and each warp runs a loop of exactly
                 its own chunk count (8 or 12 at W=4) instead of predicating to the largest
  IDXPF=1        GATHER=2: each lane loads the token id of candidate `lane` one tile ahead and the
                 chunk loops take ids by shfl.sync, so no index load sits in the address chain
  PROD=1         GATHER=2 with a producer warp: one more warp gathers whole records (consecutive
                 lanes take consecutive 16-byte chunks; lane l also the scale word of candidate l)
                 into an S-slot ring and hands
                 slots over by named barriers (FULL: producer bar.arrive, math warps bar.sync;
                 EMPTY: math warps bar.arrive after dequantizing, producer bar.sync)
  COMPUTE=0      only the gathers: each warp waits for its slot and folds one word of it into a
                 checksum (the gather ceiling through the same ring, for GATHER=1|2)
  HN=1 H=8|16    heads in the MMA's N dimension (issue 30 item 0), real data end to end: S^T = K.Q^T
                 and O^T = V^T.P^T with m16n8k16, candidates in M (16 per tile), H heads in N (8:
                 one n8 tile, 16: two). Needs W=4 GATHER=2 PIPE=0 PROD=0, NC=16|32. Reads q
                 (bf16 [H][512], scores in log2 units) and writes per CTA O^T unnormalized as
                 O[h][d] (f32, natural dims), the running max and the row sums (log2 units); see
                 heads_in_n() for the fragment layouts.
  DUMPS=1        HN=1: also the summed scores of the last tile (warp 0), to check S on its own
Writes core_<name>.ptx; prints the name, shared bytes, threads, NC, record bytes, GATHER (and H
for HN=1).
"""
import sys

opt = dict(W="4", NC="32", DEQ="int", PIPE="0", GATHER="0", S="3", EXACT="1", TARGET="sm_90", REG="0", COMPUTE="1", IDXPF="0", PROD="0",
           HN="0", H="16", DUMPS="0")
for a in sys.argv[1:]:
    k, v = a.split("=")
    opt[k] = v
HN, HEADS, DUMPS = int(opt["HN"]), int(opt["H"]), int(opt["DUMPS"])
if HN:
    for k_, ok in (("H", ("8", "16")), ("W", ("4",)), ("NC", ("16", "32")), ("GATHER", ("2",)), ("PIPE", ("0",)),
                   ("PROD", ("0",)), ("COMPUTE", ("1",)), ("DEQ", ("int",)), ("S", ("2", "3", "4"))):
        if opt[k_] not in ok:
            print(f"core_gen.py: HN=1 needs {k_} in {'|'.join(ok)}, got {k_}={opt[k_]}", file=sys.stderr)
            sys.exit(2)
elif HEADS != 16 or DUMPS:
    print(f"core_gen.py: H={HEADS} DUMPS={DUMPS} need HN=1 (the heads-in-M loop is 16 heads)", file=sys.stderr)
    sys.exit(2)
W, NC, PIPE, GATHER, S, EXACT = (int(opt[k]) for k in ("W", "NC", "PIPE", "GATHER", "S", "EXACT"))
DEQ = opt["DEQ"]
PROD = int(opt["PROD"])
DPW = 512 // W          # dims per warp
KS = DPW // 16          # q.k k-steps per warp
NT = NC // 8            # candidate n8 tiles
NB = max(DPW // 64, 1)  # scale blocks per warp
ON = DPW // 8           # O n8 tiles per warp
REC = 584
PSLOT = NC * REC        # a producer slot (PROD=1): NC records of 576 B, then their scale words
# 16-byte chunks of a record each warp gathers (nope 448 B = 28 chunks, rope 128 B = 8, scales 8 B).
if W == 4:
    CHUNKS = [8, 8, 8, 12]
else:
    CHUNKS = [4, 4, 4, 4, 4, 4, 4, 8]
# ring slot bytes of each warp: its chunks of NC candidates, then their 8-byte scale words
SLOTS = [NC * 16 * c + NC * 8 for c in CHUNKS]
ROW = 576               # bytes of a record's nope + rope part; its scales are in a separate array
STAGES = S if GATHER else 1
EXCH = HEADS * NC * 4 * 2           # a warp's partial scores, x2 buffers (bytes: heads x NC x f32)
EXCH_BASE = 0
RING_BASE = EXCH_BASE + W * EXCH
SMEM = RING_BASE + (S * PSLOT if PROD else STAGES * sum(SLOTS))

REG = int(opt["REG"])
COMPUTE = int(opt["COMPUTE"])
IDXPF = int(opt["IDXPF"])

PAGE = 64
PAGE_STRIDE = PAGE * REC
name = (f"w{W}_n{NC}_{DEQ}_p{PIPE}" + (f"_g{S}" if GATHER == 1 else f"_pg{S}" if GATHER == 2 else "")
        + ("_ipf" if IDXPF else "") + ("_prod" if PROD else "") + ("" if COMPUTE else "_gatheronly") + ("" if EXACT else "_bf16p")
        + (f"_r{REG}" if REG else "") + (f"_hn{HEADS}" if HN else "") + ("_dumps" if DUMPS else ""))
L = []


def e(s):
    L.append("\t" + s)


cnt = {"r": 0, "f": 0, "h": 0, "p": 10}


def R():
    cnt["r"] += 1
    return f"%r{cnt['r']}"


def F():
    cnt["f"] += 1
    return f"%f{cnt['f']}"


def H():
    cnt["h"] += 1
    return f"%h{cnt['h']}"


def P_():
    cnt["p"] += 1
    return f"%p{cnt['p']}"


# ---- prologue: lane, warp, bases
e("mov.u32 %x00, %tid.x;")
e("and.b32 %x01, %x00, 31;")        # lane
e("shr.u32 %x02, %x00, 5;")         # warp
e("mov.u32 %x03, smem;")
e(f"mad.lo.u32 %x04, %x02, {EXCH}, %x03;")          # this warp's exchange buffer
e(f"shl.b32 %x05, %x01, 4;")
# this warp's ring: base and slot size, by a select chain over the warp index
e(f"mov.u32 %x40, {SLOTS[0]};")
e(f"mov.u32 %x41, {RING_BASE};")
for i in range(1, W):
    p = P_()
    e(f"setp.eq.u32 {p}, %x02, {i};")
    e(f"selp.u32 %x40, {SLOTS[i]}, %x40, {p};")
    e(f"selp.u32 %x41, {RING_BASE + STAGES * sum(SLOTS[:i])}, %x41, {p};")
e("add.u32 %x06, %x03, %x41;")
e("add.u32 %x07, %x06, %x05;")     # this lane's raw read base (slot 0)
e(f"mad.lo.u32 %x08, %x01, 16, %x03;")              # lane offset for exchange reads
e("ld.param.u32 %x10, [ntiles];")
if GATHER:
    e("ld.param.u64 %rd1, [pool];")
    e("ld.param.u32 %x11, [nrec];")
    e(f"mul.wide.u32 %rd7, %x11, {ROW};")      # the scale array follows the records
    e("add.u64 %rd7, %rd7, %rd1;")
    e("mov.u32 %x12, %ctaid.x;")
    if GATHER == 2:
        e("ld.param.u64 %rd20, [pidx];")
        e(f"mul.wide.u32 %rd21, %x12, {NC * 4};")
        e("mul.lo.u64 %rd21, %rd21, 2048;")        # 2048 tiles of indices per CTA
        e("add.u64 %rd20, %rd20, %rd21;")
        if IDXPF:   # tile 0's id of candidate `lane`
            e("mov.u32 %x60, 0;")
            e(f"setp.lt.u32 %p9, %x01, {NC};")
            e("mul.wide.u32 %rd22, %x01, 4;")
            e("add.u64 %rd22, %rd22, %rd20;")
            e("@%p9 ld.global.nc.u32 %x60, [%rd22];")
    # chunks of this warp: lookup table by warp (per-warp chunk count and byte offset in a record)
    offs = [sum(CHUNKS[:i]) * 16 for i in range(W)]
    e(f"mov.u32 %x13, {CHUNKS[0]};")
    e(f"mov.u32 %x14, 0;")
    for i in range(1, W):
        p = P_()
        e(f"setp.eq.u32 {p}, %x02, {i};")
        e(f"selp.u32 %x13, {CHUNKS[i]}, %x13, {p};")
        e(f"selp.u32 %x14, {offs[i]}, %x14, {p};")


def record_id(tile_reg, cand):
    """GATHER=1's record of candidate `cand` of a tile: hash(cta, tile, cand) mod nrec."""
    h = R()
    e(f"mad.lo.u32 {h}, %x12, 1000003, {tile_reg};")
    e(f"mad.lo.u32 {h}, {h}, 7919, {cand};")
    e(f"mul.lo.u32 {h}, {h}, -1640531535;")
    h2 = R()
    e(f"shr.u32 {h2}, {h}, 15;")
    e(f"xor.b32 {h}, {h}, {h2};")
    e(f"rem.u32 {h}, {h}, %x11;")
    return h


def gather(tile_reg, slot_expr_reg):
    """cp.async this warp's chunks of every candidate of tile `tile_reg` into the ring slot at
    `slot_expr_reg` (a register holding the slot's byte base for this warp)."""
    total = NC * max(CHUNKS)
    for it in range((total + 31) // 32):
        cid = R()
        e(f"add.u32 {cid}, %x01, {it * 32};")          # chunk id within the tile
        cand = R()
        ch = R()
        # cand = cid / maxchunks, ch = cid % maxchunks (maxchunks is a power of two or 12)
        mc = max(CHUNKS)
        e(f"div.u32 {cand}, {cid}, {mc};") if mc & (mc - 1) else e(f"shr.u32 {cand}, {cid}, {mc.bit_length() - 1};")
        e(f"rem.u32 {ch}, {cid}, {mc};") if mc & (mc - 1) else e(f"and.b32 {ch}, {cid}, {mc - 1};")
        ok = P_()
        e(f"setp.lt.u32 {ok}, {ch}, %x13;")
        if total - it * 32 < 32:
            ok2 = P_()
            e(f"setp.lt.u32 {ok2}, {cid}, {total};")
            e(f"and.pred {ok}, {ok}, {ok2};")
        h = record_id(tile_reg, cand)
        ga = f"%rd{10 + it * 3}"
        gb = f"%rd{11 + it * 3}"
        e(f"mul.wide.u32 {ga}, {h}, {ROW};")
        off = R()
        e(f"mad.lo.u32 {off}, {ch}, 16, %x14;")
        e(f"cvt.u64.u32 {gb}, {off};")
        e(f"add.u64 {ga}, {ga}, {gb};")
        e(f"add.u64 {ga}, {ga}, %rd1;")
        sa = R()
        e(f"mad.lo.u32 {sa}, {cid}, 16, {slot_expr_reg};")
        e(f"@{ok} cp.async.cg.shared.global [{sa}], [{ga}], 16;")
    # the scale words of the NC candidates (lanes 0..NC-1), after the chunks in the slot
    ok = P_()
    e(f"setp.lt.u32 {ok}, %x01, {NC};")
    h = record_id(tile_reg, "%x01")
    e(f"mul.wide.u32 %rd8, {h}, 8;")
    e("add.u64 %rd8, %rd8, %rd7;")
    sa = R()
    e(f"mad.lo.u32 {sa}, %x13, {NC * 16}, {slot_expr_reg};")
    e(f"mad.lo.u32 {sa}, %x01, 8, {sa};")
    e(f"@{ok} cp.async.ca.shared.global [{sa}], [%rd8], 8;")
    e("cp.async.commit_group;")


glabel = [0]


def gather_paged(tile_reg, slot_expr_reg):
    """GATHER=2: this warp's chunks of tile `tile_reg`'s records from the paged pool, token ids
    from the index array; a warp-uniform branch picks the loop of this warp's chunk count."""
    glabel[0] += 1
    n = glabel[0]
    tb = R()
    e(f"mul.lo.u32 {tb}, {tile_reg}, {NC};")
    counts = sorted(set(CHUNKS))
    for ci, c in enumerate(counts):
        if ci + 1 < len(counts):
            pb = P_()
            e(f"setp.ne.u32 {pb}, %x13, {c};")
            e(f"@{pb} bra $G{n}_{ci + 1};")
        for it in range(NC * c // 32):
            cid = R()
            e(f"add.u32 {cid}, %x01, {it * 32};")
            cand = R()
            e(f"div.u32 {cand}, {cid}, {c};")
            ch = R()
            e(f"mad.lo.u32 {ch}, {cand}, -{c}, {cid};")
            tok = R()
            if IDXPF:
                e(f"shfl.sync.idx.b32 {tok}, %x60, {cand}, 31, -1;")
            else:
                ia = R()
                e(f"add.u32 {ia}, {tb}, {cand};")
                e(f"mul.wide.u32 %rd22, {ia}, 4;")
                e("add.u64 %rd22, %rd22, %rd20;")
                e(f"ld.global.nc.u32 {tok}, [%rd22];")
            pg = R()
            e(f"shr.u32 {pg}, {tok}, 6;")
            off = R()
            e(f"and.b32 {off}, {tok}, 63;")
            e(f"mul.wide.u32 %rd23, {pg}, {PAGE_STRIDE};")
            bo = R()
            e(f"mad.lo.u32 {bo}, {off}, {ROW}, %x14;")
            e(f"mad.lo.u32 {bo}, {ch}, 16, {bo};")
            e(f"cvt.u64.u32 %rd24, {bo};")
            e("add.u64 %rd23, %rd23, %rd24;")
            e("add.u64 %rd23, %rd23, %rd1;")
            sa = R()
            e(f"mad.lo.u32 {sa}, {cid}, 16, {slot_expr_reg};")
            if HN and c == 8:
                # 128-byte rows: chunk ch of candidate r goes to chunk ch ^ 4 (r & 1), so that the
                # A-fragment reads (rows g and g + 1 in one quarter-warp) are conflict-free
                sw = R()
                e(f"xor.b32 {sw}, {sa}, %x62;")
                sa = sw
            e(f"cp.async.cg.shared.global [{sa}], [%rd23], 16;")
        e(f"bra.uni $G{n}_end;")
        L.append(f"$G{n}_{ci + 1}:")
    L.append(f"$G{n}_end:")
    ok = P_()
    e(f"setp.lt.u32 {ok}, %x01, {NC};")
    tok = R()
    if IDXPF:
        e(f"mov.b32 {tok}, %x60;")
        # the next tile's id of candidate `lane`, for the next call
        ia = R()
        e(f"add.u32 {ia}, {tb}, {NC};")
        e(f"add.u32 {ia}, {ia}, %x01;")
        e(f"mul.wide.u32 %rd22, {ia}, 4;")
        e("add.u64 %rd22, %rd22, %rd20;")
        e(f"@{ok} ld.global.nc.u32 %x60, [%rd22];")
    else:
        ia = R()
        e(f"add.u32 {ia}, {tb}, %x01;")
        e(f"mul.wide.u32 %rd22, {ia}, 4;")
        e("add.u64 %rd22, %rd22, %rd20;")
        e(f"@{ok} ld.global.nc.u32 {tok}, [%rd22];")
    pg = R()
    e(f"shr.u32 {pg}, {tok}, 6;")
    off = R()
    e(f"and.b32 {off}, {tok}, 63;")
    e(f"mul.wide.u32 %rd23, {pg}, {PAGE_STRIDE};")
    bo = R()
    e(f"mad.lo.u32 {bo}, {off}, 8, {PAGE * ROW};")
    e(f"cvt.u64.u32 %rd24, {bo};")
    e("add.u64 %rd23, %rd23, %rd24;")
    e("add.u64 %rd23, %rd23, %rd1;")
    sa = R()
    e(f"mad.lo.u32 {sa}, %x13, {NC * 16}, {slot_expr_reg};")
    e(f"mad.lo.u32 {sa}, %x01, 8, {sa};")
    e(f"@{ok} cp.async.ca.shared.global [{sa}], [%rd23], 8;")
    e("cp.async.commit_group;")


if GATHER == 2:
    gather = gather_paged  # noqa: F811


def int_scale(e_reg):
    """DEQ=int's scale from the exponent byte e: 2^(e-7) in both halves of a bf16x2."""
    y = R()
    e(f"add.u32 {y}, {e_reg}, 120;")          # 2^(e-7) in bf16: exponent field e + 120
    z = R()
    e(f"mul.lo.u32 {z}, {y}, 8388736;")  # (y << 7) | (y << 23): bf16x2 pair
    return z


def int_dequant(w, scale, dests=(None, None)):
    """DEQ=int: raw e4m3 word w -> bf16x2 of bytes (0, 1) and of bytes (2, 3), times scale."""
    out = []
    for d, sel in zip(dests, ("0x9180", "0xb3a2")):
        # prmt selector nibbles (d.b0..b3): 0 takes a.b0, 8 replicates a.b0's sign (1, 9: a.b1)
        x = R()
        e(f"prmt.b32 {x}, {w}, 0, {sel};")
        y = R()
        e(f"shl.b32 {y}, {x}, 4;")
        e(f"and.b32 {y}, {y}, 0x87f087f0;")
        d = d or R()
        e(f"mul.rn.bf16x2 {d}, {y}, {scale};")
        out.append(d)
    return out


def load_and_dequant(slot_reg):
    """Raw words of the tile in this warp's slot -> K fragments KF[(t,k,h)]."""
    W_ = {}
    for t in range(NT):
        for v in range(KS // 4):
            r = [R() for _ in range(4)]
            e(f"ld.shared.v4.b32 {{{r[0]},{r[1]},{r[2]},{r[3]}}}, [{slot_reg}+{(t * (KS // 4) + v) * 512}];")
            for i in range(4):
                W_[(t, 4 * v + i)] = r[i]
    sc = {}
    for t in range(NT):
        for b in range(NB):
            x = R()
            e(f"ld.shared.u8 {x}, [{slot_reg}+{t * 8 + b}];")
            if DEQ == "f32":
                s = R()
                e(f"shl.b32 {s}, {x}, 23;")
                sc[(t, b)] = s
            elif DEQ == "int":
                sc[(t, b)] = int_scale(x)
    KF = {}
    for k in range(KS):
        blk = (k * 16) // 64 if DPW >= 64 else 0
        for t in range(NT):
            w = W_[(t, k)]
            if DEQ == "none":
                KF[(t, k, 0)] = w
                kr = R()
                e(f"xor.b32 {kr}, {w}, 0x10001;")
                KF[(t, k, 1)] = kr
                continue
            if DEQ == "int":
                KF[(t, k, 0)], KF[(t, k, 1)] = int_dequant(w, sc[(t, blk % NB)])
                continue
            lo = H()
            hi = H()
            e(f"mov.b32 {{{lo},{hi}}}, {w};")
            for hh, src in enumerate((lo, hi)):
                p = R()
                e(f"cvt.rn.f16x2.e4m3x2 {p}, {src};")
                a = H()
                b = H()
                e(f"mov.b32 {{{a},{b}}}, {p};")
                fa = F()
                fb = F()
                e(f"cvt.f32.f16 {fa}, {a};")
                e(f"cvt.f32.f16 {fb}, {b};")
                ma = F()
                mb = F()
                e(f"mul.rn.f32 {ma}, {fa}, {sc[(t, blk % NB)]};")
                e(f"mul.rn.f32 {mb}, {fb}, {sc[(t, blk % NB)]};")
                kr = R()
                e(f"cvt.rn.bf16x2.f32 {kr}, {mb}, {ma};")
                KF[(t, k, hh)] = kr
    return KF


def qk(KF):
    Sr = [[F() for _ in range(4)] for _ in range(NT)]
    for t in range(NT):
        for i in range(4):
            e(f"mov.f32 {Sr[t][i]}, 0f00000000;")
    for k in range(KS):
        for t in range(NT):
            d = [F() for _ in range(4)]
            e(f"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{{d[0]},{d[1]},{d[2]},{d[3]}}}, "
              f"{{{Q[k][0]},{Q[k][1]},{Q[k][2]},{Q[k][3]}}}, {{{KF[(t, k, 0)]},{KF[(t, k, 1)]}}}, "
              f"{{{Sr[t][0]},{Sr[t][1]},{Sr[t][2]},{Sr[t][3]}}};")
            Sr[t] = d
    return Sr


def write_partial(Sr, buf_reg):
    for t in range(len(Sr)):
        e(f"st.shared.v4.f32 [{buf_reg}+{t * 512}], {{{Sr[t][0]},{Sr[t][1]},{Sr[t][2]},{Sr[t][3]}}};")


def read_sum(Sr, par_reg):
    """Sum the partial scores of all W warps (this warp's own included, from registers)."""
    out = [row[:] for row in Sr]
    for ow in range(1, W):
        for t in range(len(Sr)):
            nv = [F() for _ in range(4)]
            a = R()
            # the other warp's buffer: ((warp + ow) % W) * EXCH + parity
            e(f"add.u32 {a}, %x02, {ow};")
            e(f"and.b32 {a}, {a}, {W - 1};")
            e(f"mad.lo.u32 {a}, {a}, {EXCH}, {par_reg};")
            e(f"ld.shared.v4.f32 {{{nv[0]},{nv[1]},{nv[2]},{nv[3]}}}, [{a}+{t * 512}];")
            for i in range(4):
                s = F()
                e(f"add.rn.f32 {s}, {out[t][i]}, {nv[i]};")
                out[t][i] = s
    return out


def softmax(Ssum):
    """Online softmax on full scores (already in log2 units). Returns P, alpha per row half."""
    alpha = []
    P = [[None] * 4 for _ in range(NT)]
    for half in range(2):
        m = F()
        e(f"max.f32 {m}, {Ssum[0][2 * half]}, {Ssum[0][2 * half + 1]};")
        for t in range(1, NT):
            m2 = F()
            e(f"max.f32 {m2}, {m}, {Ssum[t][2 * half]};")
            m3 = F()
            e(f"max.f32 {m3}, {m2}, {Ssum[t][2 * half + 1]};")
            m = m3
        for sh in (1, 2):
            o = F()
            e(f"shfl.sync.bfly.b32 {o}, {m}, {sh}, 31, -1;")
            m2 = F()
            e(f"max.f32 {m2}, {m}, {o};")
            m = m2
        mn = F()
        e(f"max.f32 {mn}, {M0[half]}, {m};")
        d = F()
        e(f"sub.f32 {d}, {M0[half]}, {mn};")
        a = F()
        e(f"ex2.approx.ftz.f32 {a}, {d};")
        alpha.append(a)
        e(f"mov.f32 {M0[half]}, {mn};")
        acc = F()
        e(f"mul.f32 {acc}, {L0[half]}, {a};")
        for t in range(NT):
            for i in (2 * half, 2 * half + 1):
                x = F()
                e(f"sub.f32 {x}, {Ssum[t][i]}, {mn};")
                p = F()
                e(f"ex2.approx.ftz.f32 {p}, {x};")
                P[t][i] = p
                acc2 = F()
                e(f"add.f32 {acc2}, {acc}, {p};")
                acc = acc2
        e(f"mov.f32 {L0[half]}, {acc};")
    return P, alpha


def pv(P, alpha, KF, O):
    for n in range(ON):
        for i in range(4):
            nf = F()
            e(f"mul.f32 {nf}, {O[n][i]}, {alpha[0] if i < 2 else alpha[1]};")
            O[n][i] = nf

    def packA(kk, lo_term):
        regs = []
        for (t, i0) in ((2 * kk, 0), (2 * kk, 2), (2 * kk + 1, 0), (2 * kk + 1, 2)):
            a, b = P[t][i0], P[t][i0 + 1]
            hi = R()
            e(f"cvt.rn.bf16x2.f32 {hi}, {b}, {a};")
            if not lo_term:
                regs.append(hi)
                continue
            ha = H()
            hb = H()
            e(f"mov.b32 {{{ha},{hb}}}, {hi};")
            fa = F()
            fb = F()
            e(f"cvt.f32.bf16 {fa}, {ha};")
            e(f"cvt.f32.bf16 {fb}, {hb};")
            ra = F()
            rb = F()
            e(f"sub.rn.f32 {ra}, {a}, {fa};")
            e(f"sub.rn.f32 {rb}, {b}, {fb};")
            lo = R()
            e(f"cvt.rn.bf16x2.f32 {lo}, {rb}, {ra};")
            regs.append(lo)
        return regs

    for kk in range(NC // 16):
        Ah = packA(kk, False)
        Al = packA(kk, True) if EXACT else None
        for k in range(KS):
            for hh in range(2):
                n = k * 2 + hh
                v0 = R()
                v1 = R()
                e(f"movmatrix.sync.aligned.m8n8.trans.b16 {v0}, {KF[(2 * kk, k, hh)]};")
                e(f"movmatrix.sync.aligned.m8n8.trans.b16 {v1}, {KF[(2 * kk + 1, k, hh)]};")
                for A in ([Ah, Al] if EXACT else [Ah]):
                    d = [F() for _ in range(4)]
                    e(f"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{{d[0]},{d[1]},{d[2]},{d[3]}}}, "
                      f"{{{A[0]},{A[1]},{A[2]},{A[3]}}}, {{{v0},{v1}}}, "
                      f"{{{O[n][0]},{O[n][1]},{O[n][2]},{O[n][3]}}};")
                    O[n] = d


def slot_reg_for(tile_reg):
    """Register with this warp's ring slot base (lane offset included) for tile `tile_reg`."""
    if not GATHER:
        return "%x07"
    if PROD:
        s_ = R()
        e(f"rem.u32 {s_}, {tile_reg}, {S};")
        a = R()
        e(f"mad.lo.u32 {a}, {s_}, {PSLOT}, %x03;")
        e(f"add.u32 {a}, {a}, {RING_BASE};")
        e(f"add.u32 {a}, {a}, %x05;")
        return a
    s = R()
    e(f"rem.u32 {s}, {tile_reg}, {S};")
    a = R()
    e(f"mad.lo.u32 {a}, {s}, %x40, %x07;")
    return a


def raw_slot_base(tile_reg):
    s = R()
    e(f"rem.u32 {s}, {tile_reg}, {S};")
    a = R()
    e(f"mad.lo.u32 {a}, {s}, %x40, %x06;")
    return a


def par_reg(tile_reg, own):
    """Exchange buffer parity base for tile `tile_reg` (own warp's, or the CTA base for reads)."""
    p = R()
    e(f"and.b32 {p}, {tile_reg}, 1;")
    a = R()
    e(f"mad.lo.u32 {a}, {p}, {EXCH // 2}, {'%x04' if own else '%x03'};")
    b = R()
    e(f"add.u32 {b}, {a}, %x05;")
    return b


def wait_tile():
    if GATHER:
        e(f"cp.async.wait_group {S - 1};")
        e("bar.warp.sync -1;")


def kernel_params():
    params = ".param .u64 pout, .param .u32 ntiles"
    if GATHER:
        params += ", .param .u64 pool, .param .u32 nrec"
    if GATHER == 2:
        params += ", .param .u64 pidx"
    return params


def write_kernel(params, extra_regs=""):
    hdr = f""".version 7.8
.target {opt['TARGET']}
.address_size 64
.extern .shared .align 128 .b8 smem[];
.visible .entry core({params}){f" .maxnreg {REG}" if REG else ""}
{{
\t.reg .b32 %r<20000>;
\t.reg .b16 %h<20000>;
\t.reg .f32 %f<20000>;
\t.reg .b64 %rd<400>;
\t.reg .b32 %x<100>;
\t.reg .b32 %kc<200>;
\t.reg .f32 %o<200>;
\t.reg .f32 %m<4>;
\t.reg .f32 %sc<64>;
\t.reg .pred %p<1000>;
""" + extra_regs
    open(f"core_{name}.ptx", "w").write(hdr + "\n".join(L) + "\n}\n")


def heads_in_n():
    """HN=1: the loop with the heads in the MMA's N dimension, on real data (issue 30 item 0).

    Warp w owns dims [128w, 128w + 128) as in the heads-in-M loop (warp 3: 64 e4m3 dims, then the
    64 bf16 rope dims) and gathers the same chunks through the same ring. Per tile of NC candidates
    (NMT m16 tiles) and H heads (NNT n8 tiles), lane (g, t) = (lane >> 2, lane & 3):
      S^T = K.Q^T, m16n8k16: A = K (candidates x dims), A0..A3 = K[g | g+8][cols 2t, 2t+1 | 2t+8, 2t+9];
        one raw word (4 e4m3 bytes) of candidate g is cols 2t..2t+1 (bytes 0, 1) and 2t+8..2t+9
        (bytes 2, 3) of one k-step, so a k-step reads word(k, t) = 4t + (k & 3) + 16 (k >> 2) of
        the warp's slice; B = Q^T (dims x heads), B0 = Q[8nt + g][dims of cols 2t, 2t+1], B1 = cols
        2t+8, 2t+9 (one 8-byte load; rope: two 4-byte loads), held for the whole loop.
      Scores all-reduced across the 4 warps (as heads in M), online softmax per head = per column of
        S^T: lane (g, t) holds columns 2t, 2t+1 of each n8 tile, rows g, g+8 of each m16 tile; the
        max over candidates is a max over its 2 NMT rows, then shfl.bfly 4, 8, 16 (the 8 lanes of a
        column); row sums stay per lane and are reduced once after the loop.
      P^T: accumulator (m16n8, candidates x heads) -> B fragment of k16n8 (candidates x heads):
        B0 = movmatrix.trans(cvt.bf16x2(c1, c0)), B1 = movmatrix.trans(cvt.bf16x2(c3, c2)): the
        8x8 block {candidate g, heads 2t, 2t+1} transposed is {candidates 2t, 2t+1, head g}.
        Exact P: the same for the lo term.
      O^T = V^T.P^T: M = dims (the 16 columns of k-step m are dim tile m's 16 rows), K = candidates;
        A = V^T from the same K fragments by movmatrix.trans (registers, no ldmatrix):
        A' = {trans(A0), trans(A2), trans(A1), trans(A3)} of m16 tile kk, k-step m.
    The 8-chunk warps' ring rows are XOR-swizzled (chunk ^ 4 (row & 1)), so the fragment reads are
    conflict-free; warp 3's 192-byte rows are conflict-free as they are."""
    NMT = NC // 16
    NNT = HEADS // 8
    OM = 8                   # dim m16 tiles of O^T per warp (128 dims)
    glabel[0] += 1
    lb = glabel[0]
    g, t = R(), R()
    e(f"shr.u32 {g}, %x01, 2;")
    e(f"and.b32 {t}, %x01, 3;")
    rope = P_()
    e(f"setp.eq.u32 {rope}, %x02, 3;")
    e("and.b32 %x62, %x01, 8;")         # gather_paged's swizzle: (candidate & 1) << 6, candidate = lane >> 3
    e("shl.b32 %x62, %x62, 3;")
    # per-lane read offsets in a slot: 8-chunk warps (A: chunk t, B: chunk t + 4, both swizzled)
    sw, offA, offB = R(), R(), R()
    e(f"and.b32 {sw}, %x01, 4;")
    e(f"shl.b32 {sw}, {sw}, 4;")        # (g & 1) << 6
    e(f"shl.b32 {offA}, {t}, 4;")
    e(f"xor.b32 {offA}, {offA}, {sw};")
    e(f"mad.lo.u32 {offA}, {g}, 128, {offA};")
    e(f"xor.b32 {offB}, {offA}, 64;")
    offR = R()                          # warp 3: chunk t (e4m3), t + 4 and t + 8 (rope) of a 192-byte row
    e(f"shl.b32 {offR}, {t}, 4;")
    e(f"mad.lo.u32 {offR}, {g}, 192, {offR};")
    offS = R()                          # scale byte 2w of candidate g (warp 3: byte 6)
    e(f"mul.lo.u32 {offS}, %x13, {NC * 16};")
    e(f"mad.lo.u32 {offS}, {g}, 8, {offS};")
    e(f"mad.lo.u32 {offS}, %x02, 2, {offS};")

    # Q^T B fragments, loaded once
    QB = [[[R(), R()] for _ in range(NNT)] for _ in range(8)]
    e("ld.param.u64 %rd30, [pq];")
    e("cvta.to.global.u64 %rd30, %rd30;")
    qo, qr = R(), R()
    e(f"shl.b32 {qo}, %x02, 7;")
    e(f"mad.lo.u32 {qo}, {g}, 512, {qo};")
    e(f"mad.lo.u32 {qo}, {t}, 16, {qo};")        # element of head g, dim 128w + 16t
    e(f"mul.wide.u32 %rd31, {qo}, 2;")
    e("add.u64 %rd31, %rd31, %rd30;")
    e(f"mad.lo.u32 {qr}, {g}, 512, 448;")
    e(f"mad.lo.u32 {qr}, {t}, 8, {qr};")         # element of head g, rope dim 448 + 8t
    e(f"mul.wide.u32 %rd32, {qr}, 2;")
    e("add.u64 %rd32, %rd32, %rd30;")
    e(f"@{rope} bra.uni $QR{lb};")
    for k in range(8):
        for nt in range(NNT):
            e(f"ld.global.nc.v2.b32 {{{QB[k][nt][0]},{QB[k][nt][1]}}}, [%rd31+{(nt * 4096 + 4 * (k & 3) + 64 * (k >> 2)) * 2}];")
    e(f"bra.uni $QJ{lb};")
    L.append(f"$QR{lb}:")
    for k in range(8):
        for nt in range(NNT):
            if k < 4:
                e(f"ld.global.nc.v2.b32 {{{QB[k][nt][0]},{QB[k][nt][1]}}}, [%rd31+{(nt * 4096 + 4 * k) * 2}];")
            else:
                e(f"ld.global.nc.b32 {QB[k][nt][0]}, [%rd32+{(nt * 4096 + 2 * (k - 4)) * 2}];")
                e(f"ld.global.nc.b32 {QB[k][nt][1]}, [%rd32+{(nt * 4096 + 32 + 2 * (k - 4)) * 2}];")
    L.append(f"$QJ{lb}:")

    O0 = [[[f"%o{(m * NNT + nt) * 4 + i}" for i in range(4)] for nt in range(NNT)] for m in range(OM)]
    for m in range(OM):
        for nt in range(NNT):
            for r in O0[m][nt]:
                e(f"mov.f32 {r}, 0f00000000;")
    HM = [f"%hm{c}" for c in range(2 * NNT)]     # running max of column c = head 8 (c >> 1) + 2t + (c & 1)
    HL = [f"%hl{c}" for c in range(2 * NNT)]     # this lane's part of its row sum
    for r in HM:
        e(f"mov.f32 {r}, 0fFF800000;")
    for r in HL:
        e(f"mov.f32 {r}, 0f00000000;")
    KF = {(mt, k, j): R() for mt in range(NMT) for k in range(8) for j in range(4)}   # A0..A3 of (m16 tile, k-step)
    BLK = HEADS * 512 + 2 * HEADS + (NC * HEADS if DUMPS else 0)   # f32 per CTA in pout
    if DUMPS:
        e("ld.param.u64 %rd33, [pout];")
        e("cvta.to.global.u64 %rd33, %rd33;")
        e(f"mul.wide.u32 %rd34, %x12, {BLK * 4};")
        e("add.u64 %rd33, %rd33, %rd34;")
        so = R()
        e(f"mad.lo.u32 {so}, {g}, {HEADS}, {HEADS * 512 + 2 * HEADS};")
        e(f"mad.lo.u32 {so}, {t}, 2, {so};")
        e(f"mul.wide.u32 %rd34, {so}, 4;")
        e("add.u64 %rd33, %rd33, %rd34;")        # S[candidate g][head 2t] of the last tile
    e("mov.u32 %x20, 0;")

    def scale(addr, off):
        x = R()
        e(f"ld.shared.u8 {x}, [{addr}+{off}];")
        return int_scale(x)

    def dequant(sb):
        glabel[0] += 1
        n = glabel[0]
        e(f"@{rope} bra.uni $DR{n};")
        a, b, sc = R(), R(), R()
        e(f"add.u32 {a}, {sb}, {offA};")
        e(f"add.u32 {b}, {sb}, {offB};")
        e(f"add.u32 {sc}, {sb}, {offS};")
        for mt in range(NMT):
            for hh in range(2):
                r = 16 * mt + 8 * hh
                w = [R() for _ in range(8)]
                e(f"ld.shared.v4.b32 {{{w[0]},{w[1]},{w[2]},{w[3]}}}, [{a}+{r * 128}];")
                e(f"ld.shared.v4.b32 {{{w[4]},{w[5]},{w[6]},{w[7]}}}, [{b}+{r * 128}];")
                z = [scale(sc, r * 8 + blk) for blk in range(2)]
                for k in range(8):
                    int_dequant(w[k], z[k >> 2], (KF[(mt, k, hh)], KF[(mt, k, 2 + hh)]))
        e(f"bra.uni $DJ{n};")
        L.append(f"$DR{n}:")
        a, sc = R(), R()
        e(f"add.u32 {a}, {sb}, {offR};")
        e(f"add.u32 {sc}, {sb}, {offS};")
        for mt in range(NMT):
            for hh in range(2):
                r = 16 * mt + 8 * hh
                w = [R() for _ in range(4)]
                e(f"ld.shared.v4.b32 {{{w[0]},{w[1]},{w[2]},{w[3]}}}, [{a}+{r * 192}];")
                for half in range(2):       # rope bf16 pairs are fragments as they are
                    regs = ",".join(KF[(mt, 4 + k, 2 * half + hh)] for k in range(4))
                    e(f"ld.shared.v4.b32 {{{regs}}}, [{a}+{r * 192 + 64 + 64 * half}];")
                z = scale(sc, r * 8)
                for k in range(4):
                    int_dequant(w[k], z, (KF[(mt, k, hh)], KF[(mt, k, 2 + hh)]))
        L.append(f"$DJ{n}:")

    def qk():
        Sr = [[[F() for _ in range(4)] for _ in range(NNT)] for _ in range(NMT)]
        for mt in range(NMT):
            for nt in range(NNT):
                for r in Sr[mt][nt]:
                    e(f"mov.f32 {r}, 0f00000000;")
        for k in range(8):
            for mt in range(NMT):
                for nt in range(NNT):
                    d = [F() for _ in range(4)]
                    a = ",".join(KF[(mt, k, j)] for j in range(4))
                    c = ",".join(Sr[mt][nt])
                    e(f"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{{','.join(d)}}}, {{{a}}}, "
                      f"{{{QB[k][nt][0]},{QB[k][nt][1]}}}, {{{c}}};")
                    Sr[mt][nt] = d
        return Sr

    def softmax(Ss):
        P = [[[None] * 4 for _ in range(NNT)] for _ in range(NMT)]
        alpha = []
        for c in range(2 * NNT):
            nt, i = c >> 1, c & 1
            vals = [(mt, 2 * hh + i) for mt in range(NMT) for hh in range(2)]
            m = Ss[vals[0][0]][nt][vals[0][1]]
            for (mt, ix) in vals[1:]:
                m2 = F()
                e(f"max.f32 {m2}, {m}, {Ss[mt][nt][ix]};")
                m = m2
            for sh in (4, 8, 16):
                o, m2 = F(), F()
                e(f"shfl.sync.bfly.b32 {o}, {m}, {sh}, 31, -1;")
                e(f"max.f32 {m2}, {m}, {o};")
                m = m2
            mn, d, a, acc = F(), F(), F(), F()
            e(f"max.f32 {mn}, {HM[c]}, {m};")
            e(f"sub.f32 {d}, {HM[c]}, {mn};")
            e(f"ex2.approx.ftz.f32 {a}, {d};")
            alpha.append(a)
            e(f"mov.f32 {HM[c]}, {mn};")
            e(f"mul.f32 {acc}, {HL[c]}, {a};")
            for (mt, ix) in vals:
                x, p, acc2 = F(), F(), F()
                e(f"sub.f32 {x}, {Ss[mt][nt][ix]}, {mn};")
                e(f"ex2.approx.ftz.f32 {p}, {x};")
                P[mt][nt][ix] = p
                e(f"add.f32 {acc2}, {acc}, {p};")
                acc = acc2
            e(f"mov.f32 {HL[c]}, {acc};")
        return P, alpha

    def mov_t(src):
        d = R()
        e(f"movmatrix.sync.aligned.m8n8.trans.b16 {d}, {src};")
        return d

    def pv(P, alpha, O):
        for m in range(OM):
            for nt in range(NNT):
                for i in range(4):
                    nf = F()
                    e(f"mul.f32 {nf}, {O[m][nt][i]}, {alpha[2 * nt + (i & 1)]};")
                    O[m][nt][i] = nf
        B = {}
        for mt in range(NMT):
            for nt in range(NNT):
                hi_t, lo_t = [], []
                for half in range(2):
                    a, b = P[mt][nt][2 * half], P[mt][nt][2 * half + 1]
                    hi = R()
                    e(f"cvt.rn.bf16x2.f32 {hi}, {b}, {a};")
                    hi_t.append(mov_t(hi))
                    if EXACT:
                        ha, hb = H(), H()
                        e(f"mov.b32 {{{ha},{hb}}}, {hi};")
                        fa, fb, ra, rb = F(), F(), F(), F()
                        e(f"cvt.f32.bf16 {fa}, {ha};")
                        e(f"cvt.f32.bf16 {fb}, {hb};")
                        e(f"sub.rn.f32 {ra}, {a}, {fa};")
                        e(f"sub.rn.f32 {rb}, {b}, {fb};")
                        lo = R()
                        e(f"cvt.rn.bf16x2.f32 {lo}, {rb}, {ra};")
                        lo_t.append(mov_t(lo))
                B[(mt, nt)] = [hi_t] + ([lo_t] if EXACT else [])
        for m in range(OM):
            for mt in range(NMT):
                A = ",".join(mov_t(KF[(mt, m, j)]) for j in (0, 2, 1, 3))
                for nt in range(NNT):
                    for Bt in B[(mt, nt)]:
                        d = [F() for _ in range(4)]
                        e(f"mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {{{','.join(d)}}}, {{{A}}}, "
                          f"{{{Bt[0]},{Bt[1]}}}, {{{','.join(O[m][nt])}}};")
                        O[m][nt] = d

    for j in range(S - 1):
        tr = R()
        e(f"mov.u32 {tr}, {j};")
        gather(tr, raw_slot_base(tr))
    L.append("$LOOP:")
    nt_ = R()
    e(f"add.u32 {nt_}, %x20, {S - 1};")
    gather(nt_, raw_slot_base(nt_))
    wait_tile()
    dequant(raw_slot_base("%x20"))
    Sr = qk()
    flat = [Sr[mt][nt] for mt in range(NMT) for nt in range(NNT)]
    write_partial(flat, par_reg("%x20", True))
    e(f"bar.sync 1, {W * 32};")
    flat = read_sum(flat, par_reg("%x20", False))
    Ss = [[flat[mt * NNT + nt] for nt in range(NNT)] for mt in range(NMT)]
    if DUMPS:
        last, j1 = P_(), R()
        e(f"add.u32 {j1}, %x20, 1;")
        e(f"setp.eq.u32 {last}, {j1}, %x10;")
        e(f"setp.eq.and.u32 {last}, %x02, 0, {last};")
        for mt in range(NMT):
            for nt in range(NNT):
                for i in range(4):
                    off = ((16 * mt + 8 * (i >> 1)) * HEADS + 8 * nt + (i & 1)) * 4
                    e(f"@{last} st.global.f32 [%rd33+{off}], {Ss[mt][nt][i]};")
    P, alpha = softmax(Ss)
    O = [[row[:] for row in blk] for blk in O0]
    pv(P, alpha, O)
    for m in range(OM):
        for nt in range(NNT):
            for i in range(4):
                e(f"mov.f32 {O0[m][nt][i]}, {O[m][nt][i]};")
    e("add.u32 %x20, %x20, 1;")
    e("setp.lt.u32 %p1, %x20, %x10;")
    e("@%p1 bra.uni $LOOP;")
    e("cp.async.wait_all;")

    # the row sums over the 8 lanes of a column
    for c in range(2 * NNT):
        for sh in (4, 8, 16):
            o = F()
            e(f"shfl.sync.bfly.b32 {o}, {HL[c]}, {sh}, 31, -1;")
            e(f"add.f32 {HL[c]}, {HL[c]}, {o};")
    # O[h][d] with the permuted dims undone: row g (g + 8) of dim tile m is column g (g + 8) of
    # k-step m, i.e. dim(m, col 2 (g >> 1)) + (g & 1) (+ 2; rope: + 32)
    e("ld.param.u64 %rd35, [pout];")
    e("cvta.to.global.u64 %rd35, %rd35;")
    e(f"mul.wide.u32 %rd36, %x12, {BLK * 4};")
    e("add.u64 %rd35, %rd35, %rd36;")            # this CTA's block
    db, h2, dr = R(), R(), R()
    e(f"shr.u32 {h2}, {g}, 1;")
    e(f"shl.b32 {db}, %x02, 7;")
    e(f"mad.lo.u32 {db}, {h2}, 16, {db};")
    e(f"mad.lo.u32 {dr}, {h2}, 8, 448;")
    h1 = R()
    e(f"and.b32 {h1}, {g}, 1;")
    e(f"add.u32 {db}, {db}, {h1};")
    e(f"add.u32 {dr}, {dr}, {h1};")
    e(f"mad.lo.u32 {db}, {t}, 1024, {db};")      # head 2t
    e(f"mad.lo.u32 {dr}, {t}, 1024, {dr};")
    e(f"mul.wide.u32 %rd37, {db}, 4;")
    e("add.u64 %rd37, %rd37, %rd35;")
    e(f"mul.wide.u32 %rd38, {dr}, 4;")
    e("add.u64 %rd38, %rd38, %rd35;")

    def store_o(ms, base, dim_off, hi_off):
        for m in ms:
            for nt in range(NNT):
                for i in range(4):
                    off = ((8 * nt + (i & 1)) * 512 + dim_off(m) + hi_off * (i >> 1)) * 4
                    e(f"st.global.f32 [{base}+{off}], {O0[m][nt][i]};")
    store_o(range(4), "%rd37", lambda m: 4 * m, 2)
    e(f"@{rope} bra.uni $OR{lb};")
    store_o(range(4, 8), "%rd37", lambda m: 4 * (m & 3) + 64, 2)
    e(f"bra.uni $OJ{lb};")
    L.append(f"$OR{lb}:")
    store_o(range(4, 8), "%rd38", lambda m: 2 * (m - 4), 32)
    L.append(f"$OJ{lb}:")
    first = P_()
    e(f"setp.lt.u32 {first}, %x00, 4;")         # warp 0, g = 0: lane t holds heads 8nt + 2t + i
    e(f"mul.wide.u32 %rd39, {t}, 8;")
    e("add.u64 %rd39, %rd39, %rd35;")
    for c in range(2 * NNT):
        h = 8 * (c >> 1) + (c & 1)
        e(f"@{first} st.global.f32 [%rd39+{(HEADS * 512 + h) * 4}], {HM[c]};")
        e(f"@{first} st.global.f32 [%rd39+{(HEADS * 512 + HEADS + h) * 4}], {HL[c]};")
    e("ret;")
    write_kernel(kernel_params() + ", .param .u64 pq", "\t.reg .f32 %hm<8>;\n\t.reg .f32 %hl<8>;\n")
    print(name, SMEM, W * 32, NC, 16 * sum(CHUNKS) + 8, GATHER, HEADS)


if HN:
    heads_in_n()
    sys.exit(0)

# Q fragments (permuted k) held in registers: KS k-steps x 4 registers, loaded once.
Q = [[R() for _ in range(4)] for _ in range(KS)]
for k in range(KS):
    # (fake data from the ring's first slot, which no warp writes before its first wait: an
    # earlier version read the exchange buffers, a race the emulator found)
    e(f"ld.shared.v4.b32 {{{Q[k][0]},{Q[k][1]},{Q[k][2]},{Q[k][3]}}}, [%x07+{k * 512}];")
O0 = [[f"%o{n * 4 + i}" for i in range(4)] for n in range(ON)]
for n in range(ON):
    for i in range(4):
        e(f"mov.f32 {O0[n][i]}, 0f00000000;")
M0 = ["%m0", "%m1"]   # running max of rows g and g+8
L0 = ["%m2", "%m3"]   # partial row sums
for r in M0:
    e(f"mov.f32 {r}, 0fFF800000;")
for r in L0:
    e(f"mov.f32 {r}, 0f00000000;")
e("mov.u32 %x20, 0;")  # tile counter j

if PROD:
    e(f"setp.eq.u32 %p8, %x02, {W};")
    e("@%p8 bra.uni $PRODUCER;")


def bar_id(tile_reg, base):
    b = R()
    e(f"rem.u32 {b}, {tile_reg}, {S};")
    e(f"add.u32 {b}, {b}, {base};")
    return b


# ---- gather prologue
if GATHER and not PROD:
    for j in range(S - 1):
        tr = R()
        e(f"mov.u32 {tr}, {j};")
        gather(tr, raw_slot_base(tr))

if not COMPUTE:
    e("mov.u32 %x50, 0;")
    L.append("$LOOP:")
    nt = R()
    e(f"add.u32 {nt}, %x20, {S - 1};")
    gather(nt, raw_slot_base(nt))
    wait_tile()
    sr = slot_reg_for("%x20")
    w = R()
    e(f"ld.shared.b32 {w}, [{sr}];")
    e(f"xor.b32 %x50, %x50, {w};")
    e("mov.b32 %m2, %x50;")
elif PROD:
    L.append("$LOOP:")
    e(f"bar.sync {bar_id('%x20', 2)}, {(W + 1) * 32};")           # FULL: tile j is in its slot
    KF = load_and_dequant(slot_reg_for("%x20"))
    nt = R()
    e(f"add.u32 {nt}, %x20, {S};")
    pe = P_()
    e(f"setp.lt.u32 {pe}, {nt}, %x10;")
    e(f"@{pe} bar.arrive {bar_id('%x20', 2 + S)}, {(W + 1) * 32};")  # EMPTY: the slot may be refilled
    Sr = qk(KF)
    own = par_reg("%x20", True)
    write_partial(Sr, own)
    e(f"bar.sync 1, {W * 32};")
    Ssum = read_sum(Sr, par_reg("%x20", False))
    Pm, alpha = softmax(Ssum)
    O = [row[:] for row in O0]
    pv(Pm, alpha, KF, O)
    for n in range(ON):
        for i in range(4):
            e(f"mov.f32 {O0[n][i]}, {O[n][i]};")
elif not PIPE:
    L.append("$LOOP:")
    if GATHER:
        nt = R()
        e(f"add.u32 {nt}, %x20, {S - 1};")
        gather(nt, raw_slot_base(nt))
    wait_tile()
    KF = load_and_dequant(slot_reg_for("%x20"))
    Sr = qk(KF)
    own = par_reg("%x20", True)
    write_partial(Sr, own)
    e(f"bar.sync 1, {W * 32};")
    Ssum = read_sum(Sr, par_reg("%x20", False))
    Pm, alpha = softmax(Ssum)
    O = [row[:] for row in O0]
    pv(Pm, alpha, KF, O)
    for n in range(ON):
        for i in range(4):
            e(f"mov.f32 {O0[n][i]}, {O[n][i]};")
else:
    # prologue: q.k of tile 0, its partial written, barrier
    if GATHER:
        nt = R()
        e(f"mov.u32 {nt}, {S - 1};")
        gather(nt, raw_slot_base(nt))
    wait_tile()
    KF0 = load_and_dequant(slot_reg_for("%x20"))
    S0 = qk(KF0)
    write_partial(S0, par_reg("%x20", True))
    e(f"bar.sync 1, {W * 32};")
    KFc = {key: f"%kc{i}" for i, key in enumerate(sorted(KF0))}
    Sc = [[f"%sc{t * 4 + i}" for i in range(4)] for t in range(NT)]
    for key in KF0:
        e(f"mov.b32 {KFc[key]}, {KF0[key]};")
    for t in range(NT):
        for i in range(4):
            e(f"mov.f32 {Sc[t][i]}, {S0[t][i]};")
    L.append("$LOOP:")
    nxt = R()
    e("add.u32 %x21, %x20, 1;")
    if GATHER:
        e(f"add.u32 {nxt}, %x20, {S};")
        gather(nxt, raw_slot_base(nxt))
    Ssum = read_sum(Sc, par_reg("%x20", False))
    Pm, alpha = softmax(Ssum)
    wait_tile()
    KFn = load_and_dequant(slot_reg_for("%x21"))
    Sn = qk(KFn)
    O = [row[:] for row in O0]
    pv(Pm, alpha, KFc, O)
    write_partial(Sn, par_reg("%x21", True))
    e(f"bar.sync 1, {W * 32};")
    for n in range(ON):
        for i in range(4):
            e(f"mov.f32 {O0[n][i]}, {O[n][i]};")
    for key in KFn:
        e(f"mov.b32 {KFc[key]}, {KFn[key]};")
    for t in range(NT):
        for i in range(4):
            e(f"mov.f32 {Sc[t][i]}, {Sn[t][i]};")

e("add.u32 %x20, %x20, 1;")
e("setp.lt.u32 %p1, %x20, %x10;")
e("@%p1 bra.uni $LOOP;")
if GATHER:
    e("cp.async.wait_all;")
e("ld.param.u64 %rd2, [pout];")
e("cvta.to.global.u64 %rd3, %rd2;")
e("mov.u32 %x30, %ctaid.x;")
e(f"mad.lo.u32 %x31, %x30, {W * 32}, %x00;")
e(f"mul.wide.u32 %rd4, %x31, {ON * 16 + 16};")
e("add.u64 %rd5, %rd3, %rd4;")
for n in range(ON if COMPUTE else 0):
    e(f"st.global.v4.f32 [%rd5+{n * 16}], {{{O0[n][0]},{O0[n][1]},{O0[n][2]},{O0[n][3]}}};")
e(f"st.global.v2.f32 [%rd5+{ON * 16}], {{{L0[0]},{L0[1]}}};")
e("ret;")


def producer():
    """The producer warp: lane l gathers candidate l of every tile (ids a tile ahead)."""
    L.append("$PRODUCER:")
    nb = (W + 1) * 32
    e("mov.u32 %x20, 0;")
    e("mul.wide.u32 %rd22, %x01, 4;")
    e("add.u64 %rd22, %rd22, %rd20;")
    e("ld.global.nc.u32 %x60, [%rd22];")                  # tile 0's id of candidate `lane`
    L.append("$PLOOP:")
    pw = P_()
    e(f"setp.ge.u32 {pw}, %x20, {S};")
    e(f"@{pw} bar.sync {bar_id('%x20', 2 + S)}, {nb};")     # EMPTY: the slot of tile j - S is free
    tok = R()
    e(f"mov.b32 {tok}, %x60;")
    ia = R()
    e("add.u32 %x61, %x20, 1;")
    e(f"mad.lo.u32 {ia}, %x61, {NC}, %x01;")
    e(f"mul.wide.u32 %rd22, {ia}, 4;")
    e("add.u64 %rd22, %rd22, %rd20;")
    e("ld.global.nc.u32 %x60, [%rd22];")                  # the next tile's id
    slot = R()
    e(f"rem.u32 {slot}, %x20, {S};")
    e(f"mad.lo.u32 {slot}, {slot}, {PSLOT}, %x03;")
    e(f"add.u32 {slot}, {slot}, {RING_BASE};")
    # consecutive lanes take consecutive 16-byte chunks of a record (coalesced), ids by shfl
    nch = ROW // 16
    for it in range(NC * nch // 32):
        cid = R()
        e(f"add.u32 {cid}, %x01, {it * 32};")
        cand = R()
        e(f"div.u32 {cand}, {cid}, {nch};")
        t2 = R()
        e(f"shfl.sync.idx.b32 {t2}, {tok}, {cand}, 31, -1;")
        p2 = R()
        e(f"shr.u32 {p2}, {t2}, 6;")
        o2 = R()
        e(f"and.b32 {o2}, {t2}, 63;")
        e(f"mul.wide.u32 %rd27, {p2}, {PAGE_STRIDE};")
        b2 = R()
        e(f"mad.lo.u32 {b2}, {o2}, {ROW}, 0;")
        ch = R()
        e(f"mad.lo.u32 {ch}, {cand}, -{nch}, {cid};")
        e(f"mad.lo.u32 {b2}, {ch}, 16, {b2};")
        e(f"cvt.u64.u32 %rd28, {b2};")
        e("add.u64 %rd27, %rd27, %rd28;")
        e("add.u64 %rd27, %rd27, %rd1;")
        dst = R()
        e(f"mad.lo.u32 {dst}, {cid}, 16, {slot};")
        e(f"cp.async.cg.shared.global [{dst}], [%rd27], 16;")
    pg = R()
    e(f"shr.u32 {pg}, {tok}, 6;")
    off = R()
    e(f"and.b32 {off}, {tok}, 63;")
    e(f"mul.wide.u32 %rd23, {pg}, {PAGE_STRIDE};")
    e("add.u64 %rd23, %rd23, %rd1;")                      # page base of candidate `lane`
    e(f"mul.wide.u32 %rd24, {off}, 8;")
    e("add.u64 %rd26, %rd23, %rd24;")
    e(f"add.u64 %rd26, %rd26, {PAGE * ROW};")
    sd = R()
    e(f"mad.lo.u32 {sd}, %x01, 8, {slot};")
    e(f"cp.async.ca.shared.global [{sd}+{NC * ROW}], [%rd26], 8;")
    e("cp.async.commit_group;")
    # signal tile j - S + 2 once it has landed (keeps S - 1 tiles in flight)
    if S >= 2:
        e(f"cp.async.wait_group {S - 2};")
        t = R()
        e(f"add.u32 {t}, %x20, {2 - S + 3 * S};")          # j - S + 2, kept non-negative mod S
        pf = P_()
        e(f"setp.ge.u32 {pf}, %x20, {S - 2};")
        e(f"@{pf} bar.arrive {bar_id(t, 2)}, {nb};")
    e("add.u32 %x20, %x20, 1;")
    e("setp.lt.u32 %p2, %x20, %x10;")
    e("@%p2 bra.uni $PLOOP;")
    e("cp.async.wait_all;")
    for k in range(S - 2):   # the last S - 2 tiles
        t = R()
        e(f"add.u32 {t}, %x10, {k + 2 - S + 3 * S};")
        e(f"bar.arrive {bar_id(t, 2)}, {nb};")
    e("ret;")


if PROD:
    producer()

write_kernel(kernel_params())
print(name, SMEM, (W + PROD) * 32, NC, 16 * sum(CHUNKS) + 8, GATHER)
