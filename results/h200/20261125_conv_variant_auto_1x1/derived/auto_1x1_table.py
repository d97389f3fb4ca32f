"""MobileNet-v2's five project layers: variant 7 (the choice of --variant auto at a299571, in
20261124_conv_preset_gpu_dtypes/ and 20261124_conv_nhwc_resnet50_mobilenet/) against this run
(the wide-1x1 rule): our GPU median, cuDNN / ours, speed-up.
Run from the repository root: python3 results/h200/20261125_conv_variant_auto_1x1/derived/auto_1x1_table.py"""
import json
H = "results/h200/"
def med(f):
    return {(r["name"], r["dtype"], r["params"]["layout"], r["backend"]): r["gpu_time_ms"]["median"]
            for r in json.load(open(f))["results"]}
old = {**med(H + "20261124_conv_preset_gpu_dtypes/results.json"),
       **med(H + "20261124_conv_nhwc_resnet50_mobilenet/results.json")}
new = med(H + "20261125_conv_variant_auto_1x1/results.json")
for (n, dt, lay, b), t in sorted(new.items()):
    if b == "im2col_gemm_cuda" and n in ("b1_project", "b2_1_project", "b2_2_project", "b3_1_project", "b3_2_project"):
        c, o, oc = new[(n, dt, lay, "cudnn")], old[(n, dt, lay, b)], old[(n, dt, lay, "cudnn")]
        print(n, dt, lay, f"{o*1e3:.1f} -> {t*1e3:.1f} us, {oc/o:.2f} -> {c/t:.2f}, x{o/t:.2f}")
