#!/usr/bin/env python3
"""ncu_b1_*.txt of this folder from ncu's CSV output (ncu --csv --metrics
gpu__time_duration.sum,dram__bytes_read.sum,launch__grid_size,launch__block_size ...): per kernel
and launch shape, the launches, their mean time, mean DRAM bytes read and the rate.
Run: python3 ncu_table.py NCU_LOG."""
import collections
import csv
import sys

SCALE = {"nsecond": 1, "usecond": 1e3, "msecond": 1e6, "byte": 1, "Kbyte": 1e3, "Mbyte": 1e6,
         "Gbyte": 1e9}
lines = open(sys.argv[1]).read().splitlines()
start = [i for i, l in enumerate(lines) if l.startswith('"ID"')]
if not start:
    sys.exit("no ncu CSV in " + sys.argv[1])
rows = list(csv.reader(lines[start[0]:]))
col = {k: i for i, k in enumerate(rows[0])}
launches = collections.OrderedDict()
for x in rows[1:]:
    if len(x) < len(rows[0]):
        continue
    v = float(x[col["Metric Value"]].replace(",", "") or 0) * SCALE.get(x[col["Metric Unit"]], 1)
    launches.setdefault((x[col["ID"]], x[col["Kernel Name"]][:60]), {})[x[col["Metric Name"]]] = v
shapes = collections.OrderedDict()
for (_, name), m in launches.items():
    e = shapes.setdefault((name, m.get("launch__grid_size"), m.get("launch__block_size")), [0, 0.0, 0.0])
    e[0] += 1
    e[1] += m.get("gpu__time_duration.sum", 0)
    e[2] += m.get("dram__bytes_read.sum", 0)
for (name, grid, block), (n, t, b) in shapes.items():
    print(f"{n:4d} {t / n / 1000:9.2f} us {b / n / 1e6:9.2f} MB {b / t if t else 0:7.1f} GB/s  "
          f"grid {grid:.0f} block {block:.0f} {name}")
