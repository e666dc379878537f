#!/usr/bin/env python3
"""Launch ptxgen's mla_decode from Python with cuda-python, from the launch manifest alone.

`ptxgen gen -manifest NAME.json` writes the PTX and a JSON manifest (version 2) that says how
to launch it (gogen/manifest.go): per target the PTX file, the workspace (bytes + per_part x
the plan's MaxParts), the launch plan (a plan.Rule: which kernels a call runs, in order, and
the split, from the rows and the device's SM count, with examples to test a port on), and per
kernel its entry, parameters (kind, element type, alignment, minimum size as fixed + per_row
x rows + per_part x rows x split, bound to a caller argument, a workspace buffer or the
plan's split), grid (a number, the rows or the split per dimension), block, dynamic shared
memory and its > 48 KB opt-in, and programmatic launch. `Rule` is plan/plan.go's Choose,
SplitFor, wide and MaxParts ported line for line, and `Program` does exactly what the
generated Go `Launch` does with it: check the arguments, choose the kernels and split for the
rows of the call on this device, compute the grids, pack the parameters and launch the
chosen kernels in order on one stream.

GPU run (torch, cuda-python), one program per shared test-vector folder, generated here by
gen.sh with a capacity of 8 rows:

    python3 examples/python/mla_decode.py --kernels KERNELS --vectors VECTORS

For each folder VECTORS/NAME it loads KERNELS/NAME/mla_decode.json once, runs calls of 0, 1,
T (the folder's rows) and 8 rows from that one loaded module, printing the plan each chose
(kernels and split; row i of a call is the folder's row i mod T, so the reference is the
folder's), compares each with the float64 reference at the spec's thresholds, then captures
the 8-row call in a CUDA graph, replays it and requires the same bits. `--selftest
[FOLDER...]` runs everything that needs no GPU (manifest parsing, target choice, the plan
against the manifest's examples, argument checks and packing, grids, workspace sizes, the
vector folders and the comparison), on the CPU with the standard library only. `flags
FOLDER` prints the ptxgen flags of a folder's configuration (gen.sh uses it).
"""

import argparse
import collections
import ctypes
import json
import math
import os
import struct
import sys
import tempfile

MANIFEST_FORMAT = "ptxgen-launch-manifest"
MANIFEST_VERSION = 3
SHARED_OPT_IN = 48 << 10

# The SM count the self-test plans for (H100/H200); the GPU run uses the device's.
SELFTEST_SMS = 132

# The spec's section 6 thresholds (golden.MLAOutTolerance, golden.MLALSETolerance).
OUT_TOL = dict(abs=1e-3, rel=2.01 / 128, cos=5e-6)
LSE_TOL = dict(abs=1e-6, rel=8.0 / 65536, cos=None)

# Parameter kinds: ctypes type of the value the driver copies, and its size.
KINDS = {"ptr": (ctypes.c_uint64, 8), "i32": (ctypes.c_int32, 4), "u32": (ctypes.c_uint32, 4),
         "i64": (ctypes.c_int64, 8), "u64": (ctypes.c_uint64, 8), "f32": (ctypes.c_float, 4),
         "f64": (ctypes.c_double, 8)}
INT_RANGE = {"i32": (-2**31, 2**31 - 1), "u32": (0, 2**32 - 1), "i64": (-2**63, 2**63 - 1), "u64": (0, 2**64 - 1)}


class LaunchError(ValueError):
    """A bad argument, named with the accepted range; nothing was launched."""


# ---------------------------------------------------------------------------------------
# The manifest and the launch plan (no CUDA needed)


def load_manifest(path):
    with open(path) as f:
        man = json.load(f)
    if man.get("format") != MANIFEST_FORMAT or man.get("version") != MANIFEST_VERSION:
        raise ValueError(f"{path}: manifest {man.get('format')!r} version {man.get('version')!r}, "
                         f"want {MANIFEST_FORMAT!r} version {MANIFEST_VERSION}")
    man["dir"] = os.path.dirname(os.path.abspath(path))
    return man


def target_number(t):
    """sm_90 -> 90, sm_120 -> 120."""
    if not t.startswith("sm_") or not t[3:].isdigit():
        raise ValueError(f"target {t!r}: want sm_NN")
    return int(t[3:])


def pick_target(man, cc):
    """The newest target of the manifest that a device of compute capability cc = (major,
    minor) runs: PTX for sm_XY runs on XY and newer (runtime.PickTarget)."""
    dev = cc[0] * 10 + cc[1]
    ok = [t for t in man["targets"] if target_number(t["target"]) <= dev]
    if not ok:
        raise LaunchError(f"none of the manifest's targets {[t['target'] for t in man['targets']]} "
                          f"runs on a device of compute capability {cc[0]}.{cc[1]}")
    return max(ok, key=lambda t: target_number(t["target"]))


class Buffer:
    """What the launcher needs of a device buffer: its address, size and element type.
    Torch tensors are wrapped by as_buffer; the self-test makes them directly."""

    def __init__(self, ptr, nbytes, elem):
        self.ptr, self.nbytes, self.elem = ptr, nbytes, elem


TORCH_ELEMS = {"bfloat16": "bf16", "float32": "f32", "int32": "i32", "uint8": "u8", "float16": "f16"}


def workspace_elems(target):
    """The element type of each workspace buffer of target, from the kernel parameters
    that take it (every taker must agree)."""
    elems = {}
    for k in target["kernels"]:
        for p in k["params"]:
            if p.get("workspace"):
                e = elems.setdefault(p["workspace"], p.get("elem") or "u8")
                if e != (p.get("elem") or "u8"):
                    raise ValueError(f"workspace {p['workspace']}: taken as {e} and {p.get('elem')}")
    return elems


def workspace_bytes(man, target, sms):
    """The size of each workspace buffer of target loaded on a device of sms SMs, and the
    (row, chunk) parts it holds: bytes + per_part x the plan's MaxParts(capacity, sms), at
    least 16 (a device where no call splits still passes a buffer), as the generated Go."""
    parts = Rule(target["plan"]).max_parts(man["capacity"], sms) if target.get("plan") is not None else 0
    return {w["name"]: max(w["bytes"] + w.get("per_part", 0) * parts, 16) for w in target["workspace"]}, parts


def as_buffer(x):
    if isinstance(x, Buffer):
        return x
    if hasattr(x, "data_ptr") and hasattr(x, "element_size"):  # a torch tensor
        if not x.is_cuda or not x.is_contiguous():
            raise LaunchError("tensor arguments must be contiguous CUDA tensors")
        elem = TORCH_ELEMS.get(str(x.dtype).replace("torch.", ""), str(x.dtype))
        return Buffer(x.data_ptr(), x.numel() * x.element_size(), elem)
    raise LaunchError(f"{type(x).__name__} is not a device buffer")


# The launch plan: plan/plan.go ported line for line (integer arithmetic only), so that a
# call runs the kernels and split the generated Go would. The self-test holds it to the
# manifest's plan_examples, which the Go made.


def go_div(a, b):
    """Go's integer division, which truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def ceil_div(a, b):
    return go_div(a + b - 1, b)


# What one call runs (plan.Choice): the family index, the split (chunks per row: the decode
# kernel's split argument and grid z), the CTAs of the decode launch, and the entries to
# launch in order (empty for 0 rows).
Choice = collections.namedtuple("Choice", "family split ctas kernels")


class Rule:
    """plan.Rule, from a target's "plan": the families of decode kernels (one CTA shape each,
    narrowest first) and the numbers that pick between them. Missing fields read as Go's zero
    values, as encoding/json would."""

    def __init__(self, d):
        self.families = [Family(f) for f in d.get("families") or []]
        # The merge kernels, one per split, fewest chunks first: a Partial kernel is followed
        # by the one of the call's split.
        self.combines = [(c.get("chunks", 0), c.get("name", "")) for c in d.get("combines") or []]
        self.split = d.get("split", 0)
        self.max_split = d.get("max_split", 0)
        self.sms = d.get("sms", 0)
        self.wide_min_tiles = d.get("wide_min_tiles", 0)
        self.small_num = d.get("small_num", 0)
        self.small_den = d.get("small_den", 0)

    def split_for(self, f, rows, sms):
        """SplitFor: the chunks per row for family f. 1 when rows x head blocks fill the SMs;
        otherwise the CTA-tiles are spread over one wave of resident CTAs."""
        if self.split > 0:
            return filled(f.tiles, max(min(self.split, f.tiles), 1))
        ctas = rows * f.head_blocks
        if ctas >= sms:
            return 1
        per = max(ceil_div(ctas * f.tiles, sms * max(f.per_sm, 1)), 1)
        return filled(f.tiles, max(min(ceil_div(f.tiles, per), self.max_split), 1))

    def wide(self, rows, sms):
        """Whether family 1 (more heads per CTA) serves a call of rows on sms SMs."""
        if len(self.families) < 2:
            return False
        w = self.families[1]
        if w.tile < 64:
            return rows * w.head_blocks >= sms
        split = self.split_for(w, rows, sms)
        return ceil_div(w.tiles, split) >= self.wide_min_tiles and 2 * rows * w.head_blocks * split >= sms

    def choose(self, rows, sms):
        """Choose: the plan of a call of rows on a device of sms SMs (the rule's own sms,
        when positive, overrides it). Raises LaunchError where the Go returns an error."""
        if self.sms > 0:
            sms = self.sms
        if rows < 0 or sms < 1 or len(self.families) == 0:
            raise LaunchError(f"plan: {rows} rows on {sms} SMs with {len(self.families)} families")
        if rows == 0:
            return Choice(0, 1, 0, [])  # launches nothing
        fi = 1 if self.wide(rows, sms) else 0
        f = self.families[fi]
        split = self.split_for(f, rows, sms)
        ctas = f.head_blocks * rows * split
        small = self.small_den * ctas <= self.small_num * sms
        k = pick(f.direct, f.direct_small, small)
        if split > 1:
            k = pick(f.partial, f.partial_small, small)
        if k == "":
            raise LaunchError(f"plan: {rows} rows on {sms} SMs need a family-{fi} kernel for split {split} that was not generated")
        if split == 1:
            return Choice(fi, split, ctas, [k])
        comb = next((name for chunks, name in self.combines if chunks == split), "")
        if comb == "":
            raise LaunchError(f"plan: {rows} rows on {sms} SMs split {split} ways, and no combine kernel of {split} chunks was generated")
        return Choice(fi, split, ctas, [k, comb])

    def max_parts(self, capacity, sms):
        """MaxParts: the most (row, chunk) pairs, rows x split, of any call of 1..capacity
        rows that runs a Partial kernel on sms SMs; 0 when no call splits."""
        if self.sms > 0:
            sms = self.sms
        fewest = 0  # the fewest CTAs per row of any family
        for i, f in enumerate(self.families):
            if i == 0 or f.head_blocks < fewest:
                fewest = f.head_blocks
        parts = 0
        for rows in range(1, capacity + 1):
            try:
                c = self.choose(rows, sms)
            except LaunchError:
                c = None
            if c is not None and c.split > 1:
                parts = max(parts, rows * c.split)
            if self.split == 0 and rows * fewest >= sms:
                break  # from here on every family's split is 1
        return parts


def filled(tiles, split):
    """How many of split chunks get tiles when each takes ceil(tiles / split)."""
    if tiles < 1:
        return 1
    return ceil_div(tiles, ceil_div(tiles, split))


class Family:
    """plan.Family: one CTA shape and its kernels ("" where a kernel was not generated)."""

    def __init__(self, d):
        self.head_block = d.get("head_block", 0)
        self.tile = d.get("tile", 0)
        self.head_blocks = d.get("head_blocks", 0)
        self.tiles = d.get("tiles", 0)
        self.per_sm = d.get("ctas_per_sm", 0)
        self.direct = d.get("direct", "")
        self.partial = d.get("partial", "")
        self.direct_small = d.get("direct_small", "")
        self.partial_small = d.get("partial_small", "")


def pick(large, small, is_small):
    """The Small kernel for a small launch where there is one."""
    return small if is_small and small != "" else large


def choose(target, rows, sms):
    """The split and the kernels (manifest entries, in launch order) of a call of rows on a
    device of sms SMs: the plan's choice, or without a plan every kernel in list order."""
    if target.get("plan") is None:
        return 1, list(target["kernels"])
    c = Rule(target["plan"]).choose(rows, sms)
    by_entry = {k["entry"]: k for k in target["kernels"]}
    missing = [n for n in c.kernels if n not in by_entry]
    if missing:
        raise ValueError(f"{target['target']}: the plan chose {missing}, which the manifest's kernels lack")
    return c.split, [by_entry[n] for n in c.kernels]


def grid_of(kernel, rows, split):
    return tuple((split if d["param"] == "split" else rows) if d.get("param") else d["value"] for d in kernel["grid"])


def plan_call(man, target, rows, args, workspace, sms):
    """Check one call's arguments against the manifest like runtime.CheckArgs and return,
    per kernel to launch on a device of sms SMs, (kernel, grid, [ctypes values in parameter
    order]). args maps each of the manifest's arguments by name (the rows included);
    workspace maps the target's workspace buffers by name. A call of 0 rows launches
    nothing."""
    cap = man["capacity"]
    if man.get("rows_argument"):
        if isinstance(rows, bool) or not isinstance(rows, int) or not 0 <= rows <= cap:
            raise LaunchError(f"{rows!r} rows, want 0..{cap} (the capacity the kernel was generated for, -max-tokens {cap})")
        args = dict(args, **{man["rows_argument"]: rows})
    names = [a["name"] for a in man["arguments"]]
    missing = [n for n in names if n not in args]
    extra = [n for n in args if n not in names]
    if missing or extra:
        raise LaunchError(f"arguments: missing {missing}, unknown {extra}; the kernel takes {names}")
    split, kernels = choose(target, rows, sms)
    launches = []
    for k in kernels:
        for d in k["grid"]:
            if d.get("param") == "split" and not 1 <= split <= d["value"]:
                raise LaunchError(f"{k['entry']}: split {split}, want 1..{d['value']}")
        values, given = [], {}
        for p in k["params"]:
            if p.get("workspace"):
                v = workspace[p["workspace"]]
            elif p.get("plan") == "split":
                v = split
            elif p.get("plan"):
                raise ValueError(f"{k['entry']}: parameter {p['name']} is bound to the plan's {p['plan']!r}, want 'split'")
            elif 0 <= p["arg"] < len(names):
                v = args[names[p["arg"]]]
            else:
                raise ValueError(f"{k['entry']}: parameter {p['name']} is bound to argument {p['arg']} of {len(names)}")
            values.append(pack(k["entry"], p, v, rows, split))
            given[p["name"]] = v
        by_name = {p["name"]: val.value for p, val in zip(k["params"], values)}
        for p in k["params"]:
            if p.get("strides"):
                check_strides(k["entry"], p, as_buffer(given[p["name"]]), by_name)
        launches.append((k, grid_of(k, rows, split), values))
    if any(0 in g for _, g, _ in launches):
        return []
    return launches


ELEM_BYTES = {"u8": 1, "e4m3": 1, "bf16": 2, "f16": 2, "i32": 4, "u32": 4, "f32": 4, "i64": 8, "u64": 8, "f64": 8}


def strided_bytes(p, value):
    """ptx.KParam.CheckStrides: the bytes a strided pointer's kernel may touch, from the
    values of the stride (and count) parameters; raises LaunchError for a negative
    stride, or one below what the positions inside it span where its count is above 1
    (rows read over each other)."""
    st = p["strides"]
    span, empty = st["run"], False
    for d in st["dims"]:
        s = value(d["stride"])
        n = d.get("count", 0)
        if d.get("count_param"):
            v, div = value(d["count_param"]), max(d.get("count_div", 1), 1)
            n = (v + div - 1) // div if v > 0 else 0
        if s < 0:
            raise LaunchError(f"{d['stride']} = {s}: a stride of {p['name']} is at least 0")
        if n > 1 and s < span:
            raise LaunchError(f"{d['stride']} = {s}: want at least {span} elements (a smaller stride reads the rows of {p['name']} over each other)")
        if n <= 0:
            empty = True
        if n > 1:
            span += (n - 1) * s
    return 0 if empty else span * ELEM_BYTES.get(p.get("elem"), 1)


def check_strides(entry, p, b, values):
    """Refuse stride arguments that reach past a strided pointer's buffer (Go's
    runtime.CheckArgs)."""
    where = f"{entry}: parameter {p['name']}"
    try:
        need = strided_bytes(p, lambda name: values[name])
    except LaunchError as e:
        raise LaunchError(f"{where}: {e}") from None
    if need > b.nbytes:
        dims = ", ".join(f"{d['stride']} = {values[d['stride']]}" for d in p["strides"]["dims"])
        raise LaunchError(f"{where}: buffer is {b.nbytes} bytes, the strides reach {need} ({dims})")


def min_bytes(p, rows, split):
    """A pointer parameter's least buffer size: fixed + per_row x rows + per_part x rows x split."""
    m = p["min_bytes"]
    return m.get("fixed", 0) + m.get("per_row", 0) * rows + m.get("per_part", 0) * rows * split


def pack(entry, p, v, rows, split):
    where = f"{entry}: parameter {p['name']}"
    ctype, size = KINDS[p["kind"]]
    if size != p["size"]:
        raise ValueError(f"{where}: manifest size {p['size']} for kind {p['kind']}, want {size}")
    if p["kind"] == "ptr":
        b = as_buffer(v)
        need = min_bytes(p, rows, split)
        if p.get("elem") and b.elem != p["elem"]:
            raise LaunchError(f"{where}: a {b.elem} buffer, want {p['elem']}")
        if b.nbytes < need:
            m = p["min_bytes"]
            if m.get("per_part"):
                note = f" ({m.get('fixed', 0)} + {m.get('per_row', 0)} per row + {m['per_part']} per row and chunk, {rows} rows, split {split})"
            elif m.get("per_row"):
                note = f" ({m.get('fixed', 0)} + {m['per_row']} per row, {rows} rows)"
            else:
                note = ""
            raise LaunchError(f"{where}: buffer is {b.nbytes} bytes, kernel may access {need}{note}")
        if p["align"] > 1 and b.ptr % p["align"]:
            raise LaunchError(f"{where}: address {b.ptr:#x} is not {p['align']}-byte aligned")
        return ctype(b.ptr)
    if p["kind"] in INT_RANGE:
        lo, hi = INT_RANGE[p["kind"]]
        if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
            raise LaunchError(f"{where}: {v!r}, want an integer in {lo}..{hi}")
        if p["align"] > 1 and v % p["align"]:
            raise LaunchError(f"{where}: {v} must be a multiple of {p['align']}")
        return ctype(v)
    if not isinstance(v, (int, float)):
        raise LaunchError(f"{where}: {v!r}, want a number")
    return ctype(v)


# ---------------------------------------------------------------------------------------
# Test vectors (the format of shared/testvectors/README.md), pure Python


def read_array(path, code, count):
    import array
    a = array.array(code)
    with open(path, "rb") as f:
        a.frombytes(f.read())
    if sys.byteorder != "little":
        a.byteswap()
    if len(a) != count:
        raise ValueError(f"{path}: {len(a)} elements, want {count}")
    return a


def load_vectors(folder):
    with open(os.path.join(folder, "meta.json")) as f:
        m = json.load(f)
    T, H, D = m["T"], m["H"], m["nope"] + m["rope"]
    v = {"meta": m, "name": os.path.basename(os.path.normpath(folder)), "T": T, "H": H, "D": D,
         "q": read_array(os.path.join(folder, "q.bf16"), "H", T * H * D),
         "out_ref": read_array(os.path.join(folder, "out_ref.f64"), "d", T * H * D),
         "lse_ref": read_array(os.path.join(folder, "lse_ref.f64"), "d", T * H), "segments": []}
    if m["sink"]:
        v["sink"] = read_array(os.path.join(folder, "sink.f32"), "f", H)
    for s in m["segments"]:
        seg = {"meta": s, "cache": open(os.path.join(folder, s["cache"]), "rb").read(),
               "idx": read_array(os.path.join(folder, s["idx"]), "i", T * s["K"])}
        if len(seg["cache"]) != s["pages"] * s["page_stride"]:
            raise ValueError(f"{folder}: {s['cache']} is {len(seg['cache'])} bytes, want pages x page_stride")
        if s.get("len"):
            seg["len"] = read_array(os.path.join(folder, s["len"]), "i", T)
        v["segments"].append(seg)
    return v


def gen_flags(v):
    """The ptxgen flags of a folder's configuration (without -max-tokens and targets)."""
    m = v["meta"]
    segs = m["segments"]
    f = ["-kernel", "mla_decode", "-tokens", str(v["T"]), "-heads", str(v["H"]), "-cache", m["cache"],
         "-nope", str(m["nope"]), "-rope", str(m["rope"]), f"-sink={'true' if m['sink'] else 'false'}",
         "-scale", repr(m["sm_scale"])]
    for i, s in enumerate(segs):
        f += [f"-k{i}", str(s["K"]), f"-page{i}", str(s["page_size"]), f"-len{i}={'true' if s.get('len') else 'false'}"]
    if len(segs) == 1:
        f += ["-k1", "0"]
    return f


def manifest_flags(man):
    """The configuration flags of the gen command recorded in the manifest."""
    words = man["command"].split()
    out = {}
    i = 0
    while i < len(words):
        w = words[i]
        if w.startswith("-") and "=" in w:
            k, val = w[1:].split("=", 1)
            out[k] = val
        elif w.startswith("-") and i + 1 < len(words):
            out[w[1:]] = words[i + 1]
            i += 1
        i += 1
    return out


def flag_pairs(flags):
    """["-heads", "64", "-sink=true"] -> {"heads": "64", "sink": "true"}."""
    out, i = {}, 0
    while i < len(flags):
        w = flags[i]
        if "=" in w:
            k, val = w[1:].split("=", 1)
            out[k] = val
            i += 1
        else:
            out[w[1:]] = flags[i + 1]
            i += 2
    return out


def check_manifest_matches(man, v):
    """Refuse a manifest generated for another configuration than the folder's."""
    have = manifest_flags(man)
    bad = []
    for k, val in flag_pairs(gen_flags(v)).items():
        h = have.get(k)
        if k == "tokens":
            ok = h is not None and int(man["capacity"]) >= int(val)
        elif k == "scale":  # -scale 0 is 1/sqrt(nope+rope)
            hv = h is not None and (float(h) or 1 / math.sqrt(v["D"]))
            ok = h is not None and abs(hv - float(val)) <= 1e-6 * abs(float(val))
        else:
            ok = h == val
        if not ok:
            bad.append(f"-{k} {h} (folder: {val})")
    if bad:
        raise ValueError(f"manifest in {man['dir']} was generated for another configuration than {v['name']}: {', '.join(bad)}")


def batch_rows(v, rows):
    """Row i of a call of rows rows is the folder's row i mod T."""
    return [i % v["T"] for i in range(rows)]


def pick_rows(flat, width, rows):
    out = []
    for r in rows:
        out.extend(flat[r * width:(r + 1) * width])
    return out


def bf16_value(bits):
    return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]


def bf16_round(x):
    """float64 -> float32 -> bf16 (round to nearest even), as a float."""
    if math.isnan(x) or math.isinf(x):
        return x
    (u,) = struct.unpack("<I", struct.pack("<f", x))
    u = (u + 0x7FFF + ((u >> 16) & 1)) >> 16
    return bf16_value(u)


def compare(name, got, want, tol):
    """golden.Compare: NaN in got always fails, an infinite want must be matched exactly,
    else |got - want| <= abs + rel |want|, and the cosine distance over finite wants."""
    bad, nan, dot, gg, ww, max_abs = 0, 0, 0.0, 0.0, 0.0, 0.0
    for g, w in zip(got, want):
        if math.isnan(g):
            nan += 1
            bad += 1
        elif math.isinf(w) or math.isnan(w):
            bad += g != w
        else:
            d = abs(g - w)
            max_abs = max(max_abs, d)
            bad += not d <= tol["abs"] + tol["rel"] * abs(w)
            dot, gg, ww = dot + g * w, gg + g * g, ww + w * w
    cos = 0.0 if gg == 0 or ww == 0 else 1 - dot / math.sqrt(gg * ww)
    if gg == 0 and ww == 0:
        cos = 0.0
    elif gg == 0 or ww == 0:
        cos = 1.0
    ok = len(got) == len(want) and bad == 0 and (tol["cos"] is None or cos <= tol["cos"])
    line = f"{name}: {'ok' if ok else 'FAIL'}, {len(want)} elements, max abs err {max_abs:.3g}, cos dist {cos:.3g}, {bad} outside tol, {nan} NaN"
    return ok, line


# ---------------------------------------------------------------------------------------
# The GPU host: torch tensors, cuda-python launches


class Program:
    """One manifest's program loaded once on the current device: its module, functions and
    workspace (allocated for the capacity on this device's SM count). launch() runs a call of
    any rows up to the capacity on a stream (torch's current one by default): the kernels the
    plan chooses for the rows on this device, in order, with its split, as the generated Go
    does."""

    def __init__(self, manifest_path):
        import torch
        from cuda.bindings import driver
        self.torch, self.driver = torch, driver
        self.man = load_manifest(manifest_path)
        torch.cuda.init()
        torch.empty(1, device="cuda")  # makes torch's (primary) context current
        check(driver.cuInit(0))
        dev = check(driver.cuDeviceGet(torch.cuda.current_device()))
        ctx = check(driver.cuCtxGetCurrent())
        if int(ctx) == 0:
            check(driver.cuCtxSetCurrent(check(driver.cuDevicePrimaryCtxRetain(dev))))
        # The plan chooses with the device's SM count (unless the plan fixes one).
        self.sms = check(driver.cuDeviceGetAttribute(
            driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev))
        self.target = pick_target(self.man, torch.cuda.get_device_capability())
        with open(os.path.join(self.man["dir"], self.target["ptx"]), "rb") as f:
            self.module = check(driver.cuModuleLoadData(f.read() + b"\0"))
        self.funcs = {}
        for k in self.target["kernels"]:
            fn = check(driver.cuModuleGetFunction(self.module, k["entry"].encode()))
            if k["shared_opt_in"]:
                check(driver.cuFuncSetAttribute(
                    fn, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, k["dynamic_shared_bytes"]))
            self.funcs[k["entry"]] = fn
        # The workspace, once: room for the partial results of the largest split call the
        # plan makes on this device for up to the capacity rows.
        dtypes = {v: getattr(torch, k) for k, v in TORCH_ELEMS.items()}
        sizes = {"u8": 1, "bf16": 2, "f16": 2, "f32": 4, "i32": 4}
        elems = workspace_elems(self.target)
        self.workspace_bytes, self.parts = workspace_bytes(self.man, self.target, self.sms)
        self.workspace = {}
        for w in self.target["workspace"]:
            e = elems.get(w["name"], "u8")
            n = ceil_div(self.workspace_bytes[w["name"]], sizes[e])
            self.workspace[w["name"]] = torch.zeros(n, dtype=dtypes[e], device="cuda")

    @property
    def capacity(self):
        return self.man["capacity"]

    def choose(self, rows):
        """The split and the kernels' entries a call of rows runs on this device."""
        split, kernels = choose(self.target, rows, self.sms)
        return split, [k["entry"] for k in kernels]

    def launch(self, rows, args, stream=None):
        driver = self.driver
        if stream is None:
            stream = self.torch.cuda.current_stream().cuda_stream
        launches = plan_call(self.man, self.target, rows, args, self.workspace, self.sms)
        for k, grid, values in launches:
            fn = self.funcs[k["entry"]]
            params = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
            if k["programmatic"]:
                attr = driver.CUlaunchAttribute()
                attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
                attr.value.programmaticStreamSerializationAllowed = 1
                cfg = driver.CUlaunchConfig()
                cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
                cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = k["block"]
                cfg.sharedMemBytes = k["dynamic_shared_bytes"]
                cfg.hStream = driver.CUstream(stream)
                cfg.attrs = [attr]
                cfg.numAttrs = 1
                check(driver.cuLaunchKernelEx(cfg, fn, ctypes.addressof(params), 0))
            else:
                check(driver.cuLaunchKernel(fn, *grid, *k["block"], k["dynamic_shared_bytes"],
                                            driver.CUstream(stream), ctypes.addressof(params), 0))
        return len(launches)


def check(result):
    from cuda.bindings import driver
    err, *rest = result
    if err != driver.CUresult.CUDA_SUCCESS:
        _, name = driver.cuGetErrorName(err)
        raise RuntimeError(f"CUDA driver: {name.decode() if name else err}")
    return rest[0] if len(rest) == 1 else tuple(rest) if rest else None


def torch_call(torch, v, rows):
    """The arguments of a call of rows rows built from folder v, on the GPU, and its
    float64 reference rows."""
    import array
    rs = batch_rows(v, rows)
    H, D = v["H"], v["D"]

    def t(code, vals, dtype, shape):
        data = bytearray(array.array(code, vals).tobytes()) or bytearray(16)  # frombuffer needs bytes
        return torch.frombuffer(data, dtype=dtype)[:math.prod(shape)].reshape(shape).to("cuda")

    args = {"q": t("H", pick_rows(v["q"], H * D, rs), torch.bfloat16, (rows, H, D)), "q_stride_t": H * D, "q_stride_h": D,
            "out": torch.full((rows, H, D), float("nan"), dtype=torch.bfloat16, device="cuda"),
            "lse": torch.full((rows, H), float("nan"), dtype=torch.float32, device="cuda")}
    if "sink" in v:
        args["sink"] = t("f", v["sink"], torch.float32, (H,))
    for i, s in enumerate(v["segments"]):
        m = s["meta"]
        args[f"cache{i}"] = torch.frombuffer(bytearray(s["cache"]), dtype=torch.uint8).to("cuda")
        args[f"page_stride{i}"] = m["page_stride"]
        args[f"slots{i}"] = m["pages"] * m["page_size"]
        args[f"idx{i}"] = t("i", pick_rows(s["idx"], m["K"], rs), torch.int32, (rows, m["K"]))
        args[f"idx_stride{i}"] = m["K"]
        if "len" in s:
            args[f"len{i}"] = t("i", pick_rows(s["len"], 1, rs), torch.int32, (rows,))
    want_out = pick_rows(v["out_ref"], H * D, rs)
    want_lse = pick_rows(v["lse_ref"], H, rs)
    return args, want_out, want_lse


def run_gpu(kernels_dir, vectors_dir, graph_rows):
    import torch
    folders = sorted(d for d in os.listdir(vectors_dir) if os.path.isfile(os.path.join(vectors_dir, d, "meta.json")))
    if not folders:
        raise SystemExit(f"no test-vector folders (with meta.json) in {vectors_dir}")
    failed = 0
    for name in folders:
        v = load_vectors(os.path.join(vectors_dir, name))
        prog = Program(os.path.join(kernels_dir, name, "mla_decode.json"))
        check_manifest_matches(prog.man, v)
        cap = prog.capacity
        rule = prog.target.get("plan") or {}
        fixed = f" (the plan fixes -sms {rule['sms']})" if rule.get("sms", 0) > 0 else ""
        print(f"{name}: T={v['T']} H={v['H']}, {prog.target['target']} PTX loaded once on {prog.sms} SMs{fixed}, capacity {cap}, "
              f"kernels {[k['entry'] for k in prog.target['kernels']]}, workspace {prog.workspace_bytes} bytes "
              f"({prog.parts} row-chunk parts)")
        for rows in sorted({0, 1, v["T"], cap}):
            split, kernels = prog.choose(rows)
            print(f"  rows {rows}: plan split {split}, kernels {', '.join(kernels) or 'none'}")
            args, want_out, want_lse = torch_call(torch, v, rows)
            n = prog.launch(rows, args)
            torch.cuda.synchronize()
            if rows == 0:
                ok = n == 0
                print(f"  rows 0: {'ok' if ok else 'FAIL'}, {n} launches")
                failed += not ok
                continue
            got_out = args["out"].float().flatten().cpu().tolist()
            got_lse = args["lse"].flatten().cpu().tolist()
            for label, got, want, tol in (("out", got_out, want_out, OUT_TOL), ("lse", got_lse, want_lse, LSE_TOL)):
                ok, line = compare(label, got, want, tol)
                print(f"  rows {rows}: {line}")
                failed += not ok
        try:
            prog.launch(cap + 1, torch_call(torch, v, 1)[0])
            print(f"  rows {cap + 1}: FAIL, accepted past the capacity")
            failed += 1
        except LaunchError as e:
            print(f"  rows {cap + 1}: refused ok ({e})")
        # One call captured in a CUDA graph and replayed: the same bits as the eager call
        # on the same buffers.
        rows = min(graph_rows, cap)
        split, kernels = prog.choose(rows)
        print(f"  graph of the {rows}-row call: plan split {split}, kernels {', '.join(kernels) or 'none'}")
        args, _, _ = torch_call(torch, v, rows)
        prog.launch(rows, args)  # eager, which is also the warm-up before capture
        torch.cuda.synchronize()
        eager_out, eager_lse = args["out"].view(torch.int16).clone(), args["lse"].view(torch.int32).clone()
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            prog.launch(rows, args)  # on torch's capture stream
        for rep in range(2):
            args["out"].fill_(float("nan"))
            args["lse"].fill_(float("nan"))
            g.replay()
            torch.cuda.synchronize()
            same = torch.equal(args["out"].view(torch.int16), eager_out) and torch.equal(args["lse"].view(torch.int32), eager_lse)
            print(f"  graph replay {rep + 1} of the {rows}-row call: {'ok, same bits as the eager call' if same else 'FAIL, differs from the eager call'}")
            failed += not same
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        for _ in range(100):
            g.replay()
        end.record()
        torch.cuda.synchronize()
        print(f"  {start.elapsed_time(end) * 10:.2f} us per graph replay ({rows} rows, mean of 100)")
    if failed:
        print(f"python host: {failed} checks FAILED")
        return 1
    print("python host: all passed")
    return 0


# ---------------------------------------------------------------------------------------
# Self-test: everything without a GPU


def selftest(manifest_path, folders, matching):
    fails = []

    def expect(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            fails.append(what)

    def raises(fn, text, what):
        try:
            fn()
        except (LaunchError, ValueError) as e:
            expect(text in str(e), f"{what}: {e}")
            return
        expect(False, f"{what}: accepted")

    man = load_manifest(manifest_path)
    cap = man["capacity"]
    expect(cap > 1 and man["rows_argument"] == "rows", f"manifest: capacity {cap}, rows argument {man.get('rows_argument')}")
    with tempfile.TemporaryDirectory() as d:
        old = os.path.join(d, "v1.json")
        with open(old, "w") as f:
            json.dump(dict(man, version=1), f)
        raises(lambda: load_manifest(old), f"want {MANIFEST_FORMAT!r} version {MANIFEST_VERSION}", "a version 1 manifest is refused")
    t90 = pick_target(man, (9, 0))
    expect(t90["target"] == "sm_90", f"an sm_90 device runs the {t90['target']} target")
    expect(pick_target(man, (12, 0))["target"] == "sm_120", "an sm_120 device runs the sm_120 target")
    raises(lambda: pick_target(man, (7, 5)), "none of the manifest's targets", "an sm_75 device is refused")

    # The plan: the port reproduces every choice the Go made (plan_examples), and fails
    # where the Go fails.
    n, differ = 0, []
    for t in man["targets"]:
        if t.get("plan") is None:
            continue
        r = Rule(t["plan"])
        for ex in t.get("plan_examples") or []:
            n += 1
            try:
                c = r.choose(ex["rows"], ex["sms"])
                got = (c.split, c.kernels, r.max_parts(ex["rows"], ex["sms"]))
            except LaunchError as e:
                got = str(e)
            want = (ex["split"], ex["kernels"] or [], ex["max_parts"])
            if got != want:
                differ.append(f"{t['target']} rows {ex['rows']} on {ex['sms']} SMs: split, kernels, max parts {got}, want {want}")
    for line in differ:
        expect(False, f"plan example {line}")
    expect(n > 0 and not differ, f"plan examples: {n} reproduced" if not differ else f"plan examples: {len(differ)} of {n} differ")
    expect(t90.get("plan") is not None, f"{t90['target']}: a launch plan of {len((t90.get('plan') or {}).get('families') or [])} families")
    S = SELFTEST_SMS
    rd = t90["plan"]
    rule = Rule(rd)
    eff = rule.sms if rule.sms > 0 else S  # the SMs the plan plans for
    raises(lambda: rule.choose(-1, S), f"plan: -1 rows on {eff} SMs with {len(rule.families)} families", "the plan refuses negative rows")
    if rule.sms == 0:
        raises(lambda: rule.choose(1, 0), "plan: 1 rows on 0 SMs", "the plan refuses a device of 0 SMs")
    raises(lambda: Rule(dict(rd, families=[])).choose(1, S), "with 0 families", "the plan refuses a rule without families")
    c1 = rule.choose(1, S)
    if c1.split > 1:
        gone = Rule(dict(rd, families=[dict(f, partial="", partial_small="") for f in rd["families"]]))
        raises(lambda: gone.choose(1, S), "that was not generated", "a split call without a Partial kernel is refused")
    expect(Rule(dict(rd, sms=16)).choose(3, S) == Rule(dict(rd, sms=0)).choose(3, 16), "the plan's sms overrides the device's SM count")
    fixed = Rule(dict(rd, split=3)).choose(1, S)
    expect(fixed.split == min(3, rule.families[fixed.family].tiles), f"a fixed split of 3 gives split {fixed.split}")
    parts = rule.max_parts(cap, S)
    naive = max([r * rule.choose(r, S).split for r in range(1, cap + 1) if rule.choose(r, S).split > 1], default=0)
    expect(parts == naive, f"MaxParts({cap}, {eff}) = {parts}, the largest rows x split of the split calls of 1..{cap} rows")

    # Fake buffers at distinct aligned addresses, each exactly its minimum size for rows.
    names = [a["name"] for a in man["arguments"]]

    def fake_args(rows, split):
        args, addr = {}, 0x7F0000000000
        sizes = {}
        for k in t90["kernels"]:
            for p in k["params"]:
                if p["kind"] == "ptr" and p["arg"] >= 0:
                    n = names[p["arg"]]
                    sizes[n] = max(sizes.get(n, 0), min_bytes(p, rows, split))
        scalars = {a["name"]: 64 if a["kind"] != "f32" else 0.5 for a in man["arguments"] if a["kind"] != "ptr" and a["name"] != "rows"}
        # Strided buffers get their dense strides (each the span of the dimensions inside
        # it) and the size those reach.
        for k in t90["kernels"]:
            for p in k["params"]:
                if p.get("strides") and p["arg"] >= 0:
                    span = p["strides"]["run"]
                    for d in p["strides"]["dims"]:
                        scalars[d["stride"]] = span
                        n = d.get("count", 0)
                        if d.get("count_param"):
                            v = rows if d["count_param"] == "rows" else scalars[d["count_param"]]
                            n = -(-v // d["count_div"])
                        span += max(n - 1, 0) * span
                    n = names[p["arg"]]
                    sizes[n] = max(sizes.get(n, 0), span * ELEM_BYTES[p["elem"]])
        for a in man["arguments"]:
            if a["name"] == "rows":
                continue
            if a["kind"] == "ptr":
                args[a["name"]] = Buffer(addr, sizes.get(a["name"], 1), a["elem"])
                addr += 1 << 24
            else:
                args[a["name"]] = scalars[a["name"]]
        return args

    elems = workspace_elems(t90)

    def fake_workspace(sms):
        sizes, parts = workspace_bytes(man, t90, sms)
        ws = {w["name"]: Buffer(0x7E0000000000 + i * (1 << 30), sizes[w["name"]], elems.get(w["name"], "u8"))
              for i, w in enumerate(t90["workspace"])}
        return ws, sizes, parts

    ws, sizes, parts = fake_workspace(S)
    want_sizes = {w["name"]: max(w["bytes"] + w["per_part"] * rule.max_parts(cap, S), 16) for w in t90["workspace"]}
    expect(sizes == want_sizes and parts > 0, f"workspace on {S} SMs: {sizes} bytes, {parts} row-chunk parts")
    # Calls of 1, 3 and capacity rows on S SMs, and one of capacity rows on a device so small
    # that the rows fill it (split 1, a Direct kernel).
    for sms, rows in [(S, 1), (S, 3), (S, cap), (4, cap)]:
        label = f"rows {rows}" if sms == S else f"rows {rows} on {sms} SMs"
        ws, _, _ = fake_workspace(sms)
        split, chosen = choose(t90, rows, sms)
        c = rule.choose(rows, sms)
        expect(c.kernels and [k["entry"] for k in chosen] == c.kernels and split == c.split,
               f"rows {rows} on {sms} SMs: plan split {split}, kernels {', '.join(c.kernels)}")
        args = fake_args(rows, split)
        launches = plan_call(man, t90, rows, args, ws, sms)
        expect([k["entry"] for k, _, _ in launches] == c.kernels, f"{label}: {len(launches)} launches")
        for k, grid, values in launches:
            want = tuple(split if d.get("param") == "split" else rows if d.get("param") else d["value"] for d in k["grid"])
            split_dim = [g for g, d in zip(grid, k["grid"]) if d.get("param") == "split"]
            expect(grid == want and grid[1] == rows and split_dim in ([], [split]), f"{label}: {k['entry']} grid {grid}")
            for p, val in zip(k["params"], values):
                if p.get("workspace"):
                    src = ws[p["workspace"]]
                elif p.get("plan") == "split":
                    src = split
                else:
                    src = rows if p["name"] == "rows" else args[p["name"]]
                exp = src.ptr if isinstance(src, Buffer) else src
                if ctypes.sizeof(val) != p["size"] or val.value != exp:
                    expect(False, f"{label}: {k['entry']}.{p['name']} packed {val.value} ({ctypes.sizeof(val)} bytes), want {exp}")
                    break
            else:
                expect(True, f"{label}: {k['entry']}'s {len(values)} parameters packed in order"
                             f"{f' (split {split})' if any(p.get('plan') for p in k['params']) else ''}")
        if rows == 3:
            q = args["q"]
            short = dict(args, q=Buffer(q.ptr, q.nbytes - 1, q.elem))
            raises(lambda: plan_call(man, t90, rows, short, ws, sms), "kernel may access", "a q one byte short is refused")
            raises(lambda: plan_call(man, t90, rows, dict(args, q=Buffer(q.ptr + 8, q.nbytes, q.elem)), ws, sms), "aligned", "a misaligned q is refused")
            raises(lambda: plan_call(man, t90, rows, dict(args, q=Buffer(q.ptr, q.nbytes, "f32")), ws, sms), "want bf16", "an f32 q is refused")
            raises(lambda: plan_call(man, t90, rows, dict(args, slots0=2**31), ws, sms), "want an integer", "slots0 past i32 is refused")
            # Strides bounded by their buffers, as Go's runtime.CheckArgs does (issue 22).
            qst = args["q_stride_t"]
            raises(lambda: plan_call(man, t90, rows, dict(args, q_stride_t=-qst), ws, sms), f"q_stride_t = {-qst}: a stride of q is at least 0", "a negative q_stride_t is refused")
            raises(lambda: plan_call(man, t90, rows, dict(args, idx_stride0=0), ws, sms), "idx_stride0 = 0: want at least", "a zero idx_stride0 over 3 rows is refused")
            raises(lambda: plan_call(man, t90, rows, dict(args, q_stride_h=8), ws, sms), "q_stride_h = 8: want at least", "q heads read over each other are refused")
            raises(lambda: plan_call(man, t90, rows, dict(args, q_stride_t=2 * qst), ws, sms), "the strides reach", "a q_stride_t past the dense one with a dense-sized q is refused")
            raises(lambda: plan_call(man, t90, rows, dict(args, slots0=args["slots0"] + 1), ws, sms), "parameter cache0: buffer is", "slots0 past cache0's pages are refused")
            expect(plan_call(man, t90, 1, dict(fake_args(1, split), q_stride_t=0), ws, sms) != [], "a 1-row call may pass q_stride_t 0 (it steps over no row)")
            missing = dict(args)
            del missing["q"]
            raises(lambda: plan_call(man, t90, rows, missing, ws, sms), "missing ['q']", "a missing argument is refused")
            taker = next((p for k, _, _ in launches for p in k["params"] if p.get("workspace") and p["min_bytes"]["per_part"]), None)
            if split > 1 and taker:
                w = ws[taker["workspace"]]
                small = dict(ws, **{taker["workspace"]: Buffer(w.ptr, min_bytes(taker, rows, split) - 1, w.elem)})
                raises(lambda: plan_call(man, t90, rows, args, small, sms), "per row and chunk",
                       f"a {taker['workspace']} one byte short of {rows} rows x split {split} is refused")
                narrow = json.loads(json.dumps(t90))
                for k in narrow["kernels"]:
                    for d in k["grid"]:
                        if d.get("param") == "split":
                            d["value"] = split - 1
                raises(lambda: plan_call(man, narrow, rows, args, ws, sms), f"split {split}, want 1..{split - 1}",
                       "a split past the kernel's grid is refused")
            # Without a plan (a gemm-like program) every kernel launches, in list order: here
            # the kernels that take no split (none where -split fixed one).
            plain = [k for k in t90["kernels"] if not any(p.get("plan") for p in k["params"])
                     and not any(d.get("param") == "split" for d in k["grid"])]
            if plain:
                bare = dict(t90, plan=None, kernels=plain)
                got = [k["entry"] for k, _, _ in plan_call(man, bare, rows, args, ws, sms)]
                expect(got == [k["entry"] for k in plain], f"without a plan, rows 3 launches every kernel in order: {', '.join(got)}")
                expect(plan_call(man, bare, 0, fake_args(0, 1), ws, sms) == [], "without a plan, rows 0 launches nothing")
    ws, _, _ = fake_workspace(S)
    expect(rule.choose(0, S).kernels == [] and plan_call(man, t90, 0, fake_args(0, 1), ws, S) == [], "rows 0: nothing to launch")
    raises(lambda: plan_call(man, t90, cap + 1, fake_args(cap + 1, 1), ws, S), f"{cap + 1} rows, want 0..{cap}", "rows past the capacity are refused")
    raises(lambda: plan_call(man, t90, -1, fake_args(1, 1), ws, S), "want 0..", "negative rows are refused")
    for k in t90["kernels"]:
        expect(k["shared_opt_in"] == (k["dynamic_shared_bytes"] > SHARED_OPT_IN), f"{k['entry']}: opt-in {k['shared_opt_in']} for {k['dynamic_shared_bytes']} bytes")

    for folder in folders:
        v = load_vectors(folder)
        try:
            check_manifest_matches(man, v)
            expect(v["name"] == matching, f"{v['name']}: the manifest's configuration matches the folder's")
        except ValueError as e:
            expect(v["name"] != matching, f"{v['name']}: a manifest for another configuration is refused: {e}")
        expect(len(gen_flags(v)) > 10, f"{v['name']}: gen flags {' '.join(gen_flags(v))}")
        rows = batch_rows(v, 8)
        expect(rows == [i % v["T"] for i in range(8)], f"{v['name']}: a batch of 8 repeats its {v['T']} rows")
        want = pick_rows(v["out_ref"], v["H"] * v["D"], rows)
        got = [bf16_round(x) for x in want]
        ok, line = compare("out", got, want, OUT_TOL)
        expect(ok, f"{v['name']}: the reference rounded to bf16 passes: {line}")
        j = next(i for i, x in enumerate(want) if math.isfinite(x) and abs(x) > 1e-3)
        bad = list(got)
        bad[j] += 0.05 + abs(bad[j])
        expect(not compare("out", bad, want, OUT_TOL)[0], f"{v['name']}: one element off by {bad[j] - got[j]:.3g} fails")
        bad[j] = float("nan")
        expect(not compare("out", bad, want, OUT_TOL)[0], f"{v['name']}: a NaN fails")
        lse = pick_rows(v["lse_ref"], v["H"], rows)
        expect(compare("lse", [float(struct.unpack('<f', struct.pack('<f', x))[0]) for x in lse], lse, LSE_TOL)[0], f"{v['name']}: lse as f32 passes")
        if any(math.isinf(x) for x in lse):
            flipped = [-x if math.isinf(x) else x for x in lse]
            expect(not compare("lse", flipped, lse, LSE_TOL)[0], f"{v['name']}: -inf for an empty row's +inf fails")
    if fails:
        print(f"selftest: {len(fails)} FAILED")
        return 1
    print("selftest: all passed")
    return 0


def main(argv):
    if len(argv) >= 1 and argv[0] == "flags":
        if len(argv) != 2:
            raise SystemExit("usage: mla_decode.py flags FOLDER")
        print(" ".join(gen_flags(load_vectors(argv[1]))))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--kernels", help="folder of NAME/mla_decode.json manifests (gen.sh)")
    ap.add_argument("--vectors", help="folder of test-vector folders (shared/testvectors/mla_decode)")
    ap.add_argument("--graph-rows", type=int, default=8, help="rows of the call captured in a CUDA graph")
    ap.add_argument("--selftest", action="store_true", help="check everything that needs no GPU, on the CPU")
    ap.add_argument("--manifest", help="with --selftest: a manifest of capacity > 1 with sm_120 and sm_90 targets")
    ap.add_argument("--matching", default="", help="with --selftest: the folder the manifest was generated for")
    ap.add_argument("folders", nargs="*", help="with --selftest: test-vector folders")
    a = ap.parse_args(argv)
    if a.selftest:
        if not a.manifest:
            ap.error("--selftest needs --manifest")
        return selftest(a.manifest, a.folders, a.matching)
    if not a.kernels or not a.vectors:
        ap.error("--kernels and --vectors are required (or --selftest)")
    return run_gpu(a.kernels, a.vectors, a.graph_rows)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
