"""ResNet-50's six layers (batch 32, nchw, pure timing): our speed as a fraction of cuDNN's
(cuDNN's GPU median / ours) with cuDNN's GPU median in us, per dtype: fp32 from this run,
tf32/fp16/bf16 from 20261124_conv_preset_gpu_dtypes/.
Run from the repository root: python3 results/h200/20261125_conv_preset_fp32/derived/resnet50_layers.py"""
import json
H = "results/h200/"
LAYERS = ["conv1", "res2_3x3", "res2_1x1_up", "res3_3x3", "res4_3x3", "res5_3x3"]
med = {}
for f in (H + "20261125_conv_preset_fp32/results.json", H + "20261124_conv_preset_gpu_dtypes/results.json"):
    for r in json.load(open(f))["results"]:
        if r["name"] in LAYERS and r["gpu_time_ms"] and r["params"]["layout"] == "nchw":
            med[(r["name"], r["dtype"], r["backend"])] = r["gpu_time_ms"]["median"]
print("| dtype | " + " | ".join(LAYERS) + " |")
print("| --- |" + " ---: |" * len(LAYERS))
for dt in ("fp32", "tf32", "fp16", "bf16"):
    cells = []
    for n in LAYERS:
        c, o = med[(n, dt, "cudnn")], med[(n, dt, "im2col_gemm_cuda")]
        cells.append(f"{c / o:.2f} ({c * 1e3:.0f})")
    print(f"| {dt} | " + " | ".join(cells) + " |")
