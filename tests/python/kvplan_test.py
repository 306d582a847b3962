"""The Python binding (python/kvplan): values worked by hand, and the documents plan(),
simulate() and size() return equal to what the CLI prints for the same options, errors
included. Usage: kvplan_test.py KVPLAN_BINARY (the kvplan package on PYTHONPATH)."""

import json
import subprocess
import sys
import unittest

import kvplan

KVPLAN = sys.argv.pop(1) if len(sys.argv) > 1 else "build/kvplan"

# Llama-3-8B (meta-llama/Meta-Llama-3-8B config.json): 32 layers, 8 KV heads, head size
# 4096 / 32 = 128, bf16. KV bytes per token = 2 (K and V) x 32 x 8 x 128 x 2 bytes.
LLAMA3_8B_KV_BYTES_PER_TOKEN = 2 * 32 * 8 * 128 * 2  # 131,072


def cli(*args):
    """(exit code, stdout, stderr) of the kvplan binary."""
    p = subprocess.run([KVPLAN, *args], capture_output=True, text=True, check=False)
    return p.returncode, p.stdout, p.stderr


def cli_json(*args):
    code, out, err = cli(*args, "--format", "json")
    assert code == 0, err
    return json.loads(out)


def without_wall_clock(doc):
    """A simulation's document less the two figures that time the run itself."""
    doc = json.loads(json.dumps(doc))
    for key in ("wall_s", "tokens_per_wall_s"):
        doc["sim"].pop(key)
    return doc


class HandWorked(unittest.TestCase):
    def test_kv_bytes_per_token(self):
        row = kvplan.plan(model="llama-3-8b", gpu="h100-sxm", context=4096)["rows"][0]
        self.assertEqual(row["memory"]["kv_bytes_per_token"], LLAMA3_8B_KV_BYTES_PER_TOKEN)
        # One 4,096-token request, before block rounding: 131,072 x 4,096 = 2^29 bytes.
        self.assertEqual(row["memory"]["kv_bytes_per_request"], 2**29)
        self.assertEqual(row["context_tokens"], 4096)

    def test_fp8_cache_halves_it(self):
        row = kvplan.plan(model="llama-3-8b", gpu="h100-sxm", kv_cache_dtype="fp8")["rows"][0]
        self.assertEqual(row["memory"]["kv_bytes_per_token"], LLAMA3_8B_KV_BYTES_PER_TOKEN // 2)

    def test_list_expands_to_rows(self):
        doc = kvplan.plan(model="llama-3-8b", gpu="h100-sxm", tp=[1, 2])
        self.assertEqual([r["tp"] for r in doc["rows"]], [1, 2])
        # The cache is sharded by heads: per token, the whole model's bytes do not change.
        self.assertEqual({r["memory"]["kv_bytes_per_token"] for r in doc["rows"]}, {LLAMA3_8B_KV_BYTES_PER_TOKEN})

    def test_records_flatten_as_the_csv(self):
        rows = kvplan.records(kvplan.plan(model="llama-3-8b", gpu="h100-sxm", tp=[1, 2]))
        self.assertEqual(len(rows), 2)
        self.assertEqual(rows[1]["tp"], 2)
        self.assertEqual(rows[0]["memory.kv_bytes_per_token"], LLAMA3_8B_KV_BYTES_PER_TOKEN)
        with self.assertRaises(ValueError):
            kvplan.records({"schema": "other/1"})

    def test_to_dataframe(self):
        doc = kvplan.plan(model="llama-3-8b", gpu="h100-sxm", tp=[1, 2])
        try:
            import pandas  # noqa: F401
        except ImportError:
            with self.assertRaisesRegex(ImportError, "needs pandas"):
                kvplan.to_dataframe(doc)
            return
        df = kvplan.to_dataframe(doc)
        self.assertEqual(list(df["tp"]), [1, 2])
        self.assertEqual(list(df["memory.kv_bytes_per_token"]), [LLAMA3_8B_KV_BYTES_PER_TOKEN] * 2)

    def test_catalog(self):
        self.assertIn("llama-3-8b", kvplan.models())
        self.assertIn("h100-sxm", kvplan.gpus())
        self.assertIn("chat", kvplan.workloads())


class SameAsTheCli(unittest.TestCase):
    def test_plan(self):
        for kwargs, args in [
            ({"model": "llama-3-8b", "gpu": "h100-sxm"}, ["--model", "llama-3-8b", "--gpu", "h100-sxm"]),
            ({"model": "llama-3.1-70b", "gpu": "h100-sxm", "tp": 4, "kv_cache_dtype": "fp8", "context": [8192, 32768],
              "batch": 16, "engine": "sglang"},
             ["--model", "llama-3.1-70b", "--gpu", "h100-sxm", "--tp", "4", "--kv-cache-dtype", "fp8", "--context",
              "8192,32768", "--batch", "16", "--engine", "sglang"]),
            ({"model": "llama-3-8b", "gpu": "l40s", "gpu_memory_utilization": 0.85, "quantization": "fp8",
              "no_kv_cache": None}, ["--model", "llama-3-8b", "--gpu", "l40s", "--gpu-memory-utilization", "0.85",
                                     "--quantization", "fp8"]),
        ]:
            with self.subTest(args=args):
                self.assertEqual(kvplan.plan(**kwargs), cli_json("plan", *args))

    def test_simulate(self):
        got = kvplan.simulate(model="llama-3-8b", gpu="h100-sxm", workload="chat", requests=300, seed=3)
        want = cli_json("simulate", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--workload", "chat",
                        "--requests", "300", "--seed", "3")
        self.assertEqual(without_wall_clock(got), without_wall_clock(want))
        self.assertEqual(got["requests"]["arrived"], 300)

    def test_size(self):
        got = kvplan.size(model="llama-3-8b", workload="chat", gpus="h100-sxm,l40s", evaluator="planner")
        want = cli_json("size", "--model", "llama-3-8b", "--workload", "chat", "--gpus", "h100-sxm,l40s",
                        "--evaluator", "planner")
        self.assertEqual(got, want)
        self.assertTrue(got["options"])


class ErrorsAsTheCli(unittest.TestCase):
    def assert_same_error(self, command, kwargs, args):
        code, out, err = cli(command, *args)
        self.assertEqual(code, 2, err)
        self.assertEqual(out, "")
        with self.assertRaises(kvplan.InputError) as caught:
            getattr(kvplan, command)(**kwargs)
        self.assertEqual("kvplan: error: " + str(caught.exception) + "\n", err)

    def test_bad_inputs(self):
        base = {"model": "llama-3-8b", "gpu": "h100-sxm"}
        base_args = ["--model", "llama-3-8b", "--gpu", "h100-sxm"]
        cases = [
            ({"tp": 0}, ["--tp", "0"]),
            ({"context": "4,096"}, ["--context", "4,096"]),
            ({"context": 10**7}, ["--context", str(10**7)]),
            ({"kv_cache_dtype": "fp7"}, ["--kv-cache-dtype", "fp7"]),
            ({"no_such_option": 1}, ["--no-such-option", "1"]),
            ({"gpu_memory_utilization": 1.5}, ["--gpu-memory-utilization", "1.5"]),
        ]
        for extra, extra_args in cases:
            with self.subTest(args=extra_args):
                self.assert_same_error("plan", {**base, **extra}, base_args + extra_args)
        self.assert_same_error("plan", {"model": "no-such-model", "gpu": "h100-sxm"},
                               ["--model", "no-such-model", "--gpu", "h100-sxm"])
        self.assert_same_error("simulate", {**base, "workload": "chat", "rate": "fast"},
                               base_args + ["--workload", "chat", "--rate", "fast"])

    def test_input_error_is_a_value_error(self):
        self.assertTrue(issubclass(kvplan.InputError, ValueError))

    def test_python_only_refusals(self):
        for kwargs in ({"format": "table"}, {"output": "x.json"}, {"no_kv_cache": False}):
            with self.subTest(kwargs=kwargs), self.assertRaises(kvplan.InputError):
                kvplan.plan(model="llama-3-8b", gpu="h100-sxm", **kwargs)


if __name__ == "__main__":
    unittest.main(verbosity=2)
