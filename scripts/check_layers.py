#!/usr/bin/env python3
"""Fails when a source file includes what its folder may not (docs/ARCHITECTURE.md).

The rules are read from docs/ARCHITECTURE.md itself, so the picture and the check cannot
drift: the ```layers block lists, for each source folder, the folders or headers of the
project it may include and the third-party libraries it may use; the ```decides block
lists the functions that decide (plan, simulate, search), which reports/ must not call.
A folder always includes its own headers; tests/, bench/ and fuzz/ may include anything.

usage: check_layers.py [REPO_ROOT]          check the repository (default: this one)
       check_layers.py --self-test          check that violations are caught
Exit 0 when clean, 1 listing every violation as FILE:LINE: what.
"""
import os
import re
import shutil
import sys
import tempfile

SOURCE_EXT = (".h", ".hpp", ".cpp", ".cc", ".cu", ".cuh")
FREE_FOLDERS = {"tests", "bench", "fuzz", "build", "docs", "configs", "scripts"}
# Third-party libraries by the include paths they own.
THIRD_PARTY = {
    "yaml-cpp": re.compile(r"^yaml-cpp/"),
    "fmt": re.compile(r"^fmt/"),
    "nlohmann": re.compile(r"^nlohmann/"),
    "boost": re.compile(r"^boost/"),
    "eigen": re.compile(r"^(Eigen|unsupported/Eigen)/"),
    "doctest": re.compile(r"^doctest/"),
    "pybind11": re.compile(r"^pybind11/"),
    "httplib": re.compile(r"^httplib\.h$"),
    "cuda": re.compile(r"^(cuda|cublas|cublasLt|curand|cufft|nvml|nvrtc)\w*\.h$|^(cuda|thrust|cub)/"),
}
INCLUDE = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')


def read_blocks(doc_text):
    blocks = {}
    for name, body in re.findall(r"^```(layers|decides)\n(.*?)^```", doc_text, re.S | re.M):
        blocks[name] = [l.strip() for l in body.splitlines() if l.strip() and not l.strip().startswith("#")]
    if "layers" not in blocks or "decides" not in blocks:
        raise SystemExit("check_layers: docs/ARCHITECTURE.md has no ```layers or ```decides block")
    layers = {}
    for line in blocks["layers"]:
        folder, _, rest = line.partition(":")
        project, _, libs = rest.partition("|")
        layers[folder.strip()] = (
            {p.strip() for p in project.split(",") if p.strip()},
            {l.strip() for l in libs.split(",") if l.strip()},
        )
    decides = " ".join(blocks["decides"]).split()
    return layers, decides


def strip_comments_and_strings(text):
    text = re.sub(r"/\*.*?\*/", lambda m: "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r'R"(\w*)\(.*?\)\1"', lambda m: '""' + "\n" * m.group(0).count("\n"), text, flags=re.S)
    text = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)
    return re.sub(r"//[^\n]*", "", text)


def check(root):
    with open(os.path.join(root, "docs", "ARCHITECTURE.md"), encoding="utf-8") as f:
        layers, decides = read_blocks(f.read())
    # A call or construction, not a member function of the same name (v.capacity()).
    decide_call = re.compile(r"(?<![.\w>])(" + "|".join(map(re.escape, decides)) + r")\s*[({]")
    violations = []
    for folder in sorted(os.listdir(root)):
        path = os.path.join(root, folder)
        if not os.path.isdir(path) or folder.startswith(".") or folder in FREE_FOLDERS or folder.startswith("build"):
            continue
        files = [os.path.join(d, f) for d, _, fs in os.walk(path) for f in fs if f.endswith(SOURCE_EXT)]
        if not files:
            continue
        if folder not in layers:
            violations.append(f"{folder}/: a source folder missing from the layers table of docs/ARCHITECTURE.md")
            continue
        allowed, libs = layers[folder]
        for file in sorted(files):
            rel = os.path.relpath(file, root)
            with open(file, encoding="utf-8", errors="replace") as f:
                text = f.read()
            for no, line in enumerate(text.splitlines(), 1):
                m = INCLUDE.match(line)
                if not m:
                    continue
                kind, header = m.groups()
                top = header.split("/")[0]
                if kind == '"':
                    if top == folder or header in allowed or top in allowed:
                        continue
                    if os.path.isdir(os.path.join(root, top)) or "/" in header:
                        violations.append(f"{rel}:{no}: {folder}/ may not include \"{header}\"")
                    continue
                lib = next((name for name, rx in THIRD_PARTY.items() if rx.search(header)), None)
                if lib and lib not in libs:
                    violations.append(f"{rel}:{no}: {folder}/ may not use {lib} (<{header}>)")
            if folder == "reports":
                code = strip_comments_and_strings(text)
                for no, line in enumerate(code.splitlines(), 1):
                    m = decide_call.search(line)
                    if m and not line.lstrip().startswith("#"):
                        violations.append(f"{rel}:{no}: reports/ renders results; it may not call {m.group(1)}()")
    return violations


def self_test(root):
    """Plants one violation of each kind in a copy of the rules and expects each caught."""
    tmp = tempfile.mkdtemp(prefix="check_layers.")
    try:
        os.makedirs(os.path.join(tmp, "docs"))
        shutil.copy(os.path.join(root, "docs", "ARCHITECTURE.md"), os.path.join(tmp, "docs"))
        planted = {
            "planner/bad.h": '#include "io/config_io.h"\n',
            "sim/bad.cpp": "#include <fmt/format.h>\n",
            "cluster/bad.h": '#include "size/size.h"\n',
            "reports/bad.cpp": '// make_plan( in a comment is fine\nauto p = kvplan::make_plan(m, g, o, 1, 1);\n'
                               'auto n = v.capacity() + j["capacity"].size();\n',
            "gpu_validate/bad.cpp": "#include <yaml-cpp/yaml.h>\n",
            "newfolder/x.cpp": "int x;\n",
            "io/ok.cpp": '#include "planner/types.h"\n#include "planner/workload.h"\n#include <yaml-cpp/yaml.h>\n',
        }
        for rel, text in planted.items():
            os.makedirs(os.path.join(tmp, os.path.dirname(rel)), exist_ok=True)
            with open(os.path.join(tmp, rel), "w", encoding="utf-8") as f:
                f.write(text)
        got = check(tmp)
        want = ["cluster/bad.h:1:", "gpu_validate/bad.cpp:1:", "newfolder/", "planner/bad.h:1:", "reports/bad.cpp:2:", "sim/bad.cpp:1:"]
        ok = len(got) == len(want) and all(g.startswith(w) for g, w in zip(sorted(got), want))
        print("\n".join(got))
        print("check_layers self-test:", "ok" if ok else "FAILED (expected one violation in each of " + ", ".join(want) + ")")
        return 0 if ok else 1
    finally:
        shutil.rmtree(tmp)


def main(argv):
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test(argv[2] if len(argv) > 2 else here)
    root = argv[1] if len(argv) > 1 else here
    violations = check(root)
    for v in violations:
        print(v)
    print(f"check_layers: {len(violations)} violation(s) of docs/ARCHITECTURE.md's layers")
    return 1 if violations else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
