#!/usr/bin/env python3
"""Checks (or rewrites) the example outputs printed in README.md and docs/*.md.

An example is a fenced code block whose first line is `$ ./build/kvplan ...`: the rest of
the block is what that command prints on stdout, byte for byte. A line holding only `...`
(any indentation) stands for any number of lines, so an example may show the lines that
matter and elide the rest.

  doc_examples.py check  --kvplan BUILD/kvplan   exit 1 listing every example that differs
  doc_examples.py update --kvplan BUILD/kvplan   rewrite the blocks from the tool's output

Each command runs with the binary given, from a scratch folder that links every top-level
entry of the repository (so `configs/...` paths resolve and files the command writes, such
as `--report report.html`, land in the scratch folder, not in the repository).

update keeps each example's shape: the lines shown before, between and after the `...`
markers. A run of shown lines is found again in the new output where it matches exactly,
else at the first later line with the same label (the text before the first run of two
spaces, ': ' or ' ('), and the same number of lines is taken from there; the last run,
when no `...` follows it, takes the output to its end. An example whose labels cannot be
found is left as it was and reported: edit that block by hand, then run update again.
Review the diff (`git diff README.md docs/`) before committing.
"""
import argparse
import os
import pathlib
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
PROMPT = "$ ./build/kvplan "
FENCE = re.compile(r"^(`{3,})")


def documents():
    docs = sorted((ROOT / "docs").glob("*.md"))
    return [ROOT / "README.md"] + docs


def is_marker(line):
    return line.strip() == "..."


def examples(text):
    """(first line index, last line index (the closing fence), command, expected lines)."""
    lines = text.split("\n")
    out = []
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        fence = m.group(1)
        j = i + 1
        while j < len(lines) and not lines[j].startswith(fence):
            j += 1
        body = lines[i + 1:j]
        if body and body[0].startswith(PROMPT):
            out.append((i, j, body[0][2:], body[1:]))
        i = j + 1
    return out


def run(command, kvplan, scratch):
    # `./build/kvplan` in the document is the binary under test.
    argv = command.replace("./build/kvplan", str(kvplan), 1)
    p = subprocess.run(["bash", "-c", argv], cwd=scratch, capture_output=True, text=True, timeout=900,
                       env=dict(os.environ, COLUMNS="200"))
    if p.returncode != 0:
        raise RuntimeError(f"exit {p.returncode}: {p.stderr.strip()}")
    return p.stdout.rstrip("\n").split("\n") if p.stdout else []


def segments(expected):
    """Runs of shown lines and whether `...` comes before the first and after the last."""
    runs, cur = [], []
    for line in expected:
        if is_marker(line):
            runs.append(cur)
            cur = []
        else:
            cur.append(line)
    runs.append(cur)
    lead, trail = not runs[0], not runs[-1]
    return [r for r in runs if r], lead, trail


def matches(expected, actual):
    if not expected:
        return not actual
    runs, lead, trail = segments(expected)
    if not runs:
        return True

    def at(k, pos):
        r = runs[k]
        first, last = k == 0, k == len(runs) - 1
        starts = [0] if first and not lead else range(pos, len(actual) - len(r) + 1)
        for p in starts:
            if actual[p:p + len(r)] != r:
                continue
            if last:
                if trail or p + len(r) == len(actual):
                    return True
            elif at(k + 1, p + len(r)):
                return True
        return False

    return at(0, 0)


def label(line):
    return re.split(r"\s{2,}|: | \(", line.strip(), maxsplit=1)[0]


def regenerate(expected, actual):
    """The block's new lines with the same elisions, or None when a run cannot be placed."""
    runs, lead, trail = segments(expected)
    if not runs or (not lead and not trail and len(runs) == 1):
        return actual
    markers = [line for line in expected if is_marker(line)]
    new, pos = [], 0
    for k, r in enumerate(runs):
        first, last = k == 0, k == len(runs) - 1
        at = next((p for p in range(pos, len(actual) - len(r) + 1) if actual[p:p + len(r)] == r), None)
        if at is None and first and not lead:
            at = 0
        if at is None:
            at = next((p for p in range(pos, len(actual)) if label(actual[p]) == label(r[0])), None)
        if at is None:
            return None
        take = actual[at:] if last and not trail else actual[at:at + len(r)]
        if k > 0 or lead:
            new.append(markers.pop(0) if markers else "...")
        new.extend(take)
        pos = at + len(take)
    if trail:
        new.append(markers.pop(0) if markers else "...")
    return new


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("mode", choices=["check", "update"])
    ap.add_argument("--kvplan", required=True, help="the kvplan binary to run")
    ap.add_argument("files", nargs="*", help="documents (default: README.md and docs/*.md)")
    args = ap.parse_args()
    kvplan = pathlib.Path(args.kvplan).resolve()
    files = [pathlib.Path(f).resolve() for f in args.files] or documents()
    failures, count = [], 0
    for doc in files:
        text = doc.read_text(encoding="utf-8")
        lines = text.split("\n")
        changed = False
        # Bottom-up, so replacing a block keeps the earlier blocks' line numbers.
        for start, end, command, expected in reversed(examples(text)):
            count += 1
            where = f"{doc.relative_to(ROOT)}:{start + 1}: {command}"
            scratch = tempfile.mkdtemp(prefix="kvplan_doc_")
            try:
                for entry in ROOT.iterdir():
                    if not entry.name.startswith(".") and not entry.name.startswith("build"):
                        os.symlink(entry, pathlib.Path(scratch) / entry.name)
                actual = run(command, kvplan, scratch)
            except (RuntimeError, subprocess.TimeoutExpired) as e:
                failures.append(f"{where}\n  the command failed: {e}")
                continue
            finally:
                shutil.rmtree(scratch, ignore_errors=True)
            if args.mode == "check":
                if not matches(expected, actual):
                    failures.append(f"{where}\n  documented:\n    " + "\n    ".join(expected) +
                                    "\n  printed:\n    " + "\n    ".join(actual))
                continue
            if matches(expected, actual):
                continue
            new = regenerate(expected, actual)
            if new is None:
                failures.append(f"{where}\n  cannot place the shown lines in the new output: edit the block by hand")
                continue
            lines[start + 2:end] = new
            changed = True
            print(f"updated {where}")
        if changed:
            doc.write_text("\n".join(lines), encoding="utf-8")
    for f in failures:
        print(f"doc_examples: {args.mode}: {f}", file=sys.stderr)
    print(f"doc_examples: {count} examples, {len(failures)} " +
          ("differ from the tool" if args.mode == "check" else "left to edit by hand"), file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
