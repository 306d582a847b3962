#!/usr/bin/env python3
"""Converts Microsoft Vidur's published H100 or A100 profiles into kvplan.calibration/2
measurements (GEMM, elementwise and all-reduce tables) for `kvplan calibrate`.

Source: github.com/microsoft/vidur, commit 7d47513363ec447a741ac5e47241580b47724fbf,
data/profiling/compute/<gpu>/<model>/mlp.csv and data/profiling/network/<gpu>_dgx/all_reduce.csv
(MIT licence). Times there are milliseconds (CUDA events); all_reduce `size` is a count of
fp16 elements (vidur/profiling/collectives/collectives_impl.py allocates torch.float16).
Medians are used.

usage: vidur_to_calibration.py VIDUR_PROFILING_DIR OUT.json [h100|a100]
"""
import csv
import json
import sys

MODELS = ["meta-llama/Llama-2-7b-hf", "codellama/CodeLlama-34b-Instruct-hf", "meta-llama/Llama-2-70b-hf"]
# Vidur's folder name -> (the driver's device name, kvplan's catalog GPU).
GPUS = {"h100": ("NVIDIA H100 80GB HBM3", "h100-sxm"), "a100": ("NVIDIA A100-SXM4-80GB", "a100-80gb")}


def med(row, op):
    return float(row[f"time_stats.{op}.median"]) * 1e-3


def main():
    root, out = sys.argv[1], sys.argv[2]
    gpu = sys.argv[3] if len(sys.argv) > 3 else "h100"
    if gpu not in GPUS:
        sys.exit(f"vidur_to_calibration: GPU '{gpu}': expected one of {', '.join(GPUS)}")
    device, catalog = GPUS[gpu]
    gemm, elementwise, all_reduce = [], [], []
    for model in MODELS:
        with open(f"{root}/compute/{gpu}/{model}/mlp.csv") as f:
            for r in csv.DictReader(f):
                m = int(r["num_tokens"])
                tp = int(r["num_tensor_parallel_workers"])
                h, nh, nkv = int(r["n_embd"]), int(r["n_head"]), int(r["n_kv_head"])
                inter = int(r["n_expanded_embd"])
                hd = h // nh
                gated = r["use_gated_mlp"] == "True"
                shapes = {
                    "attn_pre_proj": (h, (nh + 2 * nkv) * hd // tp),
                    "attn_post_proj": (nh * hd // tp, h),
                    "mlp_up_proj": (h, inter * (2 if gated else 1) // tp),
                    "mlp_down_proj": (inter // tp, h),
                }
                for op, (k, n) in shapes.items():
                    gemm.append({"m": m, "n": n, "k": k, "dtype": "fp16", "time_s": med(r, op)})
                # Bytes read plus written per kernel, fp16.
                el = {
                    "input_layernorm": 2 * h * m * 2,
                    "post_attention_layernorm": 2 * h * m * 2,
                    "add": 3 * h * m * 2,
                    "mlp_act": 3 * (inter // tp) * m * 2,
                    "attn_rope": 2 * (nh + nkv) * hd // tp * m * 2,
                }
                for op, b in el.items():
                    elementwise.append({"bytes": b, "time_s": med(r, op)})
    with open(f"{root}/network/{gpu}_dgx/all_reduce.csv") as f:
        for r in csv.DictReader(f):
            all_reduce.append({"gpus": int(r["num_workers"]), "bytes": 2 * int(r["size"]),
                               "time_s": med(r, "all_reduce")})
    doc = {
        "schema": "kvplan.calibration/2",
        "device": device,
        "gpu": catalog,
        "source": "Microsoft Vidur profiling data (github.com/microsoft/vidur @ 7d47513, data/profiling: "
                  f"compute/{gpu}/{{" + ", ".join(MODELS) + f"}}/mlp.csv, network/{gpu}_dgx/all_reduce.csv; MIT), "
                  "medians, converted by scripts/vidur_to_calibration.py",
        "created": "2026-12-01",
        "measurements": {"gemm": gemm, "elementwise": elementwise, "all_reduce": all_reduce},
    }
    with open(out, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
