"""Test-vector folders (shared/testvectors/README.md), read with the standard library.

meta.json is checked as golden.LoadVectors checks it, and each array it names must be a
regular file directly in the folder of exactly the size meta.json implies, all of them
together under a memory limit, refused before anything is read. Also: the spec's
comparison (golden.Compare) on plain lists, and the FlashMLA-convention arguments of a
folder (the call gpu_test makes).
"""

import math
import os

from . import _files
from .catalog import NOPE, ROPE, TOKEN_BYTES
from .errors import PtxgenMLAError

MAX_META_BYTES = 1 << 20
# The spec's section 6 thresholds (golden.MLAOutTolerance, MLALSETolerance) and bf16p's
# (golden.MLAOutToleranceBF16P): abs, rel, cosine distance, relative L2 (None: not checked).
OUT_TOL = dict(abs=1e-3, rel=2.01 / 128, cos=5e-6, rel_l2=None)
OUT_TOL_BF16P = dict(abs=2e-2, rel=2.01 / 128, cos=5e-6, rel_l2=3e-3)
LSE_TOL = dict(abs=1e-6, rel=8.0 / 65536, cos=None, rel_l2=None)


def _int(v, what, lo, hi=2**62):
    if type(v) is not int or not lo <= v <= hi:
        raise PtxgenMLAError(f"meta.json {what} = {v!r}: want an integer in {lo}..{hi}")
    return v


def check_meta(m):
    """The fields of a folder's meta.json, named as golden's vectorMeta.check names them."""
    if not isinstance(m, dict):
        raise PtxgenMLAError("meta.json: want an object")
    if m.get("kernel") != "mla_decode":
        raise PtxgenMLAError(f"meta.json kernel = {m.get('kernel')!r}, want 'mla_decode'")
    for k in ("T", "H", "nope", "rope", "sm_scale", "sink", "cache", "segments"):
        if k not in m:
            raise PtxgenMLAError(f"meta.json {k} is missing")
    _int(m["T"], "T", 1, 65535)
    _int(m["H"], "H", 1, 1024)
    _int(m["nope"], "nope", 0, 1 << 16)
    _int(m["rope"], "rope", 0, 1 << 16)
    if m["cache"] not in ("fp8ds", "bf16"):
        raise PtxgenMLAError(f"meta.json cache = {m['cache']!r}: want 'fp8ds' or 'bf16'")
    if m["cache"] == "fp8ds" and (m["nope"], m["rope"]) != (NOPE, ROPE):
        raise PtxgenMLAError(f"meta.json nope, rope = {m['nope']}, {m['rope']}: want {NOPE}, {ROPE} with cache 'fp8ds'")
    sc = m["sm_scale"]
    if isinstance(sc, bool) or not isinstance(sc, (int, float)) or not math.isfinite(sc) or sc < 0 or sc > 3.4e38:
        raise PtxgenMLAError(f"meta.json sm_scale = {sc!r}: want 0 (1/sqrt(nope+rope)) or a finite positive number")
    if not isinstance(m["sink"], bool):
        raise PtxgenMLAError(f"meta.json sink = {m['sink']!r}: want true or false")
    segs = m["segments"]
    if not isinstance(segs, list) or not 1 <= len(segs) <= 2:
        raise PtxgenMLAError("meta.json segments: want a list of 1 or 2 segments")
    token = TOKEN_BYTES if m["cache"] == "fp8ds" else 2 * (m["nope"] + m["rope"])
    for i, g in enumerate(segs):
        w = f"segments[{i}]"
        if not isinstance(g, dict):
            raise PtxgenMLAError(f"meta.json {w}: want an object")
        for k in ("K", "page_size", "page_stride", "pages", "cache", "idx"):
            if k not in g:
                raise PtxgenMLAError(f"meta.json {w}.{k} is missing")
        _int(g["K"], w + ".K", 1, 1 << 20)
        _int(g["page_size"], w + ".page_size", 1, 1 << 16)
        _int(g["page_stride"], w + ".page_stride", g["page_size"] * token, 2**40)
        _int(g["pages"], w + ".pages", 1, (2**31 - 1) // g["page_size"])
        for k in ("cache", "idx") + (("len",) if g.get("len") else ()):
            _files.plain_name(g[k], f"meta.json {w}.{k}")
    counts = m.get("valid_candidates_per_row")
    if not isinstance(counts, list) or len(counts) != m["T"]:
        raise PtxgenMLAError(f"meta.json valid_candidates_per_row: want T = {m['T']} counts")
    for i, n in enumerate(counts):
        _int(n, f"valid_candidates_per_row[{i}]", 0, sum(g["K"] for g in segs))
    return m


def host_memory_limit():
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") // 2
    except (ValueError, OSError, AttributeError):
        return 8 << 30


def load_folder(folder, limit=None):
    """{"meta", "name", "T", "H", "D", "files": {file name: bytes}} of a test-vector folder."""
    if not isinstance(folder, (str, os.PathLike)):
        raise PtxgenMLAError(f"test vectors {folder!r}: want a path")
    folder = os.fspath(folder)
    if limit is not None and (type(limit) is not int or limit < 0):
        raise PtxgenMLAError(f"limit {limit!r}: want a non-negative integer")
    try:
        m = check_meta(_files.parse_json(_files.read_file(os.path.join(folder, "meta.json"), MAX_META_BYTES), "meta.json"))
        T, H, D = m["T"], m["H"], m["nope"] + m["rope"]
        arrays = [("q.bf16", T * H * D * 2), ("out_ref.f64", T * H * D * 8), ("lse_ref.f64", T * H * 8)]
        if m["sink"]:
            arrays.append(("sink.f32", H * 4))
        for g in m["segments"]:
            arrays += [(g["cache"], g["pages"] * g["page_stride"]), (g["idx"], T * g["K"] * 4)]
            if g.get("len"):
                arrays.append((g["len"], T * 4))
        names = [n for n, _ in arrays]
        if len(set(names)) != len(names):
            raise PtxgenMLAError("meta.json names one file for two arrays")
        total = sum(n for _, n in arrays)
        limit = host_memory_limit() if limit is None else limit
        if total > limit:
            raise PtxgenMLAError(f"its arrays need {total} bytes, more than {limit} (the limit)")
        files = {n: _files.read_file(os.path.join(folder, n), size, want=size) for n, size in arrays}
    except PtxgenMLAError as e:
        raise PtxgenMLAError(f"test vectors {folder}: {e}") from None
    return {"meta": m, "name": os.path.basename(os.path.normpath(folder)), "T": T, "H": H, "D": D, "files": files}


def folders_under(path):
    """path itself when it holds meta.json, else its subfolders that do, sorted."""
    if not isinstance(path, (str, os.PathLike)):
        raise PtxgenMLAError(f"test vectors {path!r}: want a path")
    path = os.fspath(path)
    if os.path.isfile(os.path.join(path, "meta.json")):
        return [path]
    if not os.path.isdir(path):
        raise PtxgenMLAError(f"test vectors {path}: not a folder")
    out = sorted(os.path.join(path, d) for d in os.listdir(path) if os.path.isfile(os.path.join(path, d, "meta.json")))
    if not out:
        raise PtxgenMLAError(f"test vectors {path}: no meta.json in it nor in its subfolders")
    return out


def compare(got, want, tol):
    """golden.Compare on sequences of floats: (ok, report dict)."""
    if not isinstance(tol, dict) or any(k not in tol for k in ("abs", "rel", "cos", "rel_l2")):
        raise PtxgenMLAError(f"tol {tol!r}: want a dict of abs, rel, cos and rel_l2 (vectors.OUT_TOL)")
    try:
        got, want = [float(x) for x in got], [float(x) for x in want]
    except (TypeError, ValueError) as e:
        raise PtxgenMLAError(f"compare: want sequences of numbers ({e})") from None
    if len(got) != len(want):
        return False, {"problem": f"{len(got)} elements, want {len(want)}"}
    bad = nan = 0
    dot = gg = ww = dd = max_abs = 0.0
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
            dot, gg, ww, dd = dot + g * w, gg + g * g, ww + w * w, dd + (g - w) ** 2
    if gg == 0 and ww == 0:
        cos = 0.0
    elif gg == 0 or ww == 0:
        cos = 1.0
    else:
        cos = max(0.0, 1 - dot / (math.sqrt(gg) * math.sqrt(ww)))
    rel_l2 = 0.0 if dd == 0 else (math.inf if ww == 0 else math.sqrt(dd / ww))
    ok = (bad == 0 and (tol["cos"] is None or cos <= tol["cos"])
          and (tol["rel_l2"] is None or rel_l2 <= tol["rel_l2"]))
    return ok, {"n": len(want), "bad": bad, "nan": nan, "max_abs": max_abs, "cos": cos, "rel_l2": rel_l2}


def call_layout(v):
    """How gpu_test passes a folder in FlashMLA's convention (one request per row: b = T,
    s_q = 1): per segment the cache viewed (pages, page_size, 1, 584) with stride(0) =
    page_stride, indices (T, 1, K), lengths (T,) or None."""
    m = v["meta"]
    segs = []
    for g in m["segments"]:
        segs.append({"view_shape": (g["pages"], g["page_size"], 1, TOKEN_BYTES),
                     "view_stride": (g["page_stride"], TOKEN_BYTES, TOKEN_BYTES, 1),
                     "idx_shape": (v["T"], 1, g["K"]), "has_len": bool(g.get("len")),
                     "cache": g["cache"], "idx": g["idx"], "len": g.get("len")})
    scale = m["sm_scale"] or 1 / math.sqrt(v["D"])
    return {"q_shape": (v["T"], 1, v["H"], v["D"]), "segments": segs, "sink": bool(m["sink"]), "softmax_scale": scale}
