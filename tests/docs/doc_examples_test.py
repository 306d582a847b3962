#!/usr/bin/env python3
"""scripts/doc_examples.py on made-up outputs: `...` matching, and update keeping an
example's shape when the tool's output changes (new values, new lines between the shown
ones, a longer tail), refusing when a shown label is gone."""
import importlib.util
import pathlib
import sys

spec = importlib.util.spec_from_file_location(
    "doc_examples", pathlib.Path(__file__).resolve().parents[2] / "scripts" / "doc_examples.py")
de = importlib.util.module_from_spec(spec)
spec.loader.exec_module(de)

failures = 0


def check(name, got, want):
    global failures
    if got != want:
        failures += 1
        print(f"FAIL {name}:\n  got  {got!r}\n  want {want!r}")


out = ["head", "a: 1", "b: 2", "c: 3", "tail: 4"]
check("exact", de.matches(out, out), True)
check("one line differs", de.matches(["head", "a: 1", "b: 9", "c: 3", "tail: 4"], out), False)
check("lead elision", de.matches(["...", "c: 3", "tail: 4"], out), True)
check("lead elision must reach the end", de.matches(["...", "b: 2"], out), False)
check("trail elision", de.matches(["head", "a: 1", "..."], out), True)
check("middle elision", de.matches(["head", "  ...", "tail: 4"], out), True)
check("middle elision keeps order", de.matches(["tail: 4", "...", "head"], out), False)
check("no elision needs every line", de.matches(["head", "a: 1"], out), False)
check("empty block needs empty output", de.matches([], []), True)
check("empty block, some output", de.matches([], ["x"]), False)
check("elided run repeated later", de.matches(["...", "x", "..."], ["x", "y", "x"]), True)

# update: values change, a new line appears inside an elided part, the tail grows.
doc = ["...", "b: 2", "c: 3", "  ...", "tail: 4"]
new = ["head", "a: 10", "new line", "b: 20", "c: 30", "extra", "tail: 40", "footer"]
check("regenerate keeps elisions", de.regenerate(doc, new), ["...", "b: 20", "c: 30", "  ...", "tail: 40", "footer"])
check("regenerate result matches", de.matches(de.regenerate(doc, new), new), True)
# A block with no elision is the whole output.
check("regenerate whole", de.regenerate(["x"], ["y", "z"]), ["y", "z"])
# A head run with a trailing elision keeps its length.
check("regenerate head", de.regenerate(["h", "a: 1", "..."], ["h2", "a: 2", "b: 3"]), ["h2", "a: 2", "..."])
# A shown label that the new output no longer has cannot be placed.
check("regenerate refuses", de.regenerate(["...", "gone: 1"], ["head", "a: 1"]), None)

# Examples are the fenced blocks that start with the prompt; others are left alone.
text = "x\n```\n$ ./build/kvplan models\nname\n```\n```sh\n./scripts/build.sh\n```\n"
check("examples", de.examples(text), [(1, 4, "./build/kvplan models", ["name"])])

print("doc_examples_test: " + ("PASS" if failures == 0 else f"{failures} FAILED"))
sys.exit(1 if failures else 0)
