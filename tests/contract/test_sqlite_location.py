"""Where the SQLite file is: WORKFLOW_SQLITE_PATH, or .data/workflows.sqlite3 in
the project when the variable is unset (`make run` without it)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

from tests.support.processes import PROJECT_DIR, command_env

# Defines a workflow on the storage the environment names, from another directory.
DEFINE = (
    "from chalicelib import engine\n"
    "from chalicelib.storage import create_storage\n"
    "engine.create_workflow(create_storage(), 'W', steps=['A'])\n"
)


def checkout(at: Path) -> Path:
    """The service's code, copied to `at`, as a clone elsewhere would hold it."""
    shutil.copytree(
        PROJECT_DIR / "chalicelib", at / "chalicelib", ignore=shutil.ignore_patterns("__pycache__")
    )
    return at


def define_from(project: Path, cwd: Path, sqlite_path: Optional[Path] = None) -> None:
    """DEFINE run from `cwd` on `project`'s code, naming `sqlite_path` (None: no file)."""
    env = command_env(cwd, PYTHONPATH=str(project))
    del env["WORKFLOW_SQLITE_PATH"]
    if sqlite_path is not None:
        env["WORKFLOW_SQLITE_PATH"] = str(sqlite_path)
    subprocess.run([sys.executable, "-c", DEFINE], cwd=cwd, env=env, check=True)


def test_without_a_path_the_file_is_in_the_projects_data_directory(tmp_path: Path) -> None:
    project = checkout(tmp_path / "project")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    define_from(project, elsewhere)
    assert (project / ".data" / "workflows.sqlite3").is_file()
    assert list(elsewhere.iterdir()) == []


def test_a_named_path_is_used_as_it_is(tmp_path: Path) -> None:
    project = checkout(tmp_path / "project")
    named = tmp_path / "named" / "w.sqlite3"
    define_from(project, tmp_path, named)
    assert named.is_file()
    assert not (project / ".data").exists()
