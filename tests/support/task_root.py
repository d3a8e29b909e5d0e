"""A deployment package's modules imported as Lambda's runtime imports them:
from the unzipped bundle (its task root), in a fresh interpreter that writes
no bytecode, counting what the interpreter compiles on the way."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Imports `modules` from the task root first, then prints the value of each
# module's VALUE (None where it has none) and every file the interpreter
# compiled from source on the way.
IMPORT_AND_COUNT = """
import importlib, json, sys
import importlib._bootstrap_external as external
task_root, modules = sys.argv[1], sys.argv[2:]
sys.path.insert(0, task_root)
compiled = []
source_to_code = external.SourceLoader.source_to_code
def counted(self, data, path, *, _optimize=-1):
    compiled.append(path)
    return source_to_code(self, data, path, _optimize=_optimize)
external.SourceLoader.source_to_code = counted
values = [getattr(importlib.import_module(name), "VALUE", None) for name in modules]
print(json.dumps({"values": values, "compiled": compiled}))
"""


def cold_import(task_root: Path, *modules: str) -> dict[str, list]:
    """What importing `modules` from `task_root` gives, in a fresh interpreter
    that writes no bytecode (-B), as on Lambda."""
    done = subprocess.run(
        [sys.executable, "-B", "-c", IMPORT_AND_COUNT, str(task_root), *modules],
        capture_output=True,
        text=True,
        check=True,
    )
    answer: dict[str, list] = json.loads(done.stdout)
    return answer
