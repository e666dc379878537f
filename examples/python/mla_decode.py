#!/usr/bin/env python3
"""Launch ptxgen's mla_decode from Python with cuda-python, from the launch manifest alone.

`ptxgen gen -manifest NAME.json` writes the PTX and a JSON manifest (version 5) that says how
to launch it (gogen/manifest.go): per target the PTX file, the workspace (bytes + per_part x
the plan's MaxParts), the launch plan (a plan.Rule: which kernels a call runs, in order, and
the split, from the rows and the device's SM count, with examples to test a port on; each
family with its variant: heads, warps, warp grid, tile, stages, precision), and per
kernel its entry, parameters (kind, element type, alignment, minimum size as fixed + per_row
x rows + per_part x rows x split, the strides that address it, bound to a caller argument,
a workspace buffer or the plan's split), grid (a number, the rows or the split per dimension), block, dynamic shared
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
import stat
import struct
import sys
import tempfile

MANIFEST_FORMAT = "ptxgen-launch-manifest"
MANIFEST_VERSION = 5
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


# ---------------------------------------------------------------------------------------
# Reading files: what a manifest or meta.json names is read the way the Go loaders read it
# (golden.LoadVectors): only a regular file directly in the folder, never through a
# symbolic link, of the size expected, known before anything is read, so a name cannot
# block the reader (a FIFO), read without end (/dev/zero) or leave the folder (../).

MAX_META_BYTES = 1 << 20       # meta.json (the shared folders' are under 1 KB)
MAX_MANIFEST_BYTES = 16 << 20  # a manifest (a 64-row decode's is about 100 KB)
MAX_PTX_BYTES = 256 << 20      # one target's PTX (the largest generated is a few MB)
MAX_CAPACITY = 65535           # rows are a grid's y dimension (CUDA's limit)


def host_memory_limit():
    """Half of the machine's memory, as golden.LoadVectorsLimit's callers bound a folder."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def plain_name(name, what):
    """A file name that stays in its folder: no directory part, not . or .."""
    if not isinstance(name, str) or name in ("", ".", "..") or os.path.basename(name) != name or "/" in name or "\\" in name or "\0" in name:
        raise ValueError(f"{what} {name!r}: want a file name in the folder (no directory, no ..)")
    return name


def read_file(path, limit, want=None, follow=False):
    """The bytes of a regular file of at most limit bytes (exactly want when given). A
    symbolic link is refused unless follow (the path the user typed); a FIFO, a device or
    a folder always."""
    name = os.path.basename(path) or path
    st = os.stat(path) if follow else os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise ValueError(f"{name} is a symbolic link: want a regular file in the folder (links could lead out of it)")
    if not stat.S_ISREG(st.st_mode):
        raise ValueError(f"{name} is not a regular file")
    if want is not None and st.st_size != want:
        raise ValueError(f"{name} has {st.st_size} bytes, want {want}")
    if st.st_size > limit:
        raise ValueError(f"{name} has {st.st_size} bytes, want at most {limit}")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | (0 if follow else getattr(os, "O_NOFOLLOW", 0))
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb") as f:
        if not os.path.samestat(st, os.fstat(f.fileno())):
            raise ValueError(f"{name} changed while opened")
        data = f.read(st.st_size + 1)
    if len(data) != st.st_size:
        raise ValueError(f"{name} changed size while read")
    return data


def parse_json(data, name):
    try:
        return json.loads(data)
    except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(f"{name}: not JSON: {e}") from None


# ---------------------------------------------------------------------------------------
# Checking the manifest: every field the host uses, with its type and range, as Go's
# ParseManifest reads it (unknown fields refused), so a bad manifest is one clear error
# and never a traceback, an endless loop or a file outside the manifest's folder.


def _type_name(v):
    return "null" if v is None else {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
                                     list: "a list", dict: "an object"}.get(type(v), type(v).__name__)


def fields(d, path, required, optional=()):
    """d as an object with the required keys and no keys but those and optional."""
    if not isinstance(d, dict):
        raise ValueError(f"{path}: want an object, have {_type_name(d)}")
    missing = [k for k in required if k not in d]
    if missing:
        raise ValueError(f"{path}: missing {', '.join(missing)}")
    unknown = sorted(k for k in d if k not in required and k not in optional)
    if unknown:
        raise ValueError(f"{path}: unknown field {unknown[0]!r} (this host reads manifest version {MANIFEST_VERSION})")
    return d


def want_int(v, path, lo, hi=2**63 - 1):
    if isinstance(v, bool) or not isinstance(v, int) or not lo <= v <= hi:
        want = f"an integer >= {lo}" if hi >= 2**62 else f"an integer in {lo}..{hi}"
        raise ValueError(f"{path}: {v!r}: want {want}")
    return v


def want_str(v, path, choices=None):
    if not isinstance(v, str) or (choices is not None and v not in choices):
        want = "a string" if choices is None else "one of " + ", ".join(repr(c) for c in choices)
        raise ValueError(f"{path}: {v!r}: want {want}")
    return v


def want_bool(v, path):
    if not isinstance(v, bool):
        raise ValueError(f"{path}: {v!r}: want true or false")
    return v


def want_list(v, path, n=None):
    if not isinstance(v, list) or (n is not None and len(v) != n):
        raise ValueError(f"{path}: {_type_name(v)}: want a list{'' if n is None else f' of {n}'}")
    return v


def check_manifest(man):
    """Refuse a manifest whose fields are missing, unknown, of the wrong type or out of
    range (see the module's doc and gogen/manifest.go)."""
    if not isinstance(man, dict) or man.get("format") != MANIFEST_FORMAT or man.get("version") != MANIFEST_VERSION:
        got = (man.get("format"), man.get("version")) if isinstance(man, dict) else (_type_name(man), None)
        raise ValueError(f"manifest {got[0]!r} version {got[1]!r}, want {MANIFEST_FORMAT!r} version {MANIFEST_VERSION}")
    fields(man, "manifest", ["format", "version", "generator", "command", "program", "capacity", "arguments", "targets"], ["rows_argument"])
    for k in ("generator", "command", "program"):
        want_str(man[k], k)
    cap = want_int(man["capacity"], "capacity", 0, MAX_CAPACITY)
    names = []
    for i, a in enumerate(want_list(man["arguments"], "arguments")):
        w = f"arguments[{i}]"
        fields(a, w, ["name", "kind"], ["elem"])
        want_str(a["name"], w + ".name")
        want_str(a["kind"], w + ".kind", list(KINDS))
        if (a["kind"] == "ptr") != ("elem" in a):
            raise ValueError(f"{w}: a pointer has an elem and a scalar none")
        if "elem" in a:
            want_str(a["elem"], w + ".elem", list(ELEM_BYTES))
        if a["name"] in names:
            raise ValueError(f"{w}.name: {a['name']!r} twice")
        names.append(a["name"])
    rows_arg = man.get("rows_argument", "")
    if rows_arg:
        want_str(rows_arg, "rows_argument", [a["name"] for a in man["arguments"] if a["kind"] == "i32"])
    if (cap > 0) != bool(rows_arg):
        raise ValueError(f"capacity {cap} with rows_argument {rows_arg!r}: want both or neither")
    if not want_list(man["targets"], "targets"):
        raise ValueError("targets: want at least one")
    for i, t in enumerate(man["targets"]):
        check_target(t, f"targets[{i}]", names, rows_arg, cap)


def check_target(t, w, names, rows_arg, cap):
    fields(t, w, ["target", "ptx", "workspace", "kernels", "plan"], ["plan_examples"])
    target_number(want_str(t["target"], w + ".target"))
    plain_name(want_str(t["ptx"], w + ".ptx"), w + ".ptx")
    if not t["ptx"].endswith(".ptx"):
        raise ValueError(f"{w}.ptx {t['ptx']!r}: want a .ptx file name")
    ws = []
    for i, b in enumerate(want_list(t["workspace"], w + ".workspace")):
        bw = f"{w}.workspace[{i}]"
        fields(b, bw, ["name", "bytes", "per_part"])
        ws.append(want_str(b["name"], bw + ".name"))
        want_int(b["bytes"], bw + ".bytes", 0, 2**40)
        want_int(b["per_part"], bw + ".per_part", 0, 2**40)
    entries = []
    for i, k in enumerate(want_list(t["kernels"], w + ".kernels")):
        entries.append(check_kernel(k, f"{w}.kernels[{i}]", names, ws, rows_arg, cap))
    if not entries:
        raise ValueError(f"{w}.kernels: want at least one")
    if t["plan"] is not None:
        check_plan(t["plan"], w + ".plan", {k["entry"]: k["block"][0] for k in t["kernels"]})
    for i, ex in enumerate(want_list(t.get("plan_examples", []), w + ".plan_examples")):
        ew = f"{w}.plan_examples[{i}]"
        fields(ex, ew, ["rows", "sms", "split", "kernels", "max_parts"])
        for k in ("rows", "sms", "split", "max_parts"):
            want_int(ex[k], f"{ew}.{k}", 0, 2**31 - 1)
        for j, e in enumerate(want_list(ex["kernels"], ew + ".kernels")):
            want_str(e, f"{ew}.kernels[{j}]", entries)


def check_kernel(k, w, names, ws, rows_arg, cap):
    fields(k, w, ["entry", "grid", "block", "dynamic_shared_bytes", "shared_opt_in", "programmatic", "params"])
    want_str(k["entry"], w + ".entry")
    for d, g in enumerate(want_list(k["grid"], w + ".grid", 3)):
        gw = f"{w}.grid[{d}]"
        fields(g, gw, ["value"], ["param"])
        want_int(g["value"], gw + ".value", 1, 2**31 - 1 if d == 0 else 65535)
        known = [p for p in (rows_arg, "split") if p]
        if "param" in g:
            want_str(g["param"], gw + ".param", known)
            if g["param"] == rows_arg and g["value"] != cap:
                raise ValueError(f"{gw}: bound to the rows with {g['value']} at most, want the capacity {cap}")
    block = want_list(k["block"], w + ".block", 3)
    want_int(block[0], w + ".block[0]", 1, 1024)
    want_int(block[1], w + ".block[1]", 1, 1)
    want_int(block[2], w + ".block[2]", 1, 1)
    want_int(k["dynamic_shared_bytes"], w + ".dynamic_shared_bytes", 0, 256 << 10)
    want_bool(k["shared_opt_in"], w + ".shared_opt_in")
    want_bool(k["programmatic"], w + ".programmatic")
    params = want_list(k["params"], w + ".params")
    kinds = {}
    for i, p in enumerate(params):
        pw = f"{w}.params[{i}]"
        fields(p, pw, ["name", "kind", "size", "align", "min_bytes", "written", "arg"], ["elem", "strides", "workspace", "plan"])
        kinds[want_str(p["name"], pw + ".name")] = want_str(p["kind"], pw + ".kind", list(KINDS))
        if p["size"] != KINDS[p["kind"]][1]:
            raise ValueError(f"{pw}.size: {p['size']!r}, want {KINDS[p['kind']][1]} for kind {p['kind']}")
        want_int(p["align"], pw + ".align", 0, 4096)
        if "elem" in p:
            want_str(p["elem"], pw + ".elem", list(ELEM_BYTES))
        m = fields(p["min_bytes"], pw + ".min_bytes", ["per_row", "per_part", "fixed"])
        for f in ("per_row", "per_part", "fixed"):
            want_int(m[f], f"{pw}.min_bytes.{f}", 0, 2**40)
        want_bool(p["written"], pw + ".written")
        arg = want_int(p["arg"], pw + ".arg", -1, len(names) - 1)
        if arg < 0:
            if "workspace" in p:
                want_str(p["workspace"], pw + ".workspace", ws)
            elif "plan" in p:
                want_str(p["plan"], pw + ".plan", ["split"])
            else:
                raise ValueError(f"{pw}: bound to no argument (arg -1), no workspace buffer and not the plan's split")
    for i, p in enumerate(params):
        if "strides" not in p:
            continue
        sw = f"{w}.params[{i}].strides"
        st = fields(p["strides"], sw, ["run", "dims"])
        want_int(st["run"], sw + ".run", 1, 2**40)
        if p["kind"] != "ptr" or not want_list(st["dims"], sw + ".dims"):
            raise ValueError(f"{sw}: want a pointer with at least one strided dimension")
        for j, d in enumerate(st["dims"]):
            dw = f"{sw}.dims[{j}]"
            fields(d, dw, ["stride"], ["count", "count_param", "count_div"])
            want_str(d["stride"], dw + ".stride", [n for n, kind in kinds.items() if kind in INT_RANGE])
            if "count_param" in d:
                want_str(d["count_param"], dw + ".count_param", [n for n, kind in kinds.items() if kind == "i32"])
                want_int(d.get("count_div"), dw + ".count_div", 1, 2**31 - 1)
                if "count" in d:
                    raise ValueError(f"{dw}: a count and a count_param")
            else:
                want_int(d.get("count"), dw + ".count", 1, 2**40)
    return k["entry"]


def check_plan(r, w, threads):
    """threads: the block size of each kernel entry, checked already."""
    fields(r, w, ["families", "split", "max_split", "sms", "wide_min_tiles", "small_num", "small_den"], ["combines"])
    entries = list(threads)
    names = entries + [""]
    if not want_list(r["families"], w + ".families"):
        raise ValueError(f"{w}.families: want at least one")
    for i, f in enumerate(r["families"]):
        fw = f"{w}.families[{i}]"
        fields(f, fw, ["head_block", "warps", "warp_grid", "tile", "stages", "precision",
                       "head_blocks", "tiles", "ctas_per_sm", "direct", "partial", "direct_small", "partial_small"],
               ["score_warps", "producer_warps"])
        for k in ("head_block", "tile", "stages", "head_blocks", "tiles", "ctas_per_sm"):
            want_int(f[k], f"{fw}.{k}", 1, 2**31 - 1)
        # The variant (the design of the family's CTA) is descriptive: the host prints it
        # and checks that its kernels launch its warps (a CTA holds at most 32).
        warps = want_int(f["warps"], fw + ".warps", 1, 32)
        grid = [want_int(g, f"{fw}.warp_grid[{j}]", 1, 32) for j, g in enumerate(want_list(f["warp_grid"], fw + ".warp_grid", 2))]
        if grid[0] * grid[1] > warps:
            raise ValueError(f"{fw}.warp_grid: {grid}: want at most {warps} warps in all (warps = {warps})")
        # Warp roles: the first score_warps compute the scores, the last producer_warps
        # gather; together at most the CTA's warps.
        roles = [want_int(f.get(k, 0), f"{fw}.{k}", 0, warps) for k in ("score_warps", "producer_warps")]
        if sum(roles) > warps:
            raise ValueError(f"{fw}: score_warps {roles[0]} and producer_warps {roles[1]}: want at most {warps} warps in all (warps = {warps})")
        want_str(f["precision"], fw + ".precision")
        for k in ("direct", "partial", "direct_small", "partial_small"):
            if want_str(f[k], f"{fw}.{k}", names) and threads[f[k]] != 32 * warps:
                raise ValueError(f"{fw}.warps: {warps}: want {threads[f[k]] // 32}, the warps its kernel {f[k]} launches ({threads[f[k]]} threads)")
    for i, c in enumerate(want_list(r.get("combines", []), w + ".combines")):
        cw = f"{w}.combines[{i}]"
        fields(c, cw, ["chunks", "name"])
        want_int(c["chunks"], cw + ".chunks", 2, 2**31 - 1)
        want_str(c["name"], cw + ".name", entries)
    mx = want_int(r["max_split"], w + ".max_split", 1, 1 << 16)
    want_int(r["split"], w + ".split", 0, mx)
    want_int(r["sms"], w + ".sms", 0, 1 << 16)
    want_int(r["wide_min_tiles"], w + ".wide_min_tiles", 0, 2**31 - 1)
    want_int(r["small_num"], w + ".small_num", 0, 1 << 16)
    want_int(r["small_den"], w + ".small_den", 1, 1 << 16)


def load_manifest(path):
    """A manifest, checked (check_manifest); errors name the file and the field."""
    try:
        man = parse_json(read_file(path, MAX_MANIFEST_BYTES, follow=True), os.path.basename(path))
        check_manifest(man)
    except (ValueError, OSError) as e:
        raise ValueError(f"{path}: {e}") from None
    man["dir"] = os.path.dirname(os.path.abspath(path))
    return man


def read_ptx(man, target):
    """The PTX text of a target: the file the manifest names, in the manifest's folder."""
    name = plain_name(target["ptx"], "ptx")
    try:
        return read_file(os.path.join(man["dir"], name), MAX_PTX_BYTES)
    except (ValueError, OSError) as e:
        raise ValueError(f"{man['dir']}: {target['target']}'s PTX: {e}") from None


def target_number(t):
    """sm_90 -> 90, sm_120 -> 120, sm_90a -> 90."""
    digits = t[3:].rstrip("a")
    if not t.startswith("sm_") or not digits.isdigit() or len(t) - len(digits) > 4:
        raise ValueError(f"target {t!r}: want sm_NN")
    return int(digits)


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
        self.warps = d.get("warps", 0)
        self.warp_grid = list(d.get("warp_grid", [0, 0]))
        self.tile = d.get("tile", 0)
        self.stages = d.get("stages", 0)
        self.precision = d.get("precision", "")
        self.score_warps = d.get("score_warps", 0)
        self.producer_warps = d.get("producer_warps", 0)
        self.head_blocks = d.get("head_blocks", 0)
        self.tiles = d.get("tiles", 0)
        self.per_sm = d.get("ctas_per_sm", 0)
        self.direct = d.get("direct", "")
        self.partial = d.get("partial", "")
        self.direct_small = d.get("direct_small", "")
        self.partial_small = d.get("partial_small", "")

    def short(self):
        """The variant in a few characters, as kernels.MLAVariant.Short writes it: "h16 w4 1x4 t32 s1",
        "h64 w8 2x4 t64 s2 q4"."""
        s = f"h{self.head_block} w{self.warps} {self.warp_grid[0]}x{self.warp_grid[1]} t{self.tile} s{self.stages}"
        if self.producer_warps:
            s += f" p{self.producer_warps}"
        if self.score_warps:
            s += f" q{self.score_warps}"
        return s


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
    inner = f"{span} elements"
    for d in st["dims"]:
        s = value(d["stride"])
        n = d.get("count", 0)
        if d.get("count_param"):
            v, div = value(d["count_param"]), max(d.get("count_div", 1), 1)
            n = (v + div - 1) // div if v > 0 else 0
        if s < 0:
            raise LaunchError(f"{d['stride']} = {s}: want at least 0 (a negative stride of {p['name']} reads before its buffer)")
        if n > 1 and s < span:
            raise LaunchError(f"{d['stride']} = {s}: want at least {span} (each of the {n} steps of {p['name']} covers {inner}; "
                              "a smaller stride reads them over each other)")
        if n <= 0:
            empty = True
        if n > 1:
            span += (n - 1) * s
        inner = f"{span} elements ({d['stride']})"
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


FP8DS_NOPE, FP8DS_ROPE, FP8DS_TOKEN_BYTES = 448, 64, 584  # golden.FP8DSNope, FP8DSRope, the bytes per token


def page_bytes(m, page_size):
    """golden.MLAConfig.PageBytes: the least page stride holding page_size tokens."""
    if m["cache"] == "bf16":
        return page_size * (m["nope"] + m["rope"]) * 2
    return page_size * FP8DS_TOKEN_BYTES


def check_meta(m):
    """golden's vectorMeta.check and checkValidCounts: meta.json's fields, named as there."""
    if not isinstance(m, dict):
        raise ValueError(f"meta.json: want an object, have {_type_name(m)}")
    if m.get("kernel") != "mla_decode":
        raise ValueError(f"meta.json kernel = {m.get('kernel')!r}, want 'mla_decode'")
    for k in ("T", "H", "nope", "rope", "sm_scale", "sink", "cache", "segments"):
        if k not in m:
            raise ValueError(f"meta.json {k} is missing")
    want_int(m["T"], "meta.json T", 1)
    want_int(m["H"], "meta.json H", 1)
    want_int(m["nope"], "meta.json nope", 0)
    want_int(m["rope"], "meta.json rope", 0)
    if m["nope"] + m["rope"] < 1:
        raise ValueError(f"meta.json nope = {m['nope']}: want a width with nope+rope >= 1 (rope = {m['rope']})")
    want_str(m["cache"], "meta.json cache", ["fp8ds", "bf16"])
    if m["cache"] == "fp8ds" and (m["nope"], m["rope"]) != (FP8DS_NOPE, FP8DS_ROPE):
        raise ValueError(f"meta.json nope = {m['nope']}: want {FP8DS_NOPE} and rope {FP8DS_ROPE} with cache 'fp8ds' (rope = {m['rope']})")
    sc = m["sm_scale"]
    if isinstance(sc, bool) or not isinstance(sc, (int, float)) or not math.isfinite(sc) or sc < 0:
        raise ValueError(f"meta.json sm_scale = {sc!r}: want 0 (1/sqrt(nope+rope)) or a finite number > 0")
    want_bool(m["sink"], "meta.json sink")
    segs = want_list(m["segments"], "meta.json segments")
    if not 1 <= len(segs) <= 2:
        raise ValueError(f"meta.json segments = ({len(segs)} entries): want 1 or 2 entries")
    for i, g in enumerate(segs):
        w = f"meta.json segments[{i}]"
        if not isinstance(g, dict):
            raise ValueError(f"{w}: want an object, have {_type_name(g)}")
        for k in ("K", "page_size", "page_stride", "pages", "cache", "idx"):
            if k not in g:
                raise ValueError(f"{w}.{k} is missing")
        want_int(g["K"], w + ".K", 1)
        want_int(g["page_size"], w + ".page_size", 1, 2**31 - 1)
        want_int(g["page_stride"], w + ".page_stride", page_bytes(m, g["page_size"]))
        want_int(g["pages"], w + ".pages", 1, (2**31 - 1) // g["page_size"])
        for k in ("cache", "idx") + (("len",) if g.get("len") else ()):
            plain_name(g[k], f"{w}.{k}")
    counts = m.get("valid_candidates_per_row")
    if counts is None:
        raise ValueError(f"meta.json valid_candidates_per_row is missing: want T = {m['T']} counts (each row's valid candidates, a check on the reading of len and idx)")
    if not isinstance(counts, list) or len(counts) != m["T"]:
        have = f"{len(counts)} counts" if isinstance(counts, list) else _type_name(counts)
        raise ValueError(f"meta.json valid_candidates_per_row has {have}: want T = {m['T']}")
    k = sum(min(g["K"], 2**31 - 1) for g in segs)
    for i, n in enumerate(counts):
        want_int(n, f"meta.json valid_candidates_per_row[{i}]", 0, k)


def load_vectors(folder, limit=None):
    """A test-vector folder (shared/testvectors/README.md), read as golden.LoadVectors
    reads it: meta.json checked (check_meta), the arrays it names only regular files
    directly in the folder, each of exactly the size meta.json implies, all of them
    together at most limit bytes (half the machine's memory), refused before any is read."""
    try:
        m = parse_json(read_file(os.path.join(folder, "meta.json"), MAX_META_BYTES), "meta.json")
        check_meta(m)
        T, H, D = m["T"], m["H"], m["nope"] + m["rope"]
        arrays = [("q.bf16", "H", T * H * D), ("out_ref.f64", "d", T * H * D), ("lse_ref.f64", "d", T * H)]
        if m["sink"]:
            arrays.append(("sink.f32", "f", H))
        for g in m["segments"]:
            arrays += [(g["cache"], "B", g["pages"] * g["page_stride"]), (g["idx"], "i", T * g["K"])]
            if g.get("len"):
                arrays.append((g["len"], "i", T))
        seen, total = set(), 0
        limit = host_memory_limit() if limit is None else limit
        for name, code, n in arrays:
            if name in seen:
                raise ValueError(f"meta.json names {name} for two arrays")
            seen.add(name)
            total += n * ARRAY_BYTES[code]
        if total > limit:
            raise ValueError(f"its arrays need {total} bytes of memory, more than {limit} (the limit)")
        data = {name: read_array(os.path.join(folder, name), code, n) for name, code, n in arrays}
    except (ValueError, OSError) as e:
        raise ValueError(f"load vectors {folder}: {e}") from None
    v = {"meta": m, "name": os.path.basename(os.path.normpath(folder)), "T": T, "H": H, "D": D,
         "q": data["q.bf16"], "out_ref": data["out_ref.f64"], "lse_ref": data["lse_ref.f64"], "segments": []}
    if m["sink"]:
        v["sink"] = data["sink.f32"]
    for g in m["segments"]:
        seg = {"meta": g, "cache": bytes(data[g["cache"]]), "idx": data[g["idx"]]}
        if g.get("len"):
            seg["len"] = data[g["len"]]
        v["segments"].append(seg)
    return v


ARRAY_BYTES = {"B": 1, "H": 2, "i": 4, "f": 4, "d": 8}


def read_array(path, code, count):
    """count little-endian elements of array code from a file of exactly that size."""
    import array
    a = array.array(code)
    a.frombytes(read_file(path, count * ARRAY_BYTES[code], want=count * ARRAY_BYTES[code]))
    if sys.byteorder != "little":
        a.byteswap()
    return a


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
        self.module = check(driver.cuModuleLoadData(read_ptx(self.man, self.target) + b"\0"))
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
        variants = [Family(f).short() for f in rule.get("families") or []]
        print(f"{name}: T={v['T']} H={v['H']}, {prog.target['target']} PTX loaded once on {prog.sms} SMs{fixed}, capacity {cap}, "
              f"kernels {[k['entry'] for k in prog.target['kernels']]}, families {variants}, workspace {prog.workspace_bytes} bytes "
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
            json.dump({k: v for k, v in dict(man, version=1).items() if k != "dir"}, f)
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
    fams = [Family(f) for f in (t90.get("plan") or {}).get("families") or []]
    expect(fams and all(f.warps >= 1 and f.stages >= 1 and f.precision for f in fams),
           f"{t90['target']}: the families' variants: {', '.join(f.short() for f in fams)}")
    q4 = Family({"head_block": 64, "warps": 8, "warp_grid": [2, 4], "tile": 64, "stages": 2, "score_warps": 4})
    expect(q4.short() == "h64 w8 2x4 t64 s2 q4", f"a family with a score role reads as {q4.short()} (kernels.MLAVariant.Short: h64 w8 2x4 t64 s2 q4)")
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
            raises(lambda: plan_call(man, t90, rows, dict(args, q_stride_t=-qst), ws, sms), f"q_stride_t = {-qst}: want at least 0", "a negative q_stride_t is refused")
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

    refusals(manifest_path, man, [f for f in folders if os.path.basename(os.path.normpath(f)) == matching][:1], expect, raises)

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


def refusals(manifest_path, man, folders, expect, raises):
    """What the Go loaders refuse, refused here too (issue 22): files that are not regular
    files in the folder, meta.json and manifest fields missing, mistyped or out of range,
    each with one clear error, quickly, and without reading what they name."""
    import shutil
    import time
    with tempfile.TemporaryDirectory() as d:
        # Test-vector folders.
        for src in folders:
            def folder(name, edit=None, special=None):
                dst = os.path.join(d, name)
                shutil.copytree(src, dst)
                if edit:
                    with open(os.path.join(dst, "meta.json")) as f:
                        m = json.load(f)
                    edit(m)
                    with open(os.path.join(dst, "meta.json"), "w") as f:
                        json.dump(m, f)
                if special:
                    special(dst)
                return dst

            def fifo(file):
                def make(dst):
                    os.remove(os.path.join(dst, file))
                    os.mkfifo(os.path.join(dst, file))
                return make

            def link(file, to):
                def make(dst):
                    os.remove(os.path.join(dst, file))
                    os.symlink(to, os.path.join(dst, file))
                return make

            def seg0(key, val):
                def edit(m):
                    m["segments"][0][key] = val
                return edit

            for name, dst, want in [
                ("a FIFO for q.bf16", folder("fifo", special=fifo("q.bf16")), "q.bf16 is not a regular file"),
                ("a FIFO for meta.json", folder("fifo_meta", special=fifo("meta.json")), "meta.json is not a regular file"),
                ("q.bf16 a link to /dev/zero", folder("zero", special=link("q.bf16", "/dev/zero")), "q.bf16 is a symbolic link"),
                ("an idx file named ../idx0.i32", folder("escape", seg0("idx", "../idx0.i32")), "want a file name in the folder"),
                ("a cache named /etc/passwd", folder("abs", seg0("cache", "/etc/passwd")), "want a file name in the folder"),
                ("no valid_candidates_per_row", folder("nocounts", lambda m: m.pop("valid_candidates_per_row")), "valid_candidates_per_row is missing"),
                ("one count too many", folder("counts", lambda m: m["valid_candidates_per_row"].append(0)), "valid_candidates_per_row has"),
                ("T as a string", folder("tstr", lambda m: m.update(T=str(m["T"]))), "meta.json T"),
                ("no H", folder("noh", lambda m: m.pop("H")), "meta.json H is missing"),
                ("a page stride below the page", folder("stride", seg0("page_stride", 1)), "meta.json segments[0].page_stride"),
            ]:
                start = time.monotonic()
                raises(lambda: load_vectors(dst), want, f"vectors: {name} is refused")
                expect(time.monotonic() - start < 5, f"vectors: {name}: refused at once")
            raises(lambda: load_vectors(src, limit=1), "more than 1 (the limit)", "vectors: a folder past the memory limit is refused before reading")

        # Manifests: the real one, edited, beside a copy of its PTX.
        clean = {k: v for k, v in man.items() if k != "dir"}
        for t in man["targets"]:
            shutil.copy(os.path.join(man["dir"], t["ptx"]), os.path.join(d, t["ptx"]))

        def manifest(name, edit=None, text=None):
            path = os.path.join(d, name + ".json")
            m = json.loads(json.dumps(clean))
            if edit:
                edit(m)
            with open(path, "w") as f:
                f.write(text if text is not None else json.dumps(m))
            return path

        def k0(m):
            return m["targets"][0]["kernels"][0]

        plan_target = next(i for i, t in enumerate(clean["targets"]) if t.get("plan"))

        def fam(key, val):
            def edit(m):
                m["targets"][plan_target]["plan"]["families"][0][key] = val
            return edit

        def strided(m):
            return next(p for p in k0(m)["params"] if p.get("strides"))

        fifo_path = os.path.join(d, "fifo.json")
        os.mkfifo(fifo_path)
        for name, path, want in [
            ("a missing block", manifest("noblock", lambda m: k0(m).pop("block")), "targets[0].kernels[0]: missing block"),
            ("an align of '16'", manifest("align", lambda m: k0(m)["params"][1].update(align="16")), "params[1].align: '16': want an integer"),
            ("a capacity of 10^9", manifest("cap", lambda m: m.update(capacity=10**9)), "capacity: 1000000000: want an integer in 0..65535"),
            ("a family of 0 head blocks", manifest("hb", fam("head_blocks", 0)), "head_blocks: 0: want an integer in 1.."),
            ("a family without warps (version 3)", manifest("nowarps", lambda m: m["targets"][plan_target]["plan"]["families"][0].pop("warps")), "families[0]: missing warps"),
            ("a warp grid of three", manifest("grid3", fam("warp_grid", [1, 2, 2])), "warp_grid: a list: want a list of 2"),
            ("a warp grid past the warps", manifest("grid8", fam("warp_grid", [4, 4])), "warp_grid: [4, 4]: want at most"),
            ("a family of 64 warps", manifest("w64", fam("warps", 64)), "warps: 64: want an integer in 1..32"),
            ("warps its kernels do not launch", manifest("w8", lambda m: m["targets"][plan_target]["plan"]["families"][0].update(warps=8, warp_grid=[2, 4])), "the warps its kernel"),
            ("stages 0", manifest("stages", fam("stages", 0)), "stages: 0: want an integer in 1.."),
            ("a score role past the warps", manifest("score", fam("score_warps", 40)), "score_warps: 40: want an integer in 0.."),
            ("roles of more warps than the CTA", manifest("roles", lambda m: m["targets"][plan_target]["plan"]["families"][0].update(score_warps=m["targets"][plan_target]["plan"]["families"][0]["warps"], producer_warps=1)), "producer_warps 1: want at most"),
            ("a PTX file ../x.ptx", manifest("up", lambda m: m["targets"][0].update(ptx="../x.ptx")), "want a file name in the folder"),
            ("a PTX file /etc/passwd", manifest("abs", lambda m: m["targets"][0].update(ptx="/etc/passwd")), "want a file name in the folder"),
            ("a grid bound to 'tokens'", manifest("grid", lambda m: k0(m)["grid"][1].update(param="tokens")), "grid[1].param: 'tokens': want one of"),
            ("an unknown field", manifest("unknown", lambda m: k0(m).update(cluster=[2, 1, 1])), "unknown field 'cluster'"),
            ("a stride counted by an unknown parameter", manifest("count", lambda m: strided(m)["strides"]["dims"][-1].update(count_param="tokens")), "count_param: 'tokens'"),
            ("a negative run", manifest("run", lambda m: strided(m)["strides"].update(run=-1)), "strides.run: -1"),
            ("text that is not JSON", manifest("text", text="{\"format\": "), "not JSON"),
            ("a list", manifest("list", text="[]"), "want 'ptxgen-launch-manifest'"),
            ("a FIFO", fifo_path, "fifo.json is not a regular file"),
        ]:
            start = time.monotonic()
            raises(lambda: load_manifest(path), want, f"manifest: {name} is refused")
            expect(time.monotonic() - start < 5, f"manifest: {name}: refused at once")
        good = load_manifest(manifest("good"))
        expect(read_ptx(good, good["targets"][0]).startswith(b"//"), "the manifest's PTX is read from its folder")
        os.remove(os.path.join(d, good["targets"][0]["ptx"]))
        os.symlink("/dev/zero", os.path.join(d, good["targets"][0]["ptx"]))
        raises(lambda: read_ptx(good, good["targets"][0]), "is a symbolic link", "a PTX file that is a link to /dev/zero is refused")


def main(argv):
    """Runs a command; a bad manifest, folder or argument is one line on stderr and exit
    status 2, never a traceback."""
    try:
        return run_command(argv)
    except (ValueError, LaunchError, OSError) as e:
        print(f"mla_decode.py: {e}", file=sys.stderr)
        return 2


def run_command(argv):
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
