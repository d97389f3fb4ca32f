import json, sys
# subtab.py A.json B.json AUTO.json: own GPU medians (us) per problem for each file, and auto's algorithm
rows = {}
for i, f in enumerate(sys.argv[1:]):
    for r in json.load(open(f))["results"]:
        if r["backend"] != "im2col_gemm_cuda": continue
        k = (r["problem"] if isinstance(r["problem"], str) else json.dumps(r["problem"]))
        ms = r["gpu_time_ms"]["median"] * 1e3 if r["status"] == "passed" else None
        rows.setdefault(k, [None] * len(sys.argv[1:]))[i] = (ms, r["status"], r.get("algorithm", "")[:40])
print("problem".ljust(44), *[f.split("/")[-1][:14].rjust(14) for f in sys.argv[1:]], " auto's algorithm")
for k, v in rows.items():
    cells = [(f"{c[0]:14.1f}" if c and c[0] else (c[1][:14].rjust(14) if c else "-".rjust(14))) for c in v]
    print(k[:44].ljust(44), *cells, " ", (v[-1] or ("", "", ""))[2])
