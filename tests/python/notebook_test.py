"""Runs the ```python blocks of a Markdown file in order, in one namespace, as a notebook
runs its cells, and checks each printed output against the ```text block that follows
the cell (when one does). A cell whose first line is `# needs pandas` runs only where
pandas imports; it and its output are skipped otherwise (the skip is printed).
Usage: notebook_test.py FILE.md [FILE.md ...] (the kvplan package on PYTHONPATH)."""

import contextlib
import io
import re
import sys

FENCE = re.compile(r"^```(\w*)\n(.*?)^```\n", re.S | re.M)


def cells(text):
    """[(code, expected output or None)] of the file's python blocks."""
    blocks = [(m.group(1), m.group(2), m.start(), m.end()) for m in FENCE.finditer(text)]
    out = []
    for i, (lang, body, _, end) in enumerate(blocks):
        if lang != "python":
            continue
        nxt = blocks[i + 1] if i + 1 < len(blocks) else None
        expected = nxt[1] if nxt and nxt[0] == "text" and not text[end:nxt[2]].strip() else None
        out.append((body, expected))
    return out


def main(files):
    try:
        import pandas  # noqa: F401
        have_pandas = True
    except ImportError:
        have_pandas = False
    failures = 0
    for path in files:
        with open(path, encoding="utf-8") as f:
            found = cells(f.read())
        if not found:
            print(f"notebook_test: FAIL: {path} has no ```python block")
            return 1
        namespace = {"__name__": "__notebook__"}
        for n, (code, expected) in enumerate(found, 1):
            if code.startswith("# needs pandas") and not have_pandas:
                print(f"notebook_test: {path} cell {n}: skipped (pandas is not installed)")
                continue
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                exec(compile(code, f"{path} cell {n}", "exec"), namespace)  # noqa: S102
            if expected is not None and printed.getvalue() != expected:
                failures += 1
                print(f"notebook_test: FAIL: {path} cell {n} printed\n{printed.getvalue()}"
                      f"where the document shows\n{expected}")
        print(f"notebook_test: {path}: {len(found)} cells run")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
