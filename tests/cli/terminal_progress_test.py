#!/usr/bin/env python3
"""Progress lines as a person sees them on a terminal (issue 26: long runs show progress).

Runs the real binary with stderr on a pseudo-terminal (what a shell gives it) and reads
back what the terminal received: `simulate --find-max-rate` and `size` print carriage-
return progress lines on stderr and end them with a summary line; with stderr a pipe (a
script, CI) they print none; stdout, the report, never holds a progress line.
usage: terminal_progress_test.py KVPLAN_BINARY   (run from the repository root)
"""
import os
import pty
import subprocess
import sys
import tempfile


def run(args, tty):
    """(stdout, stderr as the terminal or pipe received it, exit code)."""
    if not tty:
        p = subprocess.run(args, capture_output=True, text=True, check=False)
        return p.stdout, p.stderr, p.returncode
    master, slave = pty.openpty()
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=slave, text=True)
    os.close(slave)
    received = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the child closed its end
            break
        if not chunk:
            break
        received += chunk
    out, _ = p.communicate()
    os.close(master)
    return out, received.decode("utf-8"), p.returncode


def main():
    kvplan = sys.argv[1]
    failures = []

    def check(cond, what):
        if not cond:
            failures.append(what)

    sim = [kvplan, "simulate", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--engine", "vllm",
           "--workload", "chat", "--find-max-rate", "--max-rate-seeds", "2"]
    out, err, code = run(sim, tty=True)
    check(code == 0, f"simulate on a terminal exits 0 (got {code}: {err[-300:]})")
    check("\rmax rate, seed 0: run 1; meets the SLO at" in err or "\rmax rate, seed 0: run 1; misses" in err,
          "the first probe of seed 0 is shown")
    check("\rmax rate, seed 1: run 1" in err, "the second seed's search is shown")
    lines = err.replace("\r", "\n").split("\n")
    done = [l for l in lines if l.startswith("simulated ") and " runs in " in l]
    check(len(done) == 1, f"one closing line 'simulated N runs in T s' (got {done})")
    check(err.endswith("\n"), "the terminal is left on a fresh line")
    check("\r" not in out and "max rate, seed" not in out, "the report on stdout holds no progress line")
    check("max rate" in out, "the report itself is printed")

    out_pipe, err_pipe, code = run(sim, tty=False)
    check(code == 0, "simulate with stderr a pipe exits 0")
    check("max rate, seed" not in err_pipe and "\r" not in err_pipe, "no progress when stderr is not a terminal")
    # (but for the simulator's own wall time)
    same = lambda text: [l for l in text.splitlines() if not l.startswith("wall ")]
    check(same(out_pipe) == same(out), "the report is the same with or without a terminal")

    with tempfile.TemporaryDirectory() as d:
        size = [kvplan, "size", "--model", "llama-3-8b", "--gpus", "h100-sxm", "--workload", "chat",
                "--requests", "2000", "-o", os.path.join(d, "size.txt")]
        _, err, code = run(size, tty=True)
        check(code == 0, f"size on a terminal exits 0 (got {code}: {err[-300:]})")
        check("\rsizing [" in err and " candidates" in err, "size shows its candidates bar")
        check("\rsized " in err and err.endswith("\n"), "size ends its bar with the summary line")

    for f in failures:
        print("FAIL:", f)
    print(f"terminal_progress: {'ok' if not failures else str(len(failures)) + ' failed'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
