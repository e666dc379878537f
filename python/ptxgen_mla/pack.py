"""A call's launches from its manifest: which kernels, grids, and every parameter's value
or per-call pointer slot, checked as Go's runtime.CheckArgs checks a Launch.

Pure Python: the launcher (launch.py) turns the result into driver argument arrays once
per call shape, and the CPU tests run it on the shipped manifests.
"""

import collections

from .errors import PtxgenMLAError
from .manifest import ELEM_BYTES, INT_RANGE

# The per-call pointers, in the slot order of the launcher's pointer array, with the
# alignment the launcher's fast per-call check enforces for each (16 for the 16-byte
# loads and stores, 4 for i32 and f32 arrays).
SLOTS = ("q", "cache0", "idx0", "len0", "cache1", "idx1", "len1", "sink", "out", "lse")
SLOT_ALIGN = {"q": 16, "cache0": 16, "cache1": 16, "out": 16,
              "idx0": 4, "len0": 4, "idx1": 4, "len1": 4, "sink": 4, "lse": 4}

KernelLaunch = collections.namedtuple("KernelLaunch", "entry grid block shared programmatic opt_in params")
# One parameter: kind ("ptr", "i32", ...) and either ("slot", name) or ("value", int).
Param = collections.namedtuple("Param", "name kind source value")


def scalars_of(spec):
    """The scalar arguments of a call, by the manifest's argument names."""
    return {"rows": spec.rows, "q_stride_t": spec.q_stride_t, "q_stride_h": spec.q_stride_h,
            "page_stride0": spec.page_stride0, "slots0": spec.slots0, "idx_stride0": spec.idx_stride0,
            "page_stride1": spec.page_stride1, "slots1": spec.slots1, "idx_stride1": spec.idx_stride1}


def _strided_bytes(where, p, value):
    """ptx.KParam.CheckStrides: the bytes a strided pointer's kernel may touch."""
    st = p["strides"]
    span, empty = st["run"], False
    for d in st["dims"]:
        s = value(d["stride"])
        n = d.get("count", 0)
        if d.get("count_param"):
            v, div = value(d["count_param"]), d["count_div"]
            n = (v + div - 1) // div if v > 0 else 0
        if s < 0:
            raise PtxgenMLAError(f"{where}: {d['stride']} = {s}: want at least 0")
        if n > 1 and s < span:
            raise PtxgenMLAError(f"{where}: {d['stride']} = {s}: want at least {span} (its {n} steps would overlap)")
        if n <= 0:
            empty = True
        if n > 1:
            span += (n - 1) * s
    return 0 if empty else span * ELEM_BYTES.get(p.get("elem"), 1)


def plan_launches(man, target, choice, spec, sizes, workspace):
    """The KernelLaunches of a call.

    man: the Manifest; target: its target name; choice: the plan.Choice (or None for a
    program without a plan: every kernel in order, split 1); spec: the call's CallSpec;
    sizes: {slot: (bytes the tensor reaches, element type)} of the pointers given;
    workspace: {name: (address, bytes)}. Raises PtxgenMLAError for anything the kernels'
    parameters cannot take (the Go launcher's refusals)."""
    t = man.targets[target]
    by_entry = {k["entry"]: k for k in t["kernels"]}
    split = choice.split if choice is not None else 1
    entries = choice.kernels if choice is not None else list(by_entry)
    missing = [e for e in entries if e not in by_entry]
    if missing:
        raise PtxgenMLAError(f"{man.path}: {target}: the plan chose {missing}, which the manifest's kernels lack")
    if spec.rows > man.capacity:
        raise PtxgenMLAError(f"{spec.rows} rows, want 0..{man.capacity} (the capacity {man.path} was generated for)")
    scalars = scalars_of(spec)
    names = man.arguments
    out = []
    for e in entries:
        k = by_entry[e]
        for d in k["grid"]:
            if d.get("param") == "split" and not 1 <= split <= d["value"]:
                raise PtxgenMLAError(f"{e}: split {split}, want 1..{d['value']}")
        values, params = {}, []
        for p in k["params"]:
            where = f"{e}: parameter {p['name']}"
            if p.get("workspace"):
                addr, n = workspace[p["workspace"]]
                need = _min_bytes(p, spec.rows, split)
                if n < need:
                    raise PtxgenMLAError(f"{where}: workspace of {n} bytes, the kernel may access {need}")
                params.append(Param(p["name"], "ptr", "value", addr))
                continue
            if p.get("plan") == "split":
                params.append(Param(p["name"], p["kind"], "value", split))
                values[p["name"]] = split
                continue
            arg = names[p["arg"]]
            if p["kind"] == "ptr":
                if arg not in SLOT_ALIGN:
                    raise PtxgenMLAError(f"{where}: argument {arg!r} is not one this call passes")
                if p["align"] > SLOT_ALIGN[arg]:
                    raise PtxgenMLAError(f"{where}: needs {p['align']}-byte alignment, the launcher checks {SLOT_ALIGN[arg]}")
                nbytes, elem = sizes[arg]
                if p.get("elem") and elem != p["elem"]:
                    raise PtxgenMLAError(f"{where}: a {elem} tensor, want {p['elem']}")
                need = _min_bytes(p, spec.rows, split)
                if nbytes < need:
                    raise PtxgenMLAError(f"{where}: {arg} reaches {nbytes} bytes, the kernel may access {need}")
                params.append(Param(p["name"], "ptr", "slot", arg))
                continue
            if arg not in scalars:
                raise PtxgenMLAError(f"{where}: argument {arg!r} is not one this call passes")
            v = scalars[arg]
            lo, hi = INT_RANGE.get(p["kind"], (None, None))
            if lo is None:
                raise PtxgenMLAError(f"{where}: kind {p['kind']}: want an integer parameter")
            if not lo <= v <= hi:
                raise PtxgenMLAError(f"{where}: {arg} = {v}, want {lo}..{hi}")
            if p["align"] > 1 and v % p["align"]:
                raise PtxgenMLAError(f"{where}: {arg} = {v}, want a multiple of {p['align']}")
            params.append(Param(p["name"], p["kind"], "value", v))
            values[p["name"]] = v
        for p in k["params"]:
            if p.get("strides"):
                arg = names[p["arg"]]
                need = _strided_bytes(f"{e}: parameter {p['name']}", p, lambda n: values[n])
                if sizes[arg][0] < need:
                    raise PtxgenMLAError(f"{e}: parameter {p['name']}: {arg} reaches {sizes[arg][0]} bytes, "
                                         f"its strides reach {need}")
        grid = tuple((split if d["param"] == "split" else spec.rows) if d.get("param") else d["value"] for d in k["grid"])
        out.append(KernelLaunch(e, grid, tuple(k["block"]), k["dynamic_shared_bytes"], k["programmatic"],
                                k["shared_opt_in"], params))
    if any(0 in kl.grid for kl in out):
        return []
    return out


def _min_bytes(p, rows, split):
    m = p["min_bytes"]
    return m["fixed"] + m["per_row"] * rows + m["per_part"] * rows * split


def workspace_sizes(man, target, sms):
    """{name: bytes} of a target's workspace on a device of sms SMs: bytes + per_part x
    MaxParts(capacity, sms), at least 16, as the generated Go allocates it."""
    rule = man.rule(target)
    parts = rule.max_parts(man.capacity, sms) if rule is not None else 0
    return {w["name"]: max(w["bytes"] + w["per_part"] * parts, 16) for w in man.targets[target]["workspace"]}


def workspace_elems(man, target):
    """{name: element type} of a target's workspace buffers (every kernel taking one agrees)."""
    elems = {}
    for k in man.targets[target]["kernels"]:
        for p in k["params"]:
            if p.get("workspace"):
                e = p.get("elem") or "u8"
                if elems.setdefault(p["workspace"], e) != e:
                    raise PtxgenMLAError(f"{man.path}: workspace {p['workspace']} taken as {elems[p['workspace']]} and {e}")
    return elems
