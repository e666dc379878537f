"""Which generated target a device runs: Go's runtime.PickTarget, line for line.

target.ParseID reads "sm_NN" with NN in 80..121 (MIN_SM..MAX_SM), optionally followed by
"a" (code for exactly that chip) or "f" (code for the later chips of its major version).
Plain code runs on every later chip, through the driver's JIT; "a" code only on its own
chip; "f" code on chips of the same major version at or above it. Among the targets
that run, the newest wins, and at equal number the more specific one (a, then f, then
plain). A device of compute capability (major, minor) is "sm_{10*major+minor}", so an
sm_100 device picks sm_90 over sm_90a, and sm_121 picks sm_120 (never sm_120a).
"""

import re

from .errors import PtxgenMLAError

MIN_SM, MAX_SM = 80, 121  # target.MinSM, target.MaxSM

_ID = re.compile(r"sm_([1-9][0-9]*)([af]?)\Z", re.ASCII)


def parse_id(name):
    """(sm, suffix) of a target name, as target.ParseID reads it."""
    m = _ID.match(name) if isinstance(name, str) else None
    if m is None or not MIN_SM <= int(m.group(1)) <= MAX_SM:
        raise PtxgenMLAError(f"bad target {name!r}: want sm_NN with NN in {MIN_SM}..{MAX_SM}, "
                             "optionally followed by a or f (sm_90a)")
    return int(m.group(1)), m.group(2)


def runs_on(target_id, dev_sm):
    """target.ID.RunsOn: whether code for target_id runs on a device of dev_sm."""
    sm, suffix = target_id
    if suffix == "a":
        return sm == dev_sm
    if suffix == "f":
        return sm // 10 == dev_sm // 10 and sm <= dev_sm
    return sm <= dev_sm


def _rank(target_id):
    sm, suffix = target_id
    return sm * 4 + {"a": 2, "f": 1}.get(suffix, 0)


def device_arch(capability):
    """The arch name of a device of compute capability (major, minor): "sm_90"."""
    if (not isinstance(capability, (tuple, list)) or len(capability) != 2
            or not all(type(x) is int and 0 <= x < 100 for x in capability)):
        raise PtxgenMLAError(f"compute capability {capability!r}: want (major, minor), two integers in 0..99")
    return f"sm_{capability[0] * 10 + capability[1]}"


def pick_target(arch, targets):
    """runtime.PickTarget: the best of targets (names) that runs on a device of arch."""
    try:
        dev_sm, _ = parse_id(arch)
    except PtxgenMLAError as e:
        raise PtxgenMLAError(f"device: {e}") from None
    if not isinstance(targets, (list, tuple)):
        raise PtxgenMLAError(f"targets {targets!r}: want a list of target names")
    best, best_rank = None, -1
    for name in targets:
        tid = parse_id(name)
        if runs_on(tid, dev_sm) and _rank(tid) > best_rank:
            best, best_rank = name, _rank(tid)
    if best is None:
        raise PtxgenMLAError(f"none of the kernel's targets {list(targets)} runs on this {arch} device")
    return best
