"""The build backend of `pip install .` (pyproject.toml), with the standard library only so
that it installs offline: no setuptools, wheel or scikit-build to fetch. It builds the
extension with the project's own CMake build (target _kvplan, python/CMakeLists.txt) for
the interpreter that runs pip, and packs a wheel of python/kvplan, the extension and the
catalog (configs/). The C++ build needs the packages scripts/install-deps.sh installs.

KVPLAN_WHEEL_BUILD_DIR=DIR packs the extension of an existing CMake build folder (built
for this interpreter) instead of configuring a new one.
"""

import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAME = "kvplan"


def _version():
    # One home for the version: CMakeLists.txt's project() line.
    with open(os.path.join(ROOT, "CMakeLists.txt"), encoding="utf-8") as f:
        m = re.search(r"project\(kvplan VERSION ([0-9.]+)", f.read())
    if not m:
        raise RuntimeError("kvplan_build: no `project(kvplan VERSION X)` in CMakeLists.txt")
    return m.group(1)


def _tag():
    py = f"cp{sys.version_info.major}{sys.version_info.minor}"
    return f"{py}-{py}-" + re.sub(r"[-.]", "_", sysconfig.get_platform())


def _dist_info():
    return f"{NAME}-{_version()}.dist-info"


def _metadata():
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\n"
            "Summary: Capacity planning for LLM serving: memory, capacity, latency and sizing\n"
            "Requires-Python: >=3.8\n")


def _wheel_file():
    return f"Wheel-Version: 1.0\nGenerator: kvplan_build\nRoot-Is-Purelib: false\nTag: {_tag()}\n"


def get_requires_for_build_wheel(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    path = os.path.join(metadata_directory, _dist_info())
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata())
    with open(os.path.join(path, "WHEEL"), "w", encoding="utf-8") as f:
        f.write(_wheel_file())
    return _dist_info()


def _run(cmd):
    print("kvplan_build: " + " ".join(cmd), file=sys.stderr, flush=True)
    try:
        subprocess.run(cmd, check=True, stdout=sys.stderr)
    except (OSError, subprocess.CalledProcessError) as e:
        raise RuntimeError(f"kvplan_build: {cmd[0]} failed ({e}); the C++ build needs cmake, ninja and the "
                           "packages scripts/install-deps.sh installs (pybind11-dev and python3-dev included)") from e


def _extension(build_dir):
    """The extension for this interpreter, built in build_dir (configured when empty)."""
    if not os.path.exists(os.path.join(build_dir, "CMakeCache.txt")):
        _run(["cmake", "-S", ROOT, "-B", build_dir, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
              "-DKVPLAN_TESTS=OFF", "-DKVPLAN_BENCH=OFF", "-DKVPLAN_CUDA=OFF", "-DKVPLAN_PYTHON=ON",
              f"-DPython_EXECUTABLE={sys.executable}"])
    _run(["cmake", "--build", build_dir, "--target", "_kvplan"])
    ext = os.path.join(build_dir, "python", NAME, "_kvplan" + sysconfig.get_config_var("EXT_SUFFIX"))
    if not os.path.isfile(ext):
        raise RuntimeError(f"kvplan_build: no {ext}: the build folder's Python is not {sys.executable} "
                           "(or pybind11-dev / python3-dev are missing: see cmake's 'python:' line)")
    return ext


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    given = os.environ.get("KVPLAN_WHEEL_BUILD_DIR")
    scratch = None if given else tempfile.mkdtemp(prefix="kvplan-wheel-")
    try:
        ext = _extension(os.path.abspath(given) if given else scratch)
        files = [(os.path.join(ROOT, "python", NAME, "__init__.py"), f"{NAME}/__init__.py"),
                 (ext, f"{NAME}/{os.path.basename(ext)}")]
        configs = os.path.join(ROOT, "configs")
        for d, _, names in sorted(os.walk(configs)):
            for n in sorted(names):
                src = os.path.join(d, n)
                files.append((src, f"{NAME}/configs/" + os.path.relpath(src, configs).replace(os.sep, "/")))
        wheel = f"{NAME}-{_version()}-{_tag()}.whl"
        record = []
        with zipfile.ZipFile(os.path.join(wheel_directory, wheel), "w", zipfile.ZIP_DEFLATED) as z:
            def add(arcname, data):
                z.writestr(arcname, data)
                digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
                record.append(f"{arcname},sha256={digest},{len(data)}")
            for src, arcname in files:
                with open(src, "rb") as f:
                    add(arcname, f.read())
            add(f"{_dist_info()}/METADATA", _metadata().encode())
            add(f"{_dist_info()}/WHEEL", _wheel_file().encode())
            record.append(f"{_dist_info()}/RECORD,,")
            z.writestr(f"{_dist_info()}/RECORD", "\n".join(record) + "\n")
        return wheel
    finally:
        if scratch:
            shutil.rmtree(scratch, ignore_errors=True)
