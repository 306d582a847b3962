"""Every flag of `vllm serve`, `python -m sglang.launch_server` and `trtllm-serve` is read by kvplan: modelled, noted or
refused with its reason, never "an unknown flag" nor read with the wrong number of
arguments.

tests/data/engine_flags/ENGINE.txt lists the flags of the engine's parser (its sources are
named there) with an example of their arguments. Each is pasted after the server command
and its model on its own; kvplan must exit 0 (modelled or noted; a note names the flag)
or 2 with a reason of its own (refused, or a value it checks), and the engine's table in
docs/server-command.md must list the flag.
Usage: server_command_flags_test.py KVPLAN_BINARY
"""

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

KVPLAN = os.path.abspath(sys.argv[1])
MODEL = "tests/data/hf_configs/meta-llama--Meta-Llama-3.1-8B.json"
# What kvplan says when it does not know a flag, or reads its arguments differently from
# the engine's parser (a list cut short, a boolean given a value, a value missing).
MISREAD = ("an unknown flag", "an unexpected argument", "(it takes no value)", "a value after the flag")


# engine: (the command before the model, the program as notes name it, the docs section of
# its table, the heading after it)
ENGINES = {
    "vllm": (["vllm", "serve"], "vllm serve", "### vllm", "### sglang"),
    "sglang": (["python", "-m", "sglang.launch_server", "--model-path"], "python -m sglang.launch_server",
               "### sglang", "### trtllm"),
    "trtllm": (["trtllm-serve"], "trtllm-serve", "### trtllm", "## Config files"),
}


def flags(engine):
    with open(f"tests/data/engine_flags/{engine}.txt", encoding="utf-8") as f:
        return [line.split() for line in f if line.startswith("--")]


def documented(engine):
    """The flags named in the first column of the engine's table in docs/server-command.md."""
    _, _, start, end = ENGINES[engine]
    with open("docs/server-command.md", encoding="utf-8") as f:
        text = f.read()
    table = text[text.index(start):text.index(end)]
    names = set()
    for line in table.splitlines():
        if line.startswith("| `--"):
            first = line.split("|")[1]
            names.update(w.strip("`(),") for w in first.split() if w.strip("`(),").startswith("--"))
    return names


def run(engine, words):
    p = subprocess.run([KVPLAN, "plan", "--gpu", "h100-sxm", "--", *ENGINES[engine][0], MODEL, *words],
                       capture_output=True, text=True, check=False)
    return words, p.returncode, p.stderr


def check(engine, failures):
    listed = flags(engine)
    program = ENGINES[engine][1]
    docs = documented(engine)
    for words in listed:
        if words[0] not in docs:
            failures.append(f"{program} {words[0]}: not in docs/server-command.md's {engine} table")
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda w: run(engine, w), listed))
    counts = {"modelled": 0, "noted": 0, "refused": 0}
    for words, code, err in results:
        shown = program + " MODEL " + " ".join(words)
        if code not in (0, 2):
            failures.append(f"{shown}: exit {code}: {err.strip()}")
        elif any(m in err for m in MISREAD):
            failures.append(f"{shown}: misread: {err.strip()}")
        elif code == 2:
            counts["refused"] += 1
        elif f"kvplan: note: {program} {words[0]}" in err:
            counts["noted"] += 1
        else:
            counts["modelled"] += 1
    print(f"server_command_flags_test: {len(listed)} flags of {program}: {counts['modelled']} modelled, "
          f"{counts['noted']} noted, {counts['refused']} refused or checked (exit 2)")


def main():
    failures = []
    for engine in ENGINES:
        check(engine, failures)
    for f in failures:
        print("server_command_flags_test: FAIL: " + f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    os.chdir(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    sys.exit(main())
