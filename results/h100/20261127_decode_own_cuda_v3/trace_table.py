#!/usr/bin/env python3
"""trace_summary.txt of this folder: per trace_MODEL.csv (MYCONV_OWN_CUDA_STEP_TRACE, one step of
the persistent kernel), per kind of phase, the means over the layers of: the staging of the input
rows (median over the blocks), the wait for the weight pieces (median), the work (median), the
span from the earliest start to the latest end, the spread of the blocks' ends, and the barrier
after it (the next phase's earliest start minus this one's latest end). Run: python3 trace_table.py DIR."""
import collections, csv, glob, os, sys

d = sys.argv[1] if len(sys.argv) > 1 else "."
for f in sorted(glob.glob(os.path.join(d, "trace_*.csv"))):
    rows = list(csv.DictReader(open(f)))
    agg = collections.defaultdict(lambda: collections.defaultdict(float))
    for i, r in enumerate(rows):
        a = agg[r["name"]]
        a["n"] += 1
        a["stage"] += float(r["staging_median_us"])
        a["wait"] += float(r["waiting_median_us"])
        a["work"] += float(r["work_median_us"])
        a["span"] += float(r["end_max_us"]) - float(r["start_min_us"])
        a["skew"] += float(r["end_max_us"]) - float(r["end_min_us"])
        if i + 1 < len(rows):
            a["barrier"] += float(rows[i + 1]["start_min_us"]) - float(r["end_max_us"])
    print(f"{os.path.basename(f)}: step {float(rows[-1]['end_max_us']):.1f} us, {len(rows)} phases")
    print("  phase      n    stage   wait   work   span   end spread  barrier after  (us, means)")
    for k, a in agg.items():
        n = a["n"]
        print(f"  {k:9s} {int(n):3d} {a['stage']/n:7.2f} {a['wait']/n:6.2f} {a['work']/n:6.2f} "
              f"{a['span']/n:6.2f} {a['skew']/n:8.2f} {a['barrier']/n:10.2f}")
