"""The deployment package ships its modules compiled (scripts/package.py's
add_bytecode): Lambda's task root is read-only, so a bundle of sources alone is
compiled again on every cold start.

Each test runs the bundle as Lambda's runtime would: unzipped, in a fresh
interpreter that writes no bytecode, and counts what the interpreter compiles
(tests/support/task_root.py).
"""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest

from scripts import package
from tests.support.task_root import cold_import

RUNTIME = f"python{sys.version_info.major}.{sys.version_info.minor}"
TAG = sys.implementation.cache_tag


def small_bundle(path: Path) -> Path:
    """A bundle as chalice writes one: sources, a data file, and a stale .pyc
    from the working tree (of a module that no longer exists)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("handler.py", "from lib import part\nVALUE = part.VALUE + 1\n")
        bundle.writestr("lib/__init__.py", "")
        bundle.writestr("lib/part.py", "VALUE = 41\n")
        bundle.writestr("lib/data.json", '{"kept": true}')
        bundle.writestr(f"lib/__pycache__/gone.{TAG}.pyc", b"stale")
    return path


def test_every_module_gets_its_bytecode_and_the_stale_files_go(tmp_path: Path) -> None:
    bundle = small_bundle(tmp_path / "deployment.zip")
    assert package.add_bytecode(bundle, RUNTIME) == 3
    names = set(zipfile.ZipFile(bundle).namelist())
    assert names == {
        "handler.py",
        "lib/__init__.py",
        "lib/part.py",
        "lib/data.json",
        f"__pycache__/handler.{TAG}.pyc",
        f"lib/__pycache__/__init__.{TAG}.pyc",
        f"lib/__pycache__/part.{TAG}.pyc",
    }
    with zipfile.ZipFile(bundle) as shipped:
        assert shipped.read("lib/data.json") == b'{"kept": true}'
        pyc = shipped.read(f"lib/__pycache__/part.{TAG}.pyc")
    # PEP 552: this interpreter's magic number, hash-based and checked, the source's hash.
    assert pyc[:4] == importlib.util.MAGIC_NUMBER
    assert int.from_bytes(pyc[4:8], "little") == 0b11
    assert pyc[8:16] == importlib.util.source_hash(b"VALUE = 41\n")


def test_a_cold_start_from_the_bundle_compiles_nothing(tmp_path: Path) -> None:
    bundle = small_bundle(tmp_path / "deployment.zip")
    zipfile.ZipFile(bundle).extractall(tmp_path / "sources")
    # As chalice bundles it: every module is compiled on the way in.
    before = cold_import(tmp_path / "sources", "handler")
    assert before["values"] == [42] and len(before["compiled"]) == 3
    package.add_bytecode(bundle, RUNTIME)
    zipfile.ZipFile(bundle).extractall(tmp_path / "task")
    assert cold_import(tmp_path / "task", "handler") == {"values": [42], "compiled": []}


def test_a_source_changed_after_packaging_is_what_runs(tmp_path: Path) -> None:
    # Checked-hash bytecode: a source edited in the unzipped bundle is compiled
    # and run, never the bytecode of what it was.
    assert package.add_bytecode(small_bundle(tmp_path / "deployment.zip"), RUNTIME) == 3
    zipfile.ZipFile(tmp_path / "deployment.zip").extractall(tmp_path / "task")
    (tmp_path / "task" / "lib" / "part.py").write_text("VALUE = 99\n")
    answer = cold_import(tmp_path / "task", "handler")
    assert answer["values"] == [100]
    assert answer["compiled"] == [str(tmp_path / "task" / "lib" / "part.py")]


def test_bytecode_for_another_python_is_refused_and_the_bundle_left_alone(
    tmp_path: Path,
) -> None:
    bundle = small_bundle(tmp_path / "deployment.zip")
    before = bundle.read_bytes()
    with pytest.raises(RuntimeError, match=r"python3\.9.*would not load"):
        package.add_bytecode(bundle, "python3.9")
    assert bundle.read_bytes() == before


def functions_running(*runtimes: str) -> dict[str, Any]:
    """A template whose functions run `runtimes`, one each."""
    return {
        "Resources": {
            f"Function{index}": {
                "Type": "AWS::Serverless::Function",
                "Properties": {"Runtime": runtime},
            }
            for index, runtime in enumerate(runtimes)
        }
    }


def test_the_bytecode_is_for_the_one_runtime_every_function_runs() -> None:
    assert package.function_runtime(functions_running(RUNTIME, RUNTIME)) == RUNTIME
    with pytest.raises(RuntimeError, match="one runtime"):
        package.function_runtime(functions_running(RUNTIME, "python3.12"))
