"""kvplan from Python: the CLI's plan, simulate and size, in process (docs/python.md).

Each function takes the command's options as keyword arguments, named as the CLI names
them with dashes as underscores (kv_cache_dtype="fp8" is --kv-cache-dtype fp8), and
returns the JSON document `kvplan COMMAND ... --format json` prints, as a dict. A value
is written as the CLI reads it: numbers and strings as they are, a list or tuple as a
comma list (tp=[1, 2] is --tp 1,2), True as a bare switch (find_max_rate=True), None as
the option left out. Bad input raises kvplan.InputError (a ValueError) with the message
the CLI prints before exiting 2.
"""

import json
import os

# The catalog (configs/) ships inside the package; an explicit KVPLAN_DATA_DIR wins.
_HERE = os.path.dirname(os.path.abspath(__file__))
if os.path.isdir(os.path.join(_HERE, "configs")):
    os.environ.setdefault("KVPLAN_DATA_DIR", _HERE)

from ._kvplan import InputError  # noqa: E402
from ._kvplan import catalog as _catalog  # noqa: E402
from ._kvplan import run as _run  # noqa: E402

__all__ = ["InputError", "plan", "simulate", "size", "records", "to_dataframe", "models", "gpus", "workloads"]

# The document comes back as a dict: options that choose the output have no meaning here.
_OUTPUT_OPTIONS = {"format", "output", "o", "force", "help", "h"}


def _args(options):
    args = []
    for key, value in options.items():
        flag = "--" + key.replace("_", "-")
        if key in _OUTPUT_OPTIONS:
            raise InputError(f"python: key '{flag}': expected an option of the command (the document is returned "
                             f"as a dict), got {value!r}")
        if value is None:
            continue
        if value is True:
            args.append(flag)
            continue
        if value is False:
            raise InputError(f"python: key '{flag}': expected True for a switch or 'off' for an on|off option "
                             f"(leave an option out for its default), got False")
        if isinstance(value, (list, tuple)):
            value = ",".join(str(v) for v in value)
        # Two words, as typed at the shell, so that every message reads as the CLI's.
        args += [flag, str(value)]
    return args + ["--format", "json"]


def plan(**options):
    """`kvplan plan`: memory, capacity, FLOPs and step times; {"schema": "kvplan.plan/1", "rows": [...]}."""
    return json.loads(_run("plan", _args(options)))


def simulate(**options):
    """`kvplan simulate`: a workload through the simulated engine; {"schema": "kvplan.sim/1", ...}."""
    return json.loads(_run("simulate", _args(options)))


def size(**options):
    """`kvplan size`: the cheapest deployments meeting the workload's SLO; {"schema": "kvplan.size/1", ...}."""
    return json.loads(_run("size", _args(options)))


def _flatten(row, prefix=""):
    out = {}
    for key, value in row.items():
        if isinstance(value, dict):
            out.update(_flatten(value, prefix + key + "."))
        else:
            out[prefix + key] = value
    return out


def records(doc):
    """A document's rows as flat dicts, nested keys joined by dots as in the CLI's CSV
    ("memory.kv_bytes_per_token"): plan's rows, size's options, or the one simulation."""
    schema = doc.get("schema", "")
    if schema.startswith("kvplan.plan/"):
        rows = doc["rows"]
    elif schema.startswith("kvplan.size/"):
        rows = doc["options"]
    elif schema.startswith("kvplan.sim/"):
        rows = [doc]
    else:
        raise ValueError(f"expected a kvplan.plan, kvplan.sim or kvplan.size document, got schema {schema!r}")
    return [_flatten(row) for row in rows]


def to_dataframe(doc):
    """records(doc) as a pandas DataFrame, one row each."""
    try:
        import pandas
    except ImportError as e:
        raise ImportError("kvplan.to_dataframe needs pandas (Debian: python3-pandas); "
                          "kvplan.records(doc) gives the same rows as dicts") from e
    return pandas.DataFrame(records(doc))


def models():
    """The model catalog's names (`kvplan models`)."""
    return _catalog("models")


def gpus():
    """The GPU catalog's names (`kvplan gpus`)."""
    return _catalog("gpus")


def workloads():
    """The workload catalog's names (configs/workloads)."""
    return _catalog("workloads")
