"""The launch plan: Go's plan.Rule (plan/plan.go), ported line for line.

A manifest target's "plan" says which kernels a call of `rows` rows runs on a device of
`sms` SMs, and with which split of the candidate list. Integer arithmetic only, on
values the manifest reader bounded (rows and SMs below 2^16, tiles below 2^31), so every
product fits Go's int64 and the two agree exactly; the CPU tests hold this port to the
manifest's plan_examples, which the Go made.
"""

import collections

from .errors import PtxgenMLAError

MAX_ROWS = 65535  # rows are a grid's y dimension (CUDA's limit), as the generated Go's capacity
MAX_SMS = 1 << 16

# What one call runs (plan.Choice): the family index, the split (chunks per row), the
# CTAs of the decode launch and the entries to launch in order (empty for 0 rows).
Choice = collections.namedtuple("Choice", "family split ctas kernels")


def _ceil_div(a, b):
    # Go's (a + b - 1) / b truncates toward zero; every use here has a >= 0 and b >= 1.
    return (a + b - 1) // b


def _filled(tiles, split):
    """How many of split chunks get tiles when each takes ceil(tiles / split)."""
    if tiles < 1:
        return 1
    return _ceil_div(tiles, _ceil_div(tiles, split))


class Family:
    """plan.Family: one CTA shape and its kernels ("" where one was not generated)."""

    __slots__ = ("head_block", "warps", "warp_grid", "tile", "stages", "precision", "score_warps",
                 "producer_warps", "min_rows", "head_blocks", "tiles", "per_sm", "direct", "partial",
                 "direct_small", "partial_small")

    def __init__(self, d):
        self.head_block = d["head_block"]
        self.warps = d["warps"]
        self.warp_grid = tuple(d["warp_grid"])
        self.tile = d["tile"]
        self.stages = d["stages"]
        self.precision = d["precision"]
        self.score_warps = d.get("score_warps", 0)
        self.producer_warps = d.get("producer_warps", 0)
        self.min_rows = d.get("min_rows", 0)
        self.head_blocks = d["head_blocks"]
        self.tiles = d["tiles"]
        self.per_sm = d["ctas_per_sm"]
        self.direct = d["direct"]
        self.partial = d["partial"]
        self.direct_small = d["direct_small"]
        self.partial_small = d["partial_small"]

    def short(self):
        """The variant as kernels.MLAVariant.Short writes it: "h64 w8 2x4 t64 s2 q4", "h8 w4 4x1 t32 s2 hn"."""
        s = f"h{self.head_block} w{self.warps} {self.warp_grid[0]}x{self.warp_grid[1]} t{self.tile} s{self.stages}"
        if self.producer_warps:
            s += f" p{self.producer_warps}"
        if self.score_warps:
            s += f" q{self.score_warps}"
        if self.head_block == 8:
            s += " hn"  # 8-head CTAs put the heads in the MMA's N dimension
        return s


class Rule:
    """plan.Rule, from a manifest target's "plan" (checked by the manifest reader)."""

    def __init__(self, d):
        # From a manifest the reader checked (manifest.check_manifest); anything else is
        # refused here rather than half-read.
        try:
            self._init(d)
        except (KeyError, TypeError, AttributeError) as e:
            raise PtxgenMLAError(f"plan: {d!r:.80}: not a checked manifest plan ({type(e).__name__}: {e})") from None

    def _init(self, d):
        self.families = [Family(f) for f in d["families"]]
        self.combines = [(c["chunks"], c["name"]) for c in d.get("combines") or []]
        self.split = d["split"]
        self.max_split = d["max_split"]
        self.sms = d["sms"]
        self.wide_min_tiles = d["wide_min_tiles"]
        self.small_num = d["small_num"]
        self.small_den = d["small_den"]
        self.small_max_tiles = d.get("small_max_tiles", 0)

    def split_for(self, f, rows, sms):
        """SplitFor: the candidate chunks per row for family f."""
        if self.split > 0:
            return _filled(f.tiles, max(min(self.split, f.tiles), 1))
        ctas, slots = rows * f.head_blocks, sms * max(f.per_sm, 1)
        if ctas >= sms and 2 * ctas >= slots:
            return 1
        per = max(_ceil_div(ctas * f.tiles, slots), 1)
        split = _ceil_div(f.tiles, per)
        if ctas >= sms:
            split = min(split, slots // ctas)
        return _filled(f.tiles, max(min(split, self.max_split), 1))

    def _serves(self, i, rows, sms):
        w = self.families[i]
        if w.min_rows > 0:
            return rows >= w.min_rows
        if w.tile < 64:
            return rows * w.head_blocks >= sms
        split = self.split_for(w, rows, sms)
        return _ceil_div(w.tiles, split) >= self.wide_min_tiles and 2 * rows * w.head_blocks * split >= sms

    def _sms_for(self, sms):
        return self.sms if self.sms > 0 else sms

    def choose(self, rows, sms):
        """Choose: the plan of a call of rows on sms SMs (the rule's own sms, when
        positive, overrides it). Raises PtxgenMLAError where the Go returns an error."""
        _check_count(rows, "rows", 0, MAX_ROWS)
        _check_count(sms, "sms", 1, MAX_SMS)
        sms = self._sms_for(sms)
        if not self.families:
            raise PtxgenMLAError(f"plan: {rows} rows on {sms} SMs with 0 families")
        if rows == 0:
            return Choice(0, 1, 0, [])
        fi = len(self.families) - 1
        while fi > 0 and not self._serves(fi, rows, sms):
            fi -= 1
        f = self.families[fi]
        split = self.split_for(f, rows, sms)
        ctas = f.head_blocks * rows * split
        small = self.small_den * ctas <= self.small_num * sms and (
            self.small_max_tiles <= 0 or _ceil_div(f.tiles, split) <= self.small_max_tiles)
        if split > 1:
            k = f.partial_small if small and f.partial_small else f.partial
        else:
            k = f.direct_small if small and f.direct_small else f.direct
        if not k:
            raise PtxgenMLAError(f"plan: {rows} rows on {sms} SMs need a family-{fi} kernel for split {split} that was not generated")
        if split == 1:
            return Choice(fi, split, ctas, [k])
        comb = next((name for chunks, name in self.combines if chunks == split), "")
        if not comb:
            raise PtxgenMLAError(f"plan: {rows} rows on {sms} SMs split {split} ways, and no combine kernel of {split} chunks was generated")
        return Choice(fi, split, ctas, [k, comb])

    def max_parts(self, capacity, sms):
        """MaxParts: the most (row, chunk) pairs of any split call of 1..capacity rows."""
        _check_count(capacity, "capacity", 0, MAX_ROWS)
        _check_count(sms, "sms", 1, MAX_SMS)
        sms_eff = self._sms_for(sms)
        fewest = min((f.head_blocks for f in self.families), default=0)
        parts = 0
        for rows in range(1, capacity + 1):
            try:
                c = self.choose(rows, sms)
            except PtxgenMLAError:
                c = None
            if c is not None and c.split > 1:
                parts = max(parts, rows * c.split)
            if self.split == 0 and rows * fewest >= sms_eff:
                break  # from here on every family's split is 1
        return parts


def _check_count(v, what, lo, hi):
    if type(v) is not int or not lo <= v <= hi:
        raise PtxgenMLAError(f"plan: {what} {v!r}: want an integer in {lo}..{hi}")
