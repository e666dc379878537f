"""Which generated kernel serves a call: the shipped kernels and the folders users add.

A kernel is generated for one configuration (`ptxgen gen` flags): the query heads, each
segment's candidates per row and page size, the precision and the softmax scale. The
package's kernels are always generated with a sink and both segments' lengths, so one
kernel serves a call with or without attn_sink / topk_length (absent ones are passed as
a -inf sink and lengths of INT32_MAX, which the kernel clamps to the segment's width).
"""

import math
import os
import struct
import threading

from . import _files
from .errors import PtxgenMLAError
from .manifest import load_manifest

PACKAGE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels")
INDEX_NAME = "index.json"
INDEX_FORMAT = "ptxgen-mla-kernels"
INDEX_VERSION = 1
ENV_DIRS = "PTXGEN_MLA_KERNELS"  # os.pathsep-separated folders of user manifests

NOPE, ROPE, TOKEN_BYTES = 448, 64, 584  # the fp8ds cache: 448 e4m3 + 64 bf16 + 8 scale bytes
HEAD_DIM = NOPE + ROPE
PRECISIONS = ("exact", "bf16p")
LOG2E = 1.4426950408889634  # kernels/mla.go's log2e: the kernel multiplies q.k by scale*log2e in f32
CAPACITY = 65535  # the rows every shipped kernel takes (-max-tokens)
MAX_HEADS, MAX_K, MAX_PAGE = 128, 1 << 20, 1 << 16  # kernels.MLAConfig.Validate's bounds


def scale_key(scale):
    """The f32 constant a kernel multiplies q.k by for a softmax scale (0: 1/sqrt(512)):
    two scales that give the same constant are the same kernel."""
    s = scale if scale else 1 / math.sqrt(HEAD_DIM)
    return struct.unpack("<I", struct.pack("<f", s * LOG2E))[0]


class Key(tuple):
    """(heads, k0, page0, k1, page1, precision, scale_bits): what picks a kernel. k1 = 0
    (and page1 = 0) is a call without the extra segment."""

    __slots__ = ()

    def __new__(cls, heads, k0, page0, k1, page1, precision, scale):
        return tuple.__new__(cls, (heads, k0, page0, k1, page1 if k1 else 0, precision, scale_key(scale)))

    def describe(self):
        h, k0, p0, k1, p1, prec, _ = self
        seg1 = f", extra segment K1={k1} in pages of {p1}" if k1 else ", no extra segment"
        return f"h_q={h}, K0={k0} in pages of {p0}{seg1}, precision {prec!r}"


def check_config(heads, k0, page0, k1, page1, precision, scale=0.0):
    """Refuses a configuration the generator would refuse (kernels.MLAConfig.Validate's
    bounds), naming the value."""
    for name, v, lo, hi in (("heads", heads, 1, MAX_HEADS), ("k0", k0, 1, MAX_K), ("page0", page0, 1, MAX_PAGE),
                            ("k1", k1, 0, MAX_K), ("page1", page1, 0 if not k1 else 1, MAX_PAGE)):
        if type(v) is not int or not lo <= v <= hi:
            raise PtxgenMLAError(f"{name} {v!r}: want an integer in {lo}..{hi}")
    if precision not in PRECISIONS:
        raise PtxgenMLAError(f"precision {precision!r}: want one of {', '.join(PRECISIONS)}")
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not (scale == 0 or 0 < scale <= 3.4e38):
        raise PtxgenMLAError(f"scale {scale!r}: want 0 (1/sqrt(512)) or a positive finite float32")


def gen_flags(heads, k0, page0, k1, page1, precision, scale=0.0):
    """The `ptxgen gen` configuration flags of a kernel the package can use."""
    check_config(heads, k0, page0, k1, page1, precision, scale)
    flags = ["-kernel", "mla_decode", "-max-tokens", str(CAPACITY), "-heads", str(heads),
             "-k0", str(k0), "-page0", str(page0), "-k1", str(k1)]
    if k1:
        flags += ["-page1", str(page1)]
    flags += ["-precision", precision]
    if scale:
        flags += ["-scale", repr(float(scale))]
    return flags


def gen_command(heads, k0, page0, k1, page1, precision, scale=0.0, out_dir="DIR", targets="sm_120,sm_90"):
    """The command line (run in a ptxgen checkout) that writes the manifest and PTX of a
    configuration into out_dir, for PTXGEN_MLA_KERNELS or add_kernel_dir to find."""
    if not isinstance(out_dir, str) or not isinstance(targets, str):
        raise PtxgenMLAError(f"out_dir {out_dir!r}, targets {targets!r}: want strings")
    name = config_name(heads, k0, page0, k1, page1, precision, scale)
    return " ".join(["go run ./ptxgen gen"] + gen_flags(heads, k0, page0, k1, page1, precision, scale)
                    + ["-targets", targets, "-manifest", f"{out_dir}/{name}.json"])


def config_name(heads, k0, page0, k1, page1, precision, scale=0.0):
    """A file name that says the configuration: mla_h64_k128p64_k512p64_exact."""
    check_config(heads, k0, page0, k1, page1, precision, scale)
    name = f"mla_h{heads}_k{k0}p{page0}" + (f"_k{k1}p{page1}" if k1 else "") + f"_{precision}"
    if scale:
        name += "_s" + format(scale_key(scale), "08x")
    return name


def _flag_int(flags, name, default, path):
    v = flags.get(name, default)
    if not isinstance(v, str) or not v.isascii() or not v.isdigit():
        raise PtxgenMLAError(f"{path}: -{name} {v!r} in its command: want a number")
    return int(v)


def key_of_manifest(man):
    """The Key a checked manifest's configuration serves, or a PtxgenMLAError saying why
    this package cannot use it."""
    f, p = man.flags, man.path
    if man.data["program"] != "mla_decode" or f.get("kernel", "mla_decode") != "mla_decode":
        raise PtxgenMLAError(f"{p}: a {man.data['program']} program, want mla_decode")
    for name, want in (("cache", "fp8ds"), ("nope", str(NOPE)), ("rope", str(ROPE)), ("sink", "true"),
                       ("len0", "true"), ("len1", "true")):
        if f.get(name, want) != want:
            raise PtxgenMLAError(f"{p}: -{name} {f.get(name)}: the package's call needs -{name} {want}")
    k1 = _flag_int(f, "k1", "512", p)
    try:
        scale = float(f.get("scale", "0"))
    except ValueError:
        raise PtxgenMLAError(f"{p}: -scale {f.get('scale')!r} in its command: want a number") from None
    if not math.isfinite(scale) or scale < 0:
        raise PtxgenMLAError(f"{p}: -scale {scale!r}: want 0 or a positive finite number")
    precision = f.get("precision", "exact")
    if precision not in PRECISIONS:
        raise PtxgenMLAError(f"{p}: -precision {precision!r}: want one of {', '.join(PRECISIONS)}")
    if not man.rows_argument:
        raise PtxgenMLAError(f"{p}: no rows argument: want a kernel generated with -max-tokens")
    return Key(_flag_int(f, "heads", "64", p), _flag_int(f, "k0", "128", p), _flag_int(f, "page0", "64", p),
               k1, _flag_int(f, "page1", "64", p), precision, scale)


class Catalog:
    """The kernels known: the package's index, then each added folder's manifests.

    Folders are read once, when first needed after they were added; manifests are
    loaded (checked) when a call first needs their configuration."""

    def __init__(self, package_dir=PACKAGE_DIR, env=None):
        self._lock = threading.Lock()
        self._package_dir = package_dir
        self._dirs = []
        self._entries = None  # Key -> list of (path, capacity, targets)
        self._skipped = []    # (path, reason) of manifests that cannot serve the call
        self._loaded = {}     # path -> Manifest
        env = os.environ.get(ENV_DIRS, "") if env is None else env
        for d in env.split(os.pathsep):
            if d:
                self._dirs.append(d)

    def add_dir(self, path):
        if not isinstance(path, (str, os.PathLike)):
            raise PtxgenMLAError(f"kernel folder {path!r}: want a path")
        path = os.fspath(path)
        if not os.path.isdir(path):
            raise PtxgenMLAError(f"kernel folder {path!r}: not a folder")
        with self._lock:
            if path not in self._dirs:
                self._dirs.append(path)
                self._entries = None

    def _scan(self):
        entries, skipped = {}, []
        if self._package_dir is not None:
            for key, path, cap, targets in read_index(self._package_dir):
                entries.setdefault(key, []).append((path, cap, targets))
        for d in self._dirs:
            try:
                names = sorted(os.listdir(d))
            except OSError as e:
                raise PtxgenMLAError(f"kernel folder {d}: {e.strerror or e}") from None
            for n in names:
                if not (n.endswith(".json") or n.endswith(".json.xz")) or n == INDEX_NAME:
                    continue
                path = os.path.join(d, n)
                try:
                    man = load_manifest(path)
                    key = key_of_manifest(man)
                except PtxgenMLAError as e:
                    skipped.append((path, str(e)))
                    continue
                self._loaded[path] = man
                entries.setdefault(key, []).append((path, man.capacity, list(man.targets)))
        self._entries, self._skipped = entries, skipped

    def configs(self):
        """Every (Key, path, capacity, targets) known, and the (path, reason) of the
        manifests in added folders that the call cannot use."""
        with self._lock:
            if self._entries is None:
                self._scan()
            return ([(k, p, c, t) for k, v in sorted(self._entries.items(), key=lambda kv: str(kv[0]))
                     for p, c, t in v], list(self._skipped))

    def find(self, key, rows, arch, scale=0.0):
        """The manifest and target for key that holds rows and runs on arch; a
        PtxgenMLAError naming the gen command that adds it otherwise."""
        from .targets import pick_target
        if not isinstance(key, Key):
            raise PtxgenMLAError(f"key {key!r}: want a catalog.Key")
        if type(rows) is not int or rows < 0:
            raise PtxgenMLAError(f"rows {rows!r}: want a non-negative integer")
        with self._lock:
            if self._entries is None:
                self._scan()
            cands = self._entries.get(key, [])
        why = []
        for path, cap, targets in cands:
            if rows > cap:
                why.append(f"{os.path.basename(path)} holds {cap} rows")
                continue
            try:
                target = pick_target(arch, targets)
            except PtxgenMLAError as e:
                why.append(f"{os.path.basename(path)}: {e}")
                continue
            with self._lock:
                man = self._loaded.get(path)
                if man is None:
                    man = self._loaded[path] = load_manifest(path)
            return man, target
        raise PtxgenMLAError(missing_message(key, why, scale))

    def forget_loaded(self):
        with self._lock:
            self._loaded.clear()


def missing_message(key, why, scale=0.0):
    h, k0, p0, k1, p1, prec, _ = key
    if scale_key(scale) == scale_key(0):
        scale = 0.0  # the default, 1/sqrt(512): no -scale flag
    found = f" (found but unusable: {'; '.join(why)})" if why else ""
    return (f"no generated kernel for {key.describe()}{found}. Generate one in a ptxgen checkout with `"
            + gen_command(h, k0, p0, k1, p1, prec, scale) + f"` and add DIR with ptxgen_mla.add_kernel_dir(DIR) "
            f"or {ENV_DIRS}=DIR (docs/python.md, \"Other configurations\")")


def read_index(directory):
    """[(Key, manifest path, capacity, targets)] of a folder's index.json."""
    path = os.path.join(directory, INDEX_NAME)
    if not os.path.exists(path):
        return []
    idx = _files.parse_json(_files.read_file(path, 1 << 20), path)
    if not isinstance(idx, dict) or idx.get("format") != INDEX_FORMAT or idx.get("version") != INDEX_VERSION:
        raise PtxgenMLAError(f"{path}: want {INDEX_FORMAT!r} version {INDEX_VERSION}")
    out = []
    for i, c in enumerate(idx.get("configs") or []):
        try:
            key = Key(c["heads"], c["k0"], c["page0"], c["k1"], c["page1"], c["precision"], c["scale"])
            name = _files.plain_name(c["manifest"], "manifest")
            out.append((key, os.path.join(directory, name), int(c["capacity"]), list(c["targets"])))
        except (KeyError, TypeError, ValueError) as e:
            raise PtxgenMLAError(f"{path}: configs[{i}]: {e}") from None
    return out
