"""Summarizes a compute-sanitizer racecheck log (stdin): one line per hazard kind and pair of
accesses (thread warp and PC of each side) with the shared byte range (offsets from the dynamic
shared window, whose base is 0x400 on sm_90) and the count. Usage: racecheck_summary.py < log"""
import re, sys, collections

head = re.compile(r"Potential (\w+) hazard detected at __shared__ (0x[0-9a-f]+) in block")
side = re.compile(r"(Write|Read) Thread \((\d+),\d+,\d+\) at (.*)")
rows, cur = collections.OrderedDict(), None
for line in sys.stdin:
    m = head.search(line)
    if m:
        cur = [m.group(1), int(m.group(2), 16) - 0x400, []]
        continue
    m = side.search(line)
    if m and cur is not None:
        where = m.group(3).strip()
        src = re.search(r" in (\S+:\d+)", where)  # -lineinfo: file:line
        where = src.group(1).rsplit("/", 1)[-1] if src else where.rsplit("+", 1)[-1]
        cur[2].append(f"{m.group(1)} w{int(m.group(2)) // 32} {where}")
        if len(cur[2]) == 2:
            key = (cur[0],) + tuple(cur[2])
            lo, hi, n = rows.get(key, (cur[1], cur[1], 0))
            rows[key] = (min(lo, cur[1]), max(hi, cur[1]), n + 1)
            cur = None
for k, (lo, hi, n) in rows.items():
    print(f"  {' | '.join(k)}  smem[{lo}..{hi}]  x{n}")
