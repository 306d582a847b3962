"""Replays the published serving runs of tests/data/calibration/public (runs.csv, sources
in SOURCES.md there) through `kvplan simulate` with each run's settings, and prints
predicted / measured / error per run and, per (GPU, engine, load shape) group and per
split, the median and p90 (nearest rank) of |error| with the signed median.

Used by `scripts/accuracy.py --public` (and `--public --validate`, which only checks the
table). A run kvplan cannot express is skipped with the reason printed; closed-loop runs
(a client concurrency cap) need `simulate --max-concurrency`, and are skipped until the
binary has it.
"""
import csv
import json
import math
import os
import random
import re
import statistics
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PUBLIC = os.path.join(ROOT, "tests", "data", "calibration", "public")

COLUMNS = ["id", "source", "source_url", "source_date", "engine", "engine_version", "gpu", "gpus", "tp", "dp", "ep",
           "model", "quantization", "kv_cache_dtype", "dataset", "length_convention", "input_len", "output_len",
           "range_ratio", "prefix_len", "num_prompts", "warmup_requests", "max_concurrency", "request_rate",
           "max_num_seqs", "max_num_batched_tokens", "max_model_len", "gpu_memory_utilization", "prefix_caching",
           "stream_interval", "batch_wait_timeout_iters", "batch_wait_max_tokens_ratio",
           "ttft_mean_ms", "ttft_median_ms", "ttft_p99_ms", "tpot_mean_ms", "tpot_median_ms", "tpot_p99_ms",
           "itl_mean_ms", "itl_median_ms", "itl_p99_ms", "request_throughput_per_s", "output_tok_per_s",
           "total_tok_per_s", "output_tok_per_s_per_gpu", "total_tok_per_s_per_gpu", "generated_tokens", "split", "note"]
MEASURED = COLUMNS[COLUMNS.index("ttft_mean_ms"):COLUMNS.index("generated_tokens")]
ENGINES = ("vllm", "sglang", "trtllm")


def runs():
    with open(os.path.join(PUBLIC, "runs.csv"), newline="") as f:
        return list(csv.DictReader(f))


def load_shape(run):
    """closed: the client keeps at most max_concurrency requests in flight (vllm bench
    --max-concurrency); burst: every request sent at once (rate inf, no cap); open:
    Poisson arrivals at request_rate (vllm bench's default burstiness 1)."""
    if run["max_concurrency"]:
        return "closed"
    return "burst" if run["request_rate"] == "inf" else "open"


def length_range(length, ratio, convention):
    """Inclusive [lo, hi] the client draws a length from, uniformly.
    vllm: vllm bench serve's random dataset, [floor(L (1 - r)), ceil(L (1 + r))]
      (vllm/benchmarks/datasets.py, RandomDataset.get_sampling_params; it also takes the
      tokenizer's special tokens off the input, 1 for a BOS, which is not modelled here);
    sa: InferenceX's utils/bench_serving/benchmark_serving.py sample_random_requests,
      [int(L r), L] (one-sided: r = 0.8 draws 80-100 % of L)."""
    if convention == "vllm":
        return math.floor(length * (1 - ratio)), math.ceil(length * (1 + ratio))
    if convention == "sa":
        return int(length * ratio), length
    raise ValueError(f"length_convention '{convention}': expected vllm or sa")


def as_vllm_random(lo, hi):
    """The (length, range ratio) of vllm bench's symmetric convention that draws from
    [lo, hi]: centre (lo + hi) / 2 rounded to a token, ratio (hi - lo) / (2 centre)."""
    centre = round((lo + hi) / 2)
    return centre, (hi - lo) / (2 * centre)


def validate(rows):
    """Errors in the table: missing columns, unknown catalog entries, missing model files,
    impossible parallel shapes, rows without a measurement or a source section."""
    errors = []
    # The length conventions, worked by hand: InferenceX at ISL 1024, r 0.8 draws
    # int(1024 x 0.8) = 819 .. 1024; vllm bench at 1000, r 0.1 draws floor(900.0) ..
    # ceil(1100.0); [819, 1024] in vllm's form is centre round(921.5) = 922 (round half
    # to even), ratio 205 / 1844 = 0.11117.
    for got, want in ((length_range(1024, 0.8, "sa"), (819, 1024)), (length_range(1000, 0.1, "vllm"), (900, 1100)),
                      (length_range(2048, 0.0, "vllm"), (2048, 2048))):
        if got != want:
            errors.append(f"length_range: {got}, expected {want}")
    centre, ratio = as_vllm_random(819, 1024)
    if centre != 922 or abs(ratio - 205 / 1844) > 1e-12:
        errors.append(f"as_vllm_random(819, 1024): {centre}, {ratio}; expected 922, {205 / 1844}")
    sources = open(os.path.join(PUBLIC, "SOURCES.md")).read()
    ids = set()
    for r in rows:
        where = f"runs.csv {r.get('id') or '?'}"
        missing = [c for c in COLUMNS if c not in r]
        if missing:
            errors.append(f"{where}: missing columns {missing}")
            continue
        if r["id"] in ids:
            errors.append(f"{where}: duplicate id")
        ids.add(r["id"])
        if r["engine"] not in ENGINES:
            errors.append(f"{where}: engine '{r['engine']}' is not one of {ENGINES}")
        if not os.path.exists(os.path.join(ROOT, "configs", "gpus", r["gpu"] + ".yaml")):
            errors.append(f"{where}: gpu '{r['gpu']}' is not in configs/gpus")
        if not os.path.exists(os.path.join(ROOT, r["model"])):
            errors.append(f"{where}: model file '{r['model']}' does not exist")
        tp, dp, gpus = int(r["tp"]), int(r["dp"] or 1), int(r["gpus"])
        if tp * dp != gpus:
            errors.append(f"{where}: gpus {gpus} != tp {tp} x dp {dp}")
        try:
            length_range(int(r["input_len"]), float(r["range_ratio"]), r["length_convention"])
        except ValueError as e:
            errors.append(f"{where}: {e}")
        if not r["max_concurrency"] and not r["request_rate"]:
            errors.append(f"{where}: neither max_concurrency nor request_rate")
        if not any(r[c] for c in MEASURED):
            errors.append(f"{where}: no measured value")
        if r["batch_wait_timeout_iters"] and not r["batch_wait_timeout_iters"].isdigit():
            errors.append(f"{where}: batch_wait_timeout_iters '{r['batch_wait_timeout_iters']}': "
                          "expected an integer >= 0 or empty")
        if r["batch_wait_max_tokens_ratio"] and not (re.fullmatch(r"[0-9]+(\.[0-9]+)?", r["batch_wait_max_tokens_ratio"])
                                                     and float(r["batch_wait_max_tokens_ratio"]) <= 1):
            errors.append(f"{where}: batch_wait_max_tokens_ratio '{r['batch_wait_max_tokens_ratio']}': "
                          "expected a number in [0, 1] or empty")
        if (r["batch_wait_timeout_iters"] or r["batch_wait_max_tokens_ratio"]) and r["engine"] != "trtllm":
            errors.append(f"{where}: batch waiting is TensorRT-LLM's (engine '{r['engine']}')")
        if r["stream_interval"] and not (r["stream_interval"].isdigit() and int(r["stream_interval"]) >= 1):
            errors.append(f"{where}: stream_interval '{r['stream_interval']}': expected an integer >= 1 or empty")
        if r["split"] not in ("fit", "held-out"):
            errors.append(f"{where}: split '{r['split']}': expected fit or held-out")
        if f"`{r['source']}`" not in sources:
            errors.append(f"{where}: source '{r['source']}' has no section in SOURCES.md")
        if r["source_url"] not in sources:
            errors.append(f"{where}: source_url not cited in SOURCES.md")
    return errors


def simulate_help(kvplan):
    return subprocess.run([kvplan, "simulate", "--help"], capture_output=True, text=True).stdout


def has_flag(help_text, flag):
    return re.search(r"(^|\s)" + re.escape(flag) + r"(\s|$)", help_text, re.M) is not None


def lengths_yaml(key, lo, hi):
    if lo == hi:
        return f"{key}: {{dist: fixed, value: {lo}}}"
    return f"{key}: {{dist: uniform, min: {lo}, max: {hi}}}"


def output_range(run):
    """The output lengths to replay, and a note when they are not the client's setting: a
    run without --ignore-eos generated fewer tokens than asked (generated_tokens); a
    fixed-length run then replays the measured mean, generated / num_prompts."""
    lo, hi = length_range(int(run["output_len"]), float(run["range_ratio"]), run["length_convention"])
    n = int(run["num_prompts"])
    if run["generated_tokens"] and lo == hi and int(run["generated_tokens"]) != n * lo:
        mean = round(int(run["generated_tokens"]) / n)
        return (mean, mean), f"output {mean} = {run['generated_tokens']} generated / {n} (asked {lo})"
    return (lo, hi), None


def workload(run, tmp):
    """The open-loop or burst workload file (a closed loop is carried by flags)."""
    ratio, conv = float(run["range_ratio"]), run["length_convention"]
    ilo, ihi = length_range(int(run["input_len"]), ratio, conv)
    (olo, ohi), _ = output_range(run)
    prefix, n = int(run["prefix_len"] or 0), int(run["num_prompts"])
    lines = [f"name: public-{run['id']}", f"source: tests/data/calibration/public/runs.csv {run['id']}",
             f"requests: {n}"]
    if load_shape(run) == "open":
        lines.append(f"arrival: {{process: poisson, rate_per_s: {run['request_rate']}}}")
        lines += [lengths_yaml("prompt_tokens", ilo, ihi), lengths_yaml("output_tokens", olo, ohi)]
        if prefix:
            # vllm bench's random prefix is one token string in front of every prompt: one
            # group whose users each send one request (docs/workloads.md shared_prefix).
            lines += ["shared_prefix:", "  groups: 1", f"  users_per_group: {n}",
                      f"  system_prompt_tokens: {prefix}", "  multi_turn: false"]
    else:
        # All requests at t = 0: a trace of one instant. Lengths drawn as the client draws
        # them (uniform on its range), seeded so the replay is repeatable.
        rng = random.Random(0)
        trace = os.path.join(tmp, f"{run['id']}.csv")
        with open(trace, "w") as f:
            f.write("arrival_s,prompt_tokens,output_tokens\n")
            for _ in range(n):
                f.write(f"0,{prefix + rng.randint(ilo, ihi)},{rng.randint(olo, ohi)}\n")
        lines += [f"trace: {trace}", "arrival: {process: trace}", "prompt_tokens: {dist: trace}",
                  "output_tokens: {dist: trace}"]
    path = os.path.join(tmp, f"{run['id']}.yaml")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")
    return path


def command(kvplan, run, calibration, help_text, tmp):
    """(argv, notes) for the run, or (None, reason) when kvplan cannot express it."""
    notes = []
    cmd = [kvplan, "simulate", "--model", os.path.join(ROOT, run["model"]), "--gpu", run["gpu"],
           "--tp", run["tp"], "--format", "json", "--calibration", calibration or "none"]
    if load_shape(run) == "closed":
        if not has_flag(help_text, "--max-concurrency"):
            return None, "needs --max-concurrency (not in `kvplan simulate --help`)"
        ratio, conv = float(run["range_ratio"]), run["length_convention"]
        ilen, iratio = as_vllm_random(*length_range(int(run["input_len"]), ratio, conv))
        olen, oratio = as_vllm_random(*output_range(run)[0])
        if abs(iratio - oratio) > 1e-3:
            return None, "input and output ranges need different range ratios (one --random-range-ratio)"
        # The client's lengths as a workload (docs/workloads.md `random:`); with --rate inf
        # its arrival rate is not used.
        path = os.path.join(tmp, f"{run['id']}.yaml")
        with open(path, "w") as f:
            f.write(f"name: public-{run['id']}\nrequests: {run['num_prompts']}\narrival: {{process: poisson, rate_per_s: 1}}\n"
                    f"random: {{input_len: {ilen}, output_len: {olen}, range_ratio: {iratio:.6f}, "
                    f"prefix_len: {run['prefix_len'] or 0}}}\n")
        cmd += ["--workload", path]
        cmd += ["--max-concurrency", run["max_concurrency"], "--rate", "inf", "--requests", run["num_prompts"],
                "--random-input-len", str(ilen), "--random-output-len", str(olen),
                "--random-range-ratio", f"{iratio:.6f}", "--random-prefix-len", run["prefix_len"] or "0"]
        # The client's warm-up is a phase of its own: InferenceX's benchmark_serving.py
        # (`benchmark`, `--num-warmups`) awaits every warm-up request (asyncio.gather)
        # before the timed run, which then starts with max_concurrency requests at once
        # and measures that ramp-up. kvplan's --warmup-requests drops the first finished
        # requests of one continuous loop instead (docs/workloads.md "Warm-up"), which
        # removes the ramp-up the client measured. With prefix caching off the drained
        # warm-up leaves nothing behind, so the replay sends none.
        if int(run["warmup_requests"] or 0) and run["prefix_caching"] != "off":
            return None, "warm-up requests with prefix caching on (their cached prompt is not replayed)"
        if conv != "vllm":
            notes.append(f"lengths {conv} r={ratio} as vllm {ilen}/{olen} r={iratio:.3f}")
    else:
        cmd += ["--workload", workload(run, tmp)]
        why = output_range(run)[1]
        if why:
            notes.append(why)
    # Every engine here chunks prefills into the token budget; the per-engine scheduler
    # (`--scheduler auto`) replaces this where the binary has it.
    cmd += ["--scheduler", "auto" if "auto" in help_text.split("--scheduler", 1)[1].split("\n  --", 1)[0] else "chunked"]
    if int(run["dp"] or 1) > 1:
        cmd += ["--data-parallel-size", run["dp"]]
    if int(run["ep"] or 1) > 1:
        cmd += ["--expert-parallel-size", run["ep"]]
    for col, flag in (("quantization", "--quantization"), ("kv_cache_dtype", "--kv-cache-dtype")):
        if run[col] and run[col] != "auto":
            cmd += [flag, run[col]]
    for col, flag in (("max_num_seqs", "--max-num-seqs"), ("max_num_batched_tokens", "--max-num-batched-tokens"),
                      ("max_model_len", "--max-model-len"), ("gpu_memory_utilization", "--gpu-memory-utilization")):
        if run[col]:
            cmd += [flag, run[col]]
    cmd += ["--enable-prefix-caching", run["prefix_caching"] or "on"]
    # The server's --stream-interval / stream_interval (empty: the engine's default, 1).
    if run["stream_interval"]:
        if not has_flag(help_text, "--stream-interval"):
            return None, "needs --stream-interval (not in `kvplan simulate --help`)"
        cmd += ["--stream-interval", run["stream_interval"]]
    # TensorRT-LLM's batch_wait_timeout_iters / batch_wait_max_tokens_ratio (empty: off).
    for col in ("batch_wait_timeout_iters", "batch_wait_max_tokens_ratio"):
        if run[col]:
            flag = "--" + col.replace("_", "-")
            if not has_flag(help_text, flag):
                return None, f"needs {flag} (not in `kvplan simulate --help`)"
            cmd += [flag, run[col]]
    return cmd, notes


def engine_attempts(run):
    """(--engine value, note) in the order tried: the release as recorded, the engine's
    default release (kvplan refuses releases it does not model), then the engine-neutral
    budget (kvplan refuses an engine's accounting for some models). The note says which
    was used."""
    e, v = run["engine"], run["engine_version"]
    out = []
    if re.fullmatch(r"[0-9]+\.[0-9]+(\.[0-9A-Za-z.]+)?", v):
        out.append((f"{e}@{v}", None))
        out.append((e, f"kvplan models no {e} {v}: its default {e} release"))
    else:
        out.append((e, f"{e} {v} is no release: kvplan's default {e} release"))
    out.append(("ideal", f"kvplan refuses {e} accounting for this model: engine-neutral budget"))
    return out


def simulate(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def predicted(stdout, run):
    j = json.loads(stdout)
    row = j["rows"][0] if "rows" in j else j
    lat, thr, gpus = row["latency"], row["throughput"], int(run["gpus"])
    out = {"ttft_mean_ms": lat["ttft_s"]["mean"] * 1e3, "ttft_median_ms": lat["ttft_s"]["p50"] * 1e3,
           "ttft_p99_ms": lat["ttft_s"]["p99"] * 1e3, "tpot_mean_ms": lat["tpot_s"]["mean"] * 1e3,
           "tpot_median_ms": lat["tpot_s"]["p50"] * 1e3, "tpot_p99_ms": lat["tpot_s"]["p99"] * 1e3,
           "request_throughput_per_s": thr["requests_per_s"], "output_tok_per_s": thr["output_tokens_per_s"],
           "total_tok_per_s": thr["output_tokens_per_s"] + thr["prompt_tokens_per_s"]}
    # The client's mean ITL, one gap per streamed chunk (a client run reports it); else, one
    # token per chunk over fixed output lengths, vllm bench's mean ITL is its mean TPOT.
    out["itl_mean_ms"] = lat["itl_s"]["mean"] * 1e3 if "itl_s" in lat else out["tpot_mean_ms"]
    out["output_tok_per_s_per_gpu"] = out["output_tok_per_s"] / gpus
    out["total_tok_per_s_per_gpu"] = out["total_tok_per_s"] / gpus
    return out


# The three figures the summary holds each run to, in order of preference of what was
# published: the mean, else the median; output throughput whole or per GPU.
HEADLINE = {"TTFT": ("ttft_mean_ms", "ttft_median_ms"), "TPOT": ("tpot_mean_ms", "tpot_median_ms", "itl_mean_ms"),
            "tput": ("output_tok_per_s", "output_tok_per_s_per_gpu", "request_throughput_per_s")}


def headline(run, pred):
    out = {}
    for name, cols in HEADLINE.items():
        for c in cols:
            if run[c]:
                m = float(run[c])
                out[name] = (pred[c], m, (pred[c] - m) / m, c)
                break
    return out


def pctl(values, q):
    """Nearest rank."""
    v = sorted(values)
    k = max(1, math.ceil(q * len(v)))
    return v[min(len(v), k) - 1]


def group_line(name, results):
    parts = []
    for metric in HEADLINE:
        e = [r[metric][2] for r in results if metric in r]
        if e:
            a = [abs(x) for x in e]
            parts.append(f"{metric} {statistics.median(a):.1%} / {pctl(a, 0.9):.1%} (signed {statistics.median(e):+.1%}, n={len(e)})")
    return f"{name}: |error| median / p90, signed median: " + ("; ".join(parts) if parts else "no measured figure")


def run(kvplan, calibration, only_validate=False):
    rows = runs()
    errors = validate(rows)
    for e in errors:
        print(f"FAIL {e}")
    if errors or only_validate:
        if not errors:
            print(f"ok   {len(rows)} public runs: columns, catalog GPUs, model files, parallel shapes, sources; "
                  "length conventions")
        return 1 if errors else 0
    help_text = simulate_help(kvplan)
    shown = os.path.relpath(calibration, ROOT) if calibration and calibration.startswith(ROOT) else calibration
    print(f"calibration: {shown or 'none (datasheet roofline)'}")
    print(f"{'run':<40} {'shape':<6} {'split':<8} {'TTFT ms pred/meas':>20} {'err':>6}  {'TPOT ms pred/meas':>17} "
          f"{'err':>6}  {'tput pred/meas':>17} {'err':>6}")
    done, skipped = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in rows:
            cmd, notes = command(kvplan, r, calibration, help_text, tmp)
            if cmd is None:
                skipped.append((r, notes))
                continue
            i = cmd.index("--model")
            result = None
            for engine, why in engine_attempts(r):
                rc, out, err = simulate(cmd[:i] + ["--engine", engine] + cmd[i:])
                if rc == 0:
                    result = out
                    if why:
                        notes.append(why)
                    break
                if "'--engine'" not in err:
                    break
            if result is None:
                skipped.append((r, f"kvplan simulate refused it: {err.strip().splitlines()[-1] if err.strip() else rc}"))
                continue
            j = json.loads(result)
            req = (j["rows"][0] if "rows" in j else j)["requests"]
            if req["completed"] == 0:
                skipped.append((r, f"kvplan simulate rejected every request ({req['rejected_pool']} longer than its "
                                   f"KV pool, {req['rejected_max_model_len']} at max-model-len)"))
                continue
            if req["rejected"]:
                notes.append(f"kvplan rejected {req['rejected']} of {req['arrived']} requests")
            h = headline(r, predicted(result, r))
            h["_run"], h["_notes"] = r, notes
            done.append(h)
            cells = []
            for metric, width in (("TTFT", 9), ("TPOT", 8), ("tput", 8)):
                if metric in h:
                    p, m, e, _ = h[metric]
                    cells.append(f"{p:>{width}.1f}/{m:<{width}.1f} {e:>+6.0%}")
                else:
                    cells.append(f"{'-':>{2 * width + 1}} {'':>6}")
            print(f"{r['id'][:40]:<40} {load_shape(r):<6} {r['split']:<8} {cells[0]:>27}  {cells[1]:>24}  {cells[2]:>24}"
                  + (f"  ({'; '.join(notes)})" if notes else ""))
    for r, why in skipped:
        print(f"skipped {r['id']} ({load_shape(r)}, {r['gpu']}, {r['engine']} {r['engine_version']}): {why}")
    if done:
        groups = {}
        for h in done:
            r = h["_run"]
            groups.setdefault(f"{r['gpu']} / {r['engine']} / {load_shape(r)}", []).append(h)
        for name in sorted(groups):
            print(group_line(name, groups[name]))
        for split in ("fit", "held-out"):
            sel = [h for h in done if h["_run"]["split"] == split]
            if sel:
                print(group_line(f"all {split}", sel))
    print(f"{len(done)} of {len(rows)} public runs replayed, {len(skipped)} skipped")
    return 0
