"""The table of session 11 README: MobileNet-v2's five project layers, session 10's runs (variant 7)
against variant_auto_1x1/ (the new rule): our GPU median, cuDNN / ours, speed-up.
Run from the repository root: python3 results/h200/20261125_session11/derived/auto_1x1_table.py"""
import json
S10 = "results/h200/20261124_session10/"
def med(f):
    return {(r["name"], r["dtype"], r["params"]["layout"], r["backend"]): r["gpu_time_ms"]["median"]
            for r in json.load(open(f))["results"]}
old = {**med(S10 + "preset_gpu_dtypes/results.json"), **med(S10 + "nhwc_resnet50_mobilenet/results.json")}
new = med("results/h200/20261125_session11/variant_auto_1x1/results.json")
for (n, dt, lay, b), t in sorted(new.items()):
    if b == "im2col_gemm_cuda" and n in ("b1_project", "b2_1_project", "b2_2_project", "b3_1_project", "b3_2_project"):
        c, o, oc = new[(n, dt, lay, "cudnn")], old[(n, dt, lay, b)], old[(n, dt, lay, "cudnn")]
        print(n, dt, lay, f"{o*1e3:.1f} -> {t*1e3:.1f} us, {oc/o:.2f} -> {c/t:.2f}, x{o/t:.2f}")
