#!/usr/bin/env python3
"""Replays every vLLM serving run of the calibration set through `kvplan simulate` and
prints predicted vs measured TTFT, ITL and end-to-end means with median and p90 errors.

The runs (tests/data/calibration/real-vllm-h100/runs.csv, 13 vLLM 0.15.1 runs on H100
SXM; sources in that folder's SOURCES.md) are replayed as they were generated:
inference-perf's shared_prefix data (groups x users, each user's prompt repeating) under
its constant load (fixed-interval arrivals, stages one after another), with the server's
settings (TP, max_num_batched_tokens, max_num_seqs 128, max_model_len 4096,
gpu_memory_utilization 0.9, chunked prefill, prefix caching on).

  scripts/accuracy.py [--kvplan build/kvplan] [--calibration FILE] [--runs 0,2,4]
  scripts/accuracy.py --eval
      the same for tests/data/calibration/eval-vllm-h100: 37 runs of the same study on
      six other models and on H100, A100-80GB and L40S (each on its own GPU), with dense /
      MoE summaries and their bias; nothing is fitted on them.
  scripts/accuracy.py --check
      replays every run the shipped fit left out and exits 1 if an error bound of CHECKS
      is exceeded (ctest accuracy_replay).
  scripts/accuracy.py --leave-one-out
      each run predicted by the serving overheads fitted on the other 12.
  scripts/accuracy.py --public [--validate]
      replays the published runs of tests/data/calibration/public (other engines, GPUs and
      load shapes; scripts/public_replay.py), per run and per (GPU, engine, load shape)
      group; runs kvplan cannot express are skipped with the reason. --validate only checks
      the table (ctest public_runs_valid).
  scripts/accuracy.py --fit 0,2,4,6,8,10,12 --write-parameters OUT.json
      fits the host-side overheads (step_overhead_s, step_overhead_per_seq_s,
      request_overhead_s, output_overhead_per_seq_s; HELD_PARAMS says which are held and why) on the runs at those indices (eN: row N of the evaluation set) by
      non-negative least squares on the relative residuals of the kernel-calibrated
      model, and writes them as a /2 parameters file with the measured-error statements
      of the runs the fit left out (merge it with `kvplan calibrate --merge`).
"""
import argparse
import concurrent.futures
import csv
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(ROOT, "tests", "data", "calibration", "real-vllm-h100")
# The same study's evaluation runs (other models, TP 8, A100 and L40S); measured values
# only, no logged KV pool (SOURCES.md there).
EVAL = os.path.join(ROOT, "tests", "data", "calibration", "eval-vllm-h100")
# Prompt tokens the client measured over system + question tokens (the completion
# template and BOS): 592 - (100 + 466) = 26 in the one run that records it
# (runs.csv, prompt_tokens_mean_measured).
TEMPLATE_TOKENS = 26


def parse_stages(text):
    out = []
    for part in text.split(";"):
        m = re.fullmatch(r"\s*([0-9.]+)rps x ([0-9.]+)s\s*", part)
        if not m:
            sys.exit(f"runs.csv: stages: cannot read '{part}'")
        out.append((float(m.group(1)), float(m.group(2))))
    return out


def model_file(run, tmp):
    """The run's config.json; a multimodal config's text_config is lifted to the top."""
    path = os.path.join(run["_data"], run["model_config"])
    cfg = json.load(open(path))
    if "text_config" not in cfg:
        return path
    flat = dict(cfg["text_config"])
    flat["architectures"] = cfg.get("architectures", [])
    flat["name"] = os.path.basename(path)[:-5]
    out = os.path.join(tmp, os.path.basename(path))
    # Runs are simulated in parallel: write beside, then rename (atomic), never truncate
    # a file another simulation is reading.
    fd, part = tempfile.mkstemp(dir=tmp)
    with os.fdopen(fd, "w") as f:
        json.dump(flat, f)
    os.replace(part, out)
    return out


def workload_file(run, tmp):
    stages = parse_stages(run["stages"])
    lines = [
        f"name: run-{run['id']}-{run['workload']}",
        "source: inference-perf shared_prefix + constant load, as runs.csv records it",
        f"requests: {run['num_requests']}",
        "arrival:",
        "  process: fixed",
        "  stages:",
    ]
    lines += [f"    - {{rate_per_s: {r}, duration_s: {d}}}" for r, d in stages]
    lines += [
        "shared_prefix:",
        f"  groups: {run['num_system_prompts']}",
        f"  users_per_group: {run['users_per_system_prompt']}",
        f"  system_prompt_tokens: {run['system_prompt_tokens']}",
        f"  multi_turn: {str(run['multi_turn'] == 'True').lower()}",
        f"prompt_tokens: {{dist: fixed, value: {int(run['question_tokens']) + TEMPLATE_TOKENS}}}",
        f"output_tokens: {{dist: fixed, value: {run['output_tokens']}}}",
        "slo: {ttft_p99_s: 10, tpot_p99_s: 1}",
    ]
    out = os.path.join(tmp, f"{os.path.basename(run['_data'])}-run-{run['id']}.yaml")
    open(out, "w").write("\n".join(lines) + "\n")
    return out


def simulate(kvplan, run, calibration, tmp):
    # The pool is the one vLLM logged (real_kv_blocks): the replay checks time, not memory
    # accounting (tests/planner/engine_logs_test.cpp checks that). Llama-4's chunked local
    # attention is not in kvplan's vLLM accounting (refused there), so it runs on the
    # engine-neutral budget with the same logged pool.
    engine = "ideal" if "llama-4" in run["model_config"] else "vllm"
    cmd = [kvplan, "simulate", "--model", model_file(run, tmp), "--gpu", run.get("gpu") or "h100-sxm",
           "--workload", workload_file(run, tmp), "--scheduler", "chunked", "--engine", engine]
    # Without a logged pool, kvplan's own vLLM memory accounting sizes it.
    if run.get("real_kv_blocks"):
        cmd += ["--num-gpu-blocks-override", run["real_kv_blocks"]]
    cmd += ["--tp", run["tp"], "--max-num-seqs", run["max_num_seqs"],
           "--max-num-batched-tokens", run["max_num_batched_tokens"],
           "--max-model-len", run["max_model_len"], "--gpu-memory-utilization", run["gpu_mem_util"],
           "--format", "json"]
    if run["precision"] == "FP8":
        cmd += ["--quantization", "fp8"]
    # vLLM 0.15.1 schedules asynchronously by default (on since PR #27614, late 2025; PR
    # #31998 extended the default to speculative decoding), and the runs kept defaults.
    cmd += ["--async-scheduling", "on"]
    cmd += ["--calibration", calibration or "none"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"run {run['id']}: {' '.join(cmd)}\n{p.stderr}")
    j = json.loads(p.stdout)
    row = j["rows"][0] if "rows" in j else j
    lat = row["latency"]
    return {"ttft": lat["ttft_s"]["mean"] * 1e3, "itl": lat["tpot_s"]["mean"] * 1e3,
            "e2e": lat["e2e_s"]["mean"] * 1e3, "batch": row["batch"]["mean"],
            "steps": row["sim"]["steps"], "busy_s": row["sim"]["busy_s"]}


def measured(run):
    return {"ttft": float(run["measured_all_ttft_mean_ms"]), "itl": float(run["measured_all_itl_mean_ms"]),
            "e2e": float(run["measured_all_e2e_mean_ms"])}


def pctl(values, q):
    """Nearest rank."""
    v = sorted(values)
    k = max(1, -(-int(q * len(v) * 1000) // 1000))
    return v[min(len(v), k) - 1]


def solve(rows, ys):
    """Least squares by the normal equations, Gaussian elimination with partial pivoting."""
    n = len(rows[0])
    a = [[sum(r[i] * r[j] for r in rows) for j in range(n)] + [sum(r[i] * y for r, y in zip(rows, ys))]
         for i in range(n)]
    for c in range(n):
        p = max(range(c, n), key=lambda k: abs(a[k][c]))
        a[c], a[p] = a[p], a[c]
        for k in range(n):
            if k != c:
                f = a[k][c] / a[c][c]
                a[k] = [x - f * y for x, y in zip(a[k], a[c])]
    return [a[i][n] / a[i][i] for i in range(n)]


def with_params(base, params, tmp):
    """A copy of calibration `base` (a /2 file) with `params` added or replaced."""
    doc = json.load(open(base))
    for k, v in params.items():
        doc["parameters"][k] = {"value": v, "unit": "s", "source": "scripts/accuracy.py --fit (iterating)"}
    out = os.path.join(tmp, "cal.json")
    json.dump(doc, open(out, "w"))
    return out


# The host-side overheads the fit solves for, and those it holds (value, why), each
# with its reason in docs/calibration.md:
# - output_overhead_s (per step's outputs at the API server) adds once to TTFT and once
#   to E2E, exactly as request_overhead_s does, unless the output processor is
#   saturated, which no fit run is: the runs cannot separate the two, so their sum is
#   fitted as request_overhead_s.
FITTED_PARAMS = ("step_overhead_s", "step_overhead_per_seq_s", "request_overhead_s", "output_overhead_per_seq_s")
HELD_PARAMS = {
    "output_overhead_s": (0.0, "it adds to TTFT and E2E as request_overhead_s does, so the runs cannot "
                               "separate them; their sum is in request_overhead_s"),
}
# step_overhead_per_seq_s is EngineCore's CPU per scheduled sequence: under async
# scheduling (the runs' vLLM 0.15.1 default) it hides behind the GPU's part of a
# back-to-back step unless it is the longer (planner/roofline.cpp), so a run's ITL does
# not move with it until then: no gradient to fit on. It is scanned instead: each value
# of this grid (s per sequence) held while the other terms are fitted, and the smallest
# value whose squared relative ITL and TTFT residuals are within PER_SEQ_TIE of the
# least kept: a difference below it is the scan's noise (batching shifts), not evidence.
PER_SEQ_GRID = (0.0, 10e-6, 20e-6, 40e-6, 80e-6, 160e-6)
PER_SEQ_TIE = 0.01


def nonneg_step(params, cols, ys, pinned, damping=1.0):
    """Adds to params[name] `damping` x the least-squares increments of columns cols[name]
    (one value per residual in ys) such that no parameter ends below zero: the most
    negative one is pinned at 0 (its increment taken out of the residuals) and the rest
    refitted (an active-set non-negative least squares). `pinned` receives each pinned name
    with the value the unconstrained step would have given it."""
    free = list(cols)
    ys = list(ys)
    while free:
        d = solve([[cols[n][k] for n in free] for k in range(len(ys))], ys)
        after = {n: params[n] + damping * di for n, di in zip(free, d)}
        neg = [n for n in free if after[n] < 0]
        if not neg:
            params.update(after)
            return
        n = min(neg, key=lambda x: after[x])
        ys = [y + cols[n][k] * params[n] / damping for k, y in enumerate(ys)]
        pinned[n] = params[n] + (after[n] - params[n]) / damping
        params[n] = 0.0
        free.remove(n)


def simulate_all(kvplan, runs, cal, tmp):
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        return list(pool.map(lambda r: simulate(kvplan, r, cal, tmp), runs))


def fit(kvplan, runs, base, tmp, report=None, scan=None):
    """Host-side overheads on the residuals of the kernel-calibrated model: for each
    step_overhead_per_seq_s of PER_SEQ_GRID the others by fit_at, and the smallest value
    whose fit leaves squared relative residuals within PER_SEQ_TIE of the least kept.
    `report` as fit_at's; `scan`, if given, receives (value, squared residuals) per grid
    point."""
    fits = []
    for per_seq in PER_SEQ_GRID:
        pinned = {}
        params, sse = fit_at(kvplan, runs, base, tmp, per_seq, pinned)
        fits.append((params, sse, pinned))
        if scan is not None:
            scan.append((per_seq, sse))
    least = min(sse for _, sse, _ in fits)
    params, _, pinned = next(f for f in fits if f[1] <= least * (1 + PER_SEQ_TIE))
    if report is not None:
        report.update(pinned)
    return params


def fit_at(kvplan, runs, base, tmp, per_seq, report):
    """The host-side overheads with step_overhead_per_seq_s held at `per_seq`, by least
    squares on the residuals of the kernel-calibrated model. ITL (one engine step per
    output token): step_overhead_s (the step's serial remainder, once per step; the
    all-reduce is not fitted here: decode-sized messages take vLLM's custom all-reduce,
    whose cost planner/roofline.cpp takes from a published H100 measurement). TTFT:
    request_overhead_s + output_overhead_per_seq_s x mean batch (the sequences whose
    outputs the API server handles with the first token's step). Only FITTED_PARAMS are
    solved for; HELD_PARAMS keep their values. No parameter may end negative
    (nonneg_step); `report` receives those pinned at 0 in the last pass with their
    unconstrained values. Returns the parameters and the squared relative ITL and TTFT
    residuals they leave.
    Iterated, since longer steps change batching: 10 passes of half the least-squares step
    each (full steps oscillate, as a per-sequence term lengthens steps, which batches
    more sequences)."""
    params = dict.fromkeys(FITTED_PARAMS, 0.0)
    params.update({n: v for n, (v, _) in HELD_PARAMS.items()})
    params["step_overhead_per_seq_s"] = per_seq
    for _ in range(10):
        pinned = {}
        sims = simulate_all(kvplan, runs, with_params(base, params, tmp), tmp)
        # Rows weighted by 1 / measured, so the fit minimizes relative error (the
        # accuracy metric), as `kvplan calibrate` does for kernel timings; residuals in
        # ms, parameters in s (the 1e3).
        w = [1.0 / measured(r)["itl"] for r in runs]
        ys = [(measured(r)["itl"] - s["itl"]) * wi for r, s, wi in zip(runs, sims, w)]
        cols = {"step_overhead_s": [1e3 * wi for wi in w]}
        nonneg_step(params, cols, ys, pinned, 0.5)
        w = [1.0 / measured(r)["ttft"] for r in runs]
        ys = [(measured(r)["ttft"] - s["ttft"]) * wi for r, s, wi in zip(runs, sims, w)]
        cols = {"request_overhead_s": [1e3 * wi for wi in w],
                "output_overhead_per_seq_s": [1e3 * s["batch"] * wi for s, wi in zip(sims, w)]}
        nonneg_step(params, {n: c for n, c in cols.items() if n in FITTED_PARAMS}, ys, pinned, 0.5)
    report.update(pinned)
    sims = simulate_all(kvplan, runs, with_params(base, params, tmp), tmp)
    sse = sum(((s[k] - measured(r)[k]) / measured(r)[k]) ** 2 for r, s in zip(runs, sims) for k in ("itl", "ttft"))
    return params, sse


def parameter_source(name, spec, pinned):
    runs = (f"runs {spec} (bare index: tests/data/calibration/real-vllm-h100/runs.csv row; eN: "
            f"tests/data/calibration/eval-vllm-h100/runs.csv row)")
    if name in HELD_PARAMS:
        value, why = HELD_PARAMS[name]
        return f"held at {value:g}, not fitted on {runs}: {why} (docs/calibration.md)"
    if name == "step_overhead_per_seq_s":
        grid = ", ".join(f"{v * 1e6:g}" for v in PER_SEQ_GRID)
        return (f"scanned over {grid} us on {runs} (each held while the others were fitted; the smallest value "
                f"within {PER_SEQ_TIE:.0%} of the least squared relative ITL and TTFT residuals kept): under async "
                f"scheduling it hides behind the GPU's side of a step unless it is the longer (docs/calibration.md)")
    if name in pinned:
        return (f"non-negative least squares on the relative residuals of {runs}: unconstrained it comes out at "
                f"{pinned[name]:.3g} s, negative, so it is pinned at 0 and the others refitted")
    term = "ITL" if name.startswith("step_") else "TTFT"
    return f"non-negative least squares on the {term} relative residuals of {runs}, jointly with the other overheads"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kvplan", default=os.path.join(ROOT, "build", "kvplan"))
    ap.add_argument("--calibration", default=os.path.join(ROOT, "configs", "calibration", "h100-sxm-vllm.json"))
    ap.add_argument("--runs", help="run indices to replay (default: all)")
    ap.add_argument("--fit", help="run indices to fit the serving overheads on")
    ap.add_argument("--write-parameters", help="with --fit: write the fitted overheads here")
    ap.add_argument("--held-out", help="run indices to mark as held out in the table")
    ap.add_argument("--leave-one-out", action="store_true",
                    help="fit the serving overheads on all runs but one and predict that one, for each run")
    ap.add_argument("--check", action="store_true",
                    help="replay both sets and exit 1 if an error bound of CHECKS is exceeded (ctest accuracy_replay)")
    ap.add_argument("--eval", action="store_true",
                    help="replay the runs of tests/data/calibration/eval-vllm-h100 instead")
    ap.add_argument("--public", action="store_true",
                    help="replay the published runs of tests/data/calibration/public instead")
    ap.add_argument("--validate", action="store_true", help="with --public: check the table, replay nothing")
    args = ap.parse_args()
    if args.public:
        import public_replay
        sys.exit(public_replay.run(args.kvplan, args.calibration if args.calibration != "none" else None,
                                   only_validate=args.validate))
    data = EVAL if args.eval else DATA
    runs = list(csv.DictReader(open(os.path.join(data, "runs.csv"))))
    for r in runs:
        r["_data"] = data
    cal = args.calibration if args.calibration != "none" else None
    with tempfile.TemporaryDirectory() as tmp:
        if args.fit:
            fit_runs = select_runs(args.fit, runs)
            pinned, scan = {}, []
            params = fit(args.kvplan, fit_runs, cal, tmp, pinned, scan)
            for name, v in sorted(pinned.items()):
                print(f"fit: {name} would come out at {v:.3g} (negative); pinned at 0 and the others refitted",
                      file=sys.stderr)
            for v, sse in scan:
                print(f"fit: step_overhead_per_seq_s {v * 1e6:g} us: squared relative residuals {sse:.5f}",
                      file=sys.stderr)
            doc = {"schema": "kvplan.calibration/2", "device": "NVIDIA H100 80GB HBM3", "gpu": "h100-sxm",
                   "source": f"serving overheads fitted by scripts/accuracy.py --fit {args.fit} on vLLM 0.15.1 H100 runs",
                   "parameters": {k: {"value": v, "unit": "s", "source": parameter_source(k, args.fit, pinned)}
                                  for k, v in params.items()}}
            doc["accuracy"], doc["held_out_errors"] = accuracy_statements(args.kvplan, with_params(cal, params, tmp), args.fit, runs, tmp)
            text = json.dumps(doc, indent=2) + "\n"
            if args.write_parameters:
                open(args.write_parameters, "w").write(text)
            print(text)
            return
        if args.leave_one_out:
            # Each run predicted by overheads fitted on all the others, so the figure does not
            # depend on which half was fitted (the evaluation set stays unfitted throughout).
            pool = runs
            errs = {"ttft": [], "itl": [], "e2e": []}
            print(f"leave-one-out over {len(pool)} runs (kernel terms from {os.path.relpath(cal, ROOT) if cal else 'none'})")
            for i, r in enumerate(pool):
                params = fit(args.kvplan, [x for j, x in enumerate(pool) if j != i], cal, tmp)
                s = simulate(args.kvplan, r, with_params(cal, params, tmp), tmp)
                m = measured(r)
                e = {k: (s[k] - m[k]) / m[k] for k in errs}
                for k in errs:
                    errs[k].append(abs(e[k]))
                tag = "e" if r["_data"] == EVAL else " "
                print(f"{tag}{r['id']:<16} {r['model'].split('/')[-1][:28]:<28} TTFT {e['ttft']:>+6.0%}  "
                      f"ITL {e['itl']:>+6.0%}  E2E {e['e2e']:>+6.0%}  (step {params['step_overhead_s'] * 1e3:.2f} ms "
                      f"+ {params['step_overhead_per_seq_s'] * 1e6:.1f} us/seq, request "
                      f"{params['request_overhead_s'] * 1e3:.2f} ms, output {params['output_overhead_per_seq_s'] * 1e6:.1f} "
                      f"us/seq)",
                      flush=True)
            print(f"leave-one-out: |error| median / p90 (nearest rank) over {len(pool)} runs: " + ", ".join(
                f"{k.upper()} {statistics.median(v):.1%} / {pctl(v, 0.9):.1%}" for k, v in errs.items()))
            return
        if args.check:
            sys.exit(check(args.kvplan, cal, tmp))
        sel = [int(i) for i in args.runs.split(",")] if args.runs else range(len(runs))
        held = set(int(i) for i in args.held_out.split(",")) if args.held_out else set()
        shown = os.path.relpath(cal, ROOT) if cal and os.path.abspath(cal).startswith(ROOT + os.sep) else cal
        print(f"calibration: {shown or 'none (datasheet roofline)'}")
        errs = replay(args.kvplan, runs, sel, held, cal, tmp)
        groups = [("all runs", list(errs))]
        if held:
            groups.append(("held out (*)", [i for i in errs if i in held]))
        if args.eval:
            groups += [(f"{name} (signed median = bias)", [i for i in errs if is_moe(runs[i]) == moe])
                       for name, moe in (("dense", False), ("MoE", True))]
            groups += [(f"on {gpu} (signed median = bias)", [i for i in errs if runs[i].get("gpu") == gpu])
                       for gpu in sorted({runs[i].get("gpu") for i in errs})]
        for name, idx in groups:
            if idx:
                print(summary(name, [errs[i] for i in idx], signed="bias" in name))


def eval_runs():
    ev = list(csv.DictReader(open(os.path.join(EVAL, "runs.csv"))))
    for r in ev:
        r["_data"] = EVAL
    return ev


def select_runs(spec, runs):
    """`0,2,e7`: rows of the first set by index, `eN` rows of the evaluation set."""
    ev = eval_runs()
    return [ev[int(tok[1:])] if tok.startswith("e") else runs[int(tok)] for tok in spec.split(",")]


def held_out(first, fitted):
    """Every run the fit `fitted` left out: the first set's other rows and the whole
    evaluation set."""
    return [r for i, r in enumerate(first) if str(i) not in fitted] + \
        [r for i, r in enumerate(eval_runs()) if f"e{i}" not in fitted]


def replay_errors(kvplan, runs, cal, tmp):
    with concurrent.futures.ThreadPoolExecutor(os.cpu_count()) as pool:
        sims = list(pool.map(lambda r: simulate(kvplan, r, cal, tmp), runs))
    return [{k: (s[k] - measured(r)[k]) / measured(r)[k] for k in ("ttft", "itl", "e2e")} for r, s in zip(runs, sims)]


def accuracy_statements(kvplan, cal, spec, first, tmp):
    """What the calibration file says of its own error (reports print it beside the figures):
    the replay of every run the fit `spec` left out, worded with the measured numbers; and,
    for each other GPU the held-out runs cover, its own bias (efficiencies carried over).
    Returns the statements and each held-out run's signed errors (`held_out_errors`, the
    samples behind simulate's and size's error bars: planner/error_bars.h)."""
    held = held_out(first, spec.split(","))
    errs = replay_errors(kvplan, held, cal, tmp)
    rows = [{"run": ("e" if r["_data"] == EVAL else "") + r["id"], "gpu": r.get("gpu") or "h100-sxm",
             "moe": is_moe(r), "ttft": round(e["ttft"], 4), "tpot": round(e["itl"], 4), "e2e": round(e["e2e"], 4)}
            for r, e in zip(held, errs)]

    def mp(e, k):
        v = [abs(x[k]) for x in e]
        return f"{statistics.median(v):.0%}/{pctl(v, 0.9):.0%}"

    fit_gpu = "h100-sxm"
    on_fit_gpu = [e for r, e in zip(held, errs) if (r.get("gpu") or fit_gpu) == fit_gpu]
    # Short enough for one line of a report table; bench/ACCURACY.md has the detail.
    out = [{"scope": "all", "gpus": [fit_gpu],
            "text": f"{fit_gpu}: held-out abs. error on {len(on_fit_gpu)} measured vLLM runs, median/p90: "
                    f"ITL {mp(on_fit_gpu, 'itl')}, E2E {mp(on_fit_gpu, 'e2e')}, TTFT {mp(on_fit_gpu, 'ttft')} "
                    f"(bench/ACCURACY.md)"}]
    for gpu in sorted({r.get("gpu") for r in held} - {None, fit_gpu}):
        e = [x for r, x in zip(held, errs) if r.get("gpu") == gpu]
        itl = statistics.median(x["itl"] for x in e)
        out.append({"scope": "all", "gpus": [gpu],
                    "text": f"{gpu}: {len(e)} measured vLLM runs (efficiencies carried over from {fit_gpu}): "
                            f"ITL {abs(itl):.0%} {'below' if itl < 0 else 'above'} measured (median), "
                            f"E2E abs. error {mp(e, 'e2e')} median/p90 (bench/ACCURACY.md)"})
    return out, rows


def is_moe(run):
    cfg = json.load(open(os.path.join(run["_data"], run["model_config"])))
    cfg = cfg.get("text_config", cfg)
    return any(k in cfg for k in ("num_local_experts", "num_experts"))


def replay(kvplan, runs, sel, held, cal, tmp):
    """Prints one row per run; returns {index: {metric: signed relative error}}."""
    print(f"{'#':>2} {'run':<16} {'model':<28} {'tp':>2} {'mbt':>5}  "
          f"{'TTFT ms pred/meas':>20} {'err':>6}  {'ITL ms pred/meas':>18} {'err':>6}  "
          f"{'E2E ms pred/meas':>20} {'err':>6}")
    out = {}
    for i in sel:
        r = runs[i]
        s = simulate(kvplan, r, cal, tmp)
        m = measured(r)
        e = out[i] = {k: (s[k] - m[k]) / m[k] for k in ("ttft", "itl", "e2e")}
        mark = "*" if i in held else " "
        print(f"{i:>2}{mark}{r['id']:<16} {r['model'].split('/')[-1][:28]:<28} {r['tp']:>2} "
              f"{r['max_num_batched_tokens']:>5}  {s['ttft']:>9.1f}/{m['ttft']:<9.1f} {e['ttft']:>+6.0%}  "
              f"{s['itl']:>8.2f}/{m['itl']:<8.2f} {e['itl']:>+6.0%}  {s['e2e']:>9.0f}/{m['e2e']:<9.0f} "
              f"{e['e2e']:>+6.0%}")
    return out


def summary(name, errs, signed=False):
    text = f"{name}: |error| median / p90 (nearest rank) over {len(errs)} runs: " + ", ".join(
        f"{k.upper()} {statistics.median(abs(e[k]) for e in errs):.1%} / {pctl([abs(e[k]) for e in errs], 0.9):.1%}"
        for k in ("ttft", "itl", "e2e"))
    if signed:
        text += "; signed median " + ", ".join(
            f"{k.upper()} {statistics.median(e[k] for e in errs):+.1%}" for k in ("ttft", "itl", "e2e"))
    return text


# The runs the shipped serving overheads were fitted on (docs/calibration.md): the even
# rows of the first set. Everything else, the whole evaluation set included, is held out.
FITTED = "0,2,4,6,8,10,12"

# What `--check` holds the shipped profile to (bench/ACCURACY.md): the targets,
# median 10 % and p90 25 % of |error| in TTFT, ITL and E2E means, over every run the fit
# left out (the first set's odd rows and the whole evaluation set: other models, TP 8,
# A100 and L40S), so a change that loses them fails ctest.
CHECKS = [("ttft", 0.10, 0.25), ("itl", 0.10, 0.25), ("e2e", 0.10, 0.25)]


def check(kvplan, cal, tmp):
    first = list(csv.DictReader(open(os.path.join(DATA, "runs.csv"))))
    for r in first:
        r["_data"] = DATA
    held = held_out(first, FITTED.split(","))
    errs = replay_errors(kvplan, held, cal, tmp)
    failed = 0
    for metric, med_max, p90_max in CHECKS:
        v = [abs(e[metric]) for e in errs]
        med, p90 = statistics.median(v), pctl(v, 0.9)
        ok = med <= med_max and p90 <= p90_max
        failed += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {len(v)} held-out runs (both sets): {metric.upper()} "
              f"|error| median {med:.1%} (<= {med_max:.0%}), p90 {p90:.1%} (<= {p90_max:.0%})")
    return 1 if failed else 0

if __name__ == "__main__":
    main()
