"""python -m ptxgen_mla: list the kernels, check a manifest, print a gen command.

    python -m ptxgen_mla list                 # every configuration the call can use
    python -m ptxgen_mla manifest FILE.json   # check a `ptxgen gen -manifest` file and replay its plan examples
    python -m ptxgen_mla gen-command HEADS K0 PAGE0 K1 PAGE1 [exact|bf16p] [SCALE]

A bad argument or file is one line on stderr and exit status 2, never a traceback.
"""

import sys

from .errors import PtxgenMLAError


def _int(s, what):
    if not s.isascii() or not s.isdigit() or len(s) > 9:
        raise PtxgenMLAError(f"{what} {s!r}: want a non-negative integer")
    return int(s)


def run(argv):
    from . import catalog, kernel_configs
    from .manifest import load_manifest
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd == "list" and not rest:
        configs, skipped = kernel_configs()
        for desc, path, cap, targets in configs:
            print(f"{desc}: {', '.join(targets)}, up to {cap} rows ({path})")
        for path, why in skipped:
            print(f"skipped {path}: {why}")
        return 0
    if cmd == "manifest" and len(rest) == 1:
        man = load_manifest(rest[0])
        n = 0
        for target, t in man.targets.items():
            rule = man.rule(target)
            for ex in t.get("plan_examples", []):
                c = rule.choose(ex["rows"], ex["sms"])
                got = (c.split, c.kernels, rule.max_parts(ex["rows"], ex["sms"]))
                want = (ex["split"], ex["kernels"] or [], ex["max_parts"])
                if got != want:
                    raise PtxgenMLAError(f"{rest[0]}: {target}: rows {ex['rows']} on {ex['sms']} SMs: the plan gives "
                                         f"{got}, the Go chose {want}")
                n += 1
        try:
            key = catalog.key_of_manifest(man)
            use = f"the call can use it for {key.describe()}"
        except PtxgenMLAError as e:
            use = f"the call cannot use it: {e}"
        print(f"{rest[0]}: ok, targets {', '.join(man.targets)}, capacity {man.capacity}, {n} plan examples reproduced; {use}")
        return 0
    if cmd == "gen-command" and 5 <= len(rest) <= 7:
        nums = [_int(x, w) for x, w in zip(rest[:5], ("heads", "k0", "page0", "k1", "page1"))]
        prec = rest[5] if len(rest) > 5 else "exact"
        if prec not in catalog.PRECISIONS:
            raise PtxgenMLAError(f"precision {prec!r}: want exact or bf16p")
        try:
            scale = float(rest[6]) if len(rest) > 6 else 0.0
        except ValueError:
            raise PtxgenMLAError(f"scale {rest[6]!r}: want a number") from None
        print(catalog.gen_command(*nums, prec, scale))
        return 0
    raise PtxgenMLAError(f"unknown command {' '.join(argv)!r} (python -m ptxgen_mla --help)")


def main(argv=None):
    try:
        return run(sys.argv[1:] if argv is None else argv)
    except PtxgenMLAError as e:
        print(f"ptxgen_mla: {e}", file=sys.stderr)
        return 2
    except OSError as e:
        print(f"ptxgen_mla: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
