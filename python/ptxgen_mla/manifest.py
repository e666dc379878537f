"""The launch manifest `ptxgen gen -manifest` writes (gogen/manifest.go, version 5).

Every field the host uses is checked for presence, type and range, unknown fields are
refused (as Go's ParseManifest refuses them), and every bound keeps later arithmetic
small: a bad manifest is one PtxgenMLAError naming the file and the field, never a
traceback, an endless loop or a file outside the manifest's folder.
"""

import os
import shlex

from . import _files
from .errors import PtxgenMLAError
from .plan import MAX_ROWS, MAX_SMS, Rule
from .targets import parse_id

FORMAT = "ptxgen-launch-manifest"
VERSION = 5
SHARED_OPT_IN = 48 << 10

MAX_MANIFEST_BYTES = 16 << 20  # a 64-row decode's manifest is about 200 KB
MAX_PTX_BYTES = 256 << 20      # one target's PTX (the largest generated is a few MB)
MAX_FAMILIES = 4              # CTA shapes a plan chooses among (the decode generates up to 3)

# Parameter kinds: their size in the argument buffer, and the range of the integers.
KIND_SIZE = {"ptr": 8, "i32": 4, "u32": 4, "i64": 8, "u64": 8, "f32": 4, "f64": 8}
INT_RANGE = {"i32": (-2**31, 2**31 - 1), "u32": (0, 2**32 - 1), "i64": (-2**63, 2**63 - 1), "u64": (0, 2**64 - 1)}
ELEM_BYTES = {"u8": 1, "e4m3": 1, "bf16": 2, "f16": 2, "i32": 4, "u32": 4, "f32": 4, "i64": 8, "u64": 8, "f64": 8}


def _type_name(v):
    return "null" if v is None else {bool: "a boolean", int: "an integer", float: "a number", str: "a string",
                                     list: "a list", dict: "an object"}.get(type(v), type(v).__name__)


def _fields(d, path, required, optional=()):
    if not isinstance(d, dict):
        raise PtxgenMLAError(f"{path}: want an object, have {_type_name(d)}")
    missing = [k for k in required if k not in d]
    if missing:
        raise PtxgenMLAError(f"{path}: missing {', '.join(missing)}")
    unknown = sorted(k for k in d if k not in required and k not in optional)
    if unknown:
        raise PtxgenMLAError(f"{path}: unknown field {unknown[0]!r} (this host reads manifest version {VERSION})")
    return d


def _int(v, path, lo, hi):
    if type(v) is not int or not lo <= v <= hi:
        raise PtxgenMLAError(f"{path}: {v!r}: want an integer in {lo}..{hi}")
    return v


def _str(v, path, choices=None):
    if not isinstance(v, str) or (choices is not None and v not in choices):
        want = "a string" if choices is None else "one of " + ", ".join(repr(c) for c in choices)
        raise PtxgenMLAError(f"{path}: {v!r}: want {want}")
    return v


def _bool(v, path):
    if not isinstance(v, bool):
        raise PtxgenMLAError(f"{path}: {v!r}: want true or false")
    return v


def _list(v, path, n=None):
    if not isinstance(v, list) or (n is not None and len(v) != n):
        raise PtxgenMLAError(f"{path}: {_type_name(v)}: want a list{'' if n is None else f' of {n}'}")
    return v


BIG = 2**40  # sizes, strides and runs: far past any GPU's memory, far below int64


def check_manifest(man):
    """Refuse a manifest (parsed JSON) whose fields are missing, unknown, mistyped or out
    of range. Returns it."""
    if not isinstance(man, dict) or man.get("format") != FORMAT or man.get("version") != VERSION:
        got = (man.get("format"), man.get("version")) if isinstance(man, dict) else (_type_name(man), None)
        raise PtxgenMLAError(f"manifest {got[0]!r} version {got[1]!r}, want {FORMAT!r} version {VERSION}")
    _fields(man, "manifest", ["format", "version", "generator", "command", "program", "capacity", "arguments", "targets"],
            ["rows_argument"])
    for k in ("generator", "command", "program"):
        _str(man[k], k)
    cap = _int(man["capacity"], "capacity", 0, MAX_ROWS)
    names = []
    for i, a in enumerate(_list(man["arguments"], "arguments")):
        w = f"arguments[{i}]"
        _fields(a, w, ["name", "kind"], ["elem"])
        _str(a["name"], w + ".name")
        _str(a["kind"], w + ".kind", list(KIND_SIZE))
        if (a["kind"] == "ptr") != ("elem" in a):
            raise PtxgenMLAError(f"{w}: a pointer has an elem and a scalar none")
        if "elem" in a:
            _str(a["elem"], w + ".elem", list(ELEM_BYTES))
        if a["name"] in names:
            raise PtxgenMLAError(f"{w}.name: {a['name']!r} twice")
        names.append(a["name"])
    rows_arg = man.get("rows_argument", "")
    if rows_arg:
        _str(rows_arg, "rows_argument", [a["name"] for a in man["arguments"] if a["kind"] == "i32"])
    if (cap > 0) != bool(rows_arg):
        raise PtxgenMLAError(f"capacity {cap} with rows_argument {rows_arg!r}: want both or neither")
    if not _list(man["targets"], "targets"):
        raise PtxgenMLAError("targets: want at least one")
    seen = set()
    for i, t in enumerate(man["targets"]):
        _check_target(t, f"targets[{i}]", names, rows_arg, cap)
        if t["target"] in seen:
            raise PtxgenMLAError(f"targets[{i}].target: {t['target']!r} twice")
        seen.add(t["target"])
    return man


def _check_target(t, w, names, rows_arg, cap):
    _fields(t, w, ["target", "ptx", "workspace", "kernels", "plan"], ["plan_examples"])
    try:
        parse_id(_str(t["target"], w + ".target"))
    except PtxgenMLAError as e:
        raise PtxgenMLAError(f"{w}.target: {e}") from None
    _files.plain_name(_str(t["ptx"], w + ".ptx"), w + ".ptx")
    if not t["ptx"].endswith(".ptx"):
        raise PtxgenMLAError(f"{w}.ptx {t['ptx']!r}: want a .ptx file name")
    ws = []
    for i, b in enumerate(_list(t["workspace"], w + ".workspace")):
        bw = f"{w}.workspace[{i}]"
        _fields(b, bw, ["name", "bytes", "per_part"])
        ws.append(_str(b["name"], bw + ".name"))
        _int(b["bytes"], bw + ".bytes", 0, BIG)
        _int(b["per_part"], bw + ".per_part", 0, BIG)
    entries = [_check_kernel(k, f"{w}.kernels[{i}]", names, ws, rows_arg, cap)
               for i, k in enumerate(_list(t["kernels"], w + ".kernels"))]
    if not entries:
        raise PtxgenMLAError(f"{w}.kernels: want at least one")
    if len(set(entries)) != len(entries):
        raise PtxgenMLAError(f"{w}.kernels: an entry named twice")
    if t["plan"] is not None:
        _check_plan(t["plan"], w + ".plan", {k["entry"]: k["block"][0] for k in t["kernels"]})
    for i, ex in enumerate(_list(t.get("plan_examples", []), w + ".plan_examples")):
        ew = f"{w}.plan_examples[{i}]"
        _fields(ex, ew, ["rows", "sms", "split", "kernels", "max_parts"])
        # Bounded like a call: rows up to the capacity, a device's SM count, so that
        # replaying an example (MaxParts walks the rows) stays quick.
        _int(ex["rows"], ew + ".rows", 0, cap)
        _int(ex["sms"], ew + ".sms", 1, MAX_SMS)
        _int(ex["split"], ew + ".split", 1, 1 << 16)
        _int(ex["max_parts"], ew + ".max_parts", 0, 2**31 - 1)
        for j, e in enumerate(_list(ex["kernels"], ew + ".kernels")):
            _str(e, f"{ew}.kernels[{j}]", entries)


def _check_kernel(k, w, names, ws, rows_arg, cap):
    _fields(k, w, ["entry", "grid", "block", "dynamic_shared_bytes", "shared_opt_in", "programmatic", "params"])
    _str(k["entry"], w + ".entry")
    for d, g in enumerate(_list(k["grid"], w + ".grid", 3)):
        gw = f"{w}.grid[{d}]"
        _fields(g, gw, ["value"], ["param"])
        _int(g["value"], gw + ".value", 1, 2**31 - 1 if d == 0 else 65535)
        if "param" in g:
            _str(g["param"], gw + ".param", [p for p in (rows_arg, "split") if p])
            if g["param"] == rows_arg and g["value"] != cap:
                raise PtxgenMLAError(f"{gw}: bound to the rows with {g['value']} at most, want the capacity {cap}")
    block = _list(k["block"], w + ".block", 3)
    _int(block[0], w + ".block[0]", 1, 1024)
    _int(block[1], w + ".block[1]", 1, 1)
    _int(block[2], w + ".block[2]", 1, 1)
    _int(k["dynamic_shared_bytes"], w + ".dynamic_shared_bytes", 0, 256 << 10)
    if _bool(k["shared_opt_in"], w + ".shared_opt_in") != (k["dynamic_shared_bytes"] > SHARED_OPT_IN):
        raise PtxgenMLAError(f"{w}.shared_opt_in: {k['shared_opt_in']} with {k['dynamic_shared_bytes']} bytes, "
                             f"want true exactly above {SHARED_OPT_IN}")
    _bool(k["programmatic"], w + ".programmatic")
    kinds = {}
    for i, p in enumerate(_list(k["params"], w + ".params")):
        pw = f"{w}.params[{i}]"
        _fields(p, pw, ["name", "kind", "size", "align", "min_bytes", "written", "arg"],
                ["elem", "strides", "workspace", "plan"])
        name = _str(p["name"], pw + ".name")
        if name in kinds:
            raise PtxgenMLAError(f"{pw}.name: {name!r} twice")
        kinds[name] = _str(p["kind"], pw + ".kind", list(KIND_SIZE))
        if p["size"] != KIND_SIZE[p["kind"]]:
            raise PtxgenMLAError(f"{pw}.size: {p['size']!r}, want {KIND_SIZE[p['kind']]} for kind {p['kind']}")
        _int(p["align"], pw + ".align", 0, 4096)
        if "elem" in p:
            _str(p["elem"], pw + ".elem", list(ELEM_BYTES))
        m = _fields(p["min_bytes"], pw + ".min_bytes", ["per_row", "per_part", "fixed"])
        for f in ("per_row", "per_part", "fixed"):
            _int(m[f], f"{pw}.min_bytes.{f}", 0, BIG)
        _bool(p["written"], pw + ".written")
        arg = _int(p["arg"], pw + ".arg", -1, len(names) - 1)
        if arg < 0:
            if "workspace" in p:
                _str(p["workspace"], pw + ".workspace", ws)
            elif "plan" in p:
                _str(p["plan"], pw + ".plan", ["split"])
            else:
                raise PtxgenMLAError(f"{pw}: bound to no argument (arg -1), no workspace buffer and not the plan's split")
        elif "workspace" in p or "plan" in p:
            raise PtxgenMLAError(f"{pw}: bound to argument {arg} and to a workspace buffer or the plan")
    for i, p in enumerate(k["params"]):
        if "strides" not in p:
            continue
        sw = f"{w}.params[{i}].strides"
        st = _fields(p["strides"], sw, ["run", "dims"])
        _int(st["run"], sw + ".run", 1, BIG)
        if p["kind"] != "ptr" or not _list(st["dims"], sw + ".dims"):
            raise PtxgenMLAError(f"{sw}: want a pointer with at least one strided dimension")
        for j, d in enumerate(st["dims"]):
            dw = f"{sw}.dims[{j}]"
            _fields(d, dw, ["stride"], ["count", "count_param", "count_div"])
            _str(d["stride"], dw + ".stride", [n for n, kind in kinds.items() if kind in INT_RANGE])
            if "count_param" in d:
                _str(d["count_param"], dw + ".count_param", [n for n, kind in kinds.items() if kind == "i32"])
                _int(d.get("count_div"), dw + ".count_div", 1, 2**31 - 1)
                if "count" in d:
                    raise PtxgenMLAError(f"{dw}: a count and a count_param")
            else:
                _int(d.get("count"), dw + ".count", 1, BIG)
    return k["entry"]


def _check_plan(r, w, threads):
    """threads: the block size of each kernel entry, checked already."""
    _fields(r, w, ["families", "split", "max_split", "sms", "wide_min_tiles", "small_num", "small_den"], ["combines", "small_max_tiles"])
    names = list(threads) + [""]
    if not _list(r["families"], w + ".families") or len(r["families"]) > MAX_FAMILIES:
        raise PtxgenMLAError(f"{w}.families: want 1..{MAX_FAMILIES} families, got {len(r['families'])}")
    for i, f in enumerate(r["families"]):
        fw = f"{w}.families[{i}]"
        _fields(f, fw, ["head_block", "warps", "warp_grid", "tile", "stages", "precision", "head_blocks", "tiles",
                        "ctas_per_sm", "direct", "partial", "direct_small", "partial_small"],
                ["score_warps", "producer_warps", "min_rows"])
        for k in ("head_block", "tile", "stages", "head_blocks", "ctas_per_sm"):
            _int(f[k], f"{fw}.{k}", 1, MAX_SMS)
        _int(f["tiles"], f"{fw}.tiles", 1, 2**31 - 1)
        _int(f.get("min_rows", 0), f"{fw}.min_rows", 0, 1 << 16)
        warps = _int(f["warps"], fw + ".warps", 1, 32)
        grid = [_int(g, f"{fw}.warp_grid[{j}]", 1, 32) for j, g in enumerate(_list(f["warp_grid"], fw + ".warp_grid", 2))]
        if grid[0] * grid[1] > warps:
            raise PtxgenMLAError(f"{fw}.warp_grid: {grid}: want at most {warps} warps in all (warps = {warps})")
        roles = [_int(f.get(k, 0), f"{fw}.{k}", 0, warps) for k in ("score_warps", "producer_warps")]
        if sum(roles) > warps:
            raise PtxgenMLAError(f"{fw}: score_warps {roles[0]} and producer_warps {roles[1]}: want at most {warps} warps in all")
        _str(f["precision"], fw + ".precision")
        for k in ("direct", "partial", "direct_small", "partial_small"):
            if _str(f[k], f"{fw}.{k}", names) and threads[f[k]] != 32 * warps:
                raise PtxgenMLAError(f"{fw}.warps: {warps}: want {threads[f[k]] // 32}, the warps its kernel {f[k]} "
                                     f"launches ({threads[f[k]]} threads)")
    for i, c in enumerate(_list(r.get("combines", []), w + ".combines")):
        cw = f"{w}.combines[{i}]"
        _fields(c, cw, ["chunks", "name"])
        _int(c["chunks"], cw + ".chunks", 2, 1 << 16)
        _str(c["name"], cw + ".name", list(threads))
    mx = _int(r["max_split"], w + ".max_split", 1, 1 << 16)
    _int(r["split"], w + ".split", 0, mx)
    _int(r["sms"], w + ".sms", 0, MAX_SMS)
    _int(r["wide_min_tiles"], w + ".wide_min_tiles", 0, 2**31 - 1)
    _int(r["small_num"], w + ".small_num", 0, 1 << 16)
    _int(r["small_den"], w + ".small_den", 1, 1 << 16)
    _int(r.get("small_max_tiles", 0), w + ".small_max_tiles", 0, 2**31 - 1)


def command_flags(command):
    """The flags of a manifest's recorded gen command, {"heads": "64", "sink": "true", ...}.

    Go writes every configuration flag as `-name value` or `-name=value` (booleans)."""
    if not isinstance(command, str):
        raise PtxgenMLAError(f"command {command!r}: want a string")
    try:
        words = shlex.split(command)
    except ValueError as e:
        raise PtxgenMLAError(f"command {command!r}: {e}") from None
    if words[:2] != ["ptxgen", "gen"]:
        raise PtxgenMLAError(f"command {command!r}: want a `ptxgen gen` command line")
    out, i = {}, 2
    while i < len(words):
        w = words[i]
        if not w.startswith("-") or w == "-":
            raise PtxgenMLAError(f"command {command!r}: {w!r} is not a flag")
        if "=" in w:
            k, v = w[1:].split("=", 1)
            i += 1
        elif i + 1 < len(words):
            k, v = w[1:], words[i + 1]
            i += 2
        else:
            raise PtxgenMLAError(f"command {command!r}: flag {w} has no value")
        out[k.lstrip("-")] = v
    return out


class Manifest:
    """A checked manifest: its folder, capacity, arguments, targets and gen flags."""

    def __init__(self, data, path):
        self.data = data
        self.path = path
        self.dir = os.path.dirname(os.path.abspath(path))
        self.capacity = data["capacity"]
        self.rows_argument = data.get("rows_argument", "")
        self.arguments = [a["name"] for a in data["arguments"]]
        self.targets = {t["target"]: t for t in data["targets"]}
        self.flags = command_flags(data["command"])

    def rule(self, target):
        plan = self.targets[target]["plan"]
        return Rule(plan) if plan is not None else None

    def ptx(self, target):
        """The PTX text of target: its file in the manifest's folder, or that name + .xz."""
        name = _files.plain_name(self.targets[target]["ptx"], "ptx")
        path = os.path.join(self.dir, name)
        if not os.path.lexists(path) and os.path.lexists(path + ".xz"):
            path += ".xz"
        try:
            return _files.read_text_maybe_xz(path, MAX_PTX_BYTES)
        except PtxgenMLAError as e:
            raise PtxgenMLAError(f"{self.dir}: {target}'s PTX: {e}") from None


def load_manifest(path, follow=True):
    """The manifest at path, checked; errors name the file and the field."""
    if not isinstance(path, (str, os.PathLike)):
        raise PtxgenMLAError(f"manifest path {path!r}: want a path")
    path = os.fspath(path)
    try:
        data = _files.parse_json(_files.read_text_maybe_xz(path, MAX_MANIFEST_BYTES) if path.endswith(".xz")
                                 else _files.read_file(path, MAX_MANIFEST_BYTES, follow=follow),
                                 os.path.basename(path))
        check_manifest(data)
        return Manifest(data, path[:-3] if path.endswith(".xz") else path)
    except PtxgenMLAError as e:
        raise PtxgenMLAError(f"{path}: {e}") from None
