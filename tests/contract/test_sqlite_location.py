"""Where the SQLite file is: WORKFLOW_SQLITE_PATH, or, when the variable is
unset (`make run` and `chalice local` without it), workflows.sqlite3 in a
folder of the clone's own in the user's data directory: outside the project,
whose every file chalice local's reloader watches."""

from __future__ import annotations

import contextlib
import os
import shutil
import sqlite3
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Optional

from tests.support.processes import PROJECT_DIR, command_env

# Defines a workflow on the storage the environment names, from another directory.
DEFINE = (
    "import sys\n"
    "from chalicelib import engine\n"
    "from chalicelib.storage import create_storage\n"
    "engine.create_workflow(create_storage(), sys.argv[1], steps=['A'])\n"
)


def checkout(at: Path) -> Path:
    """The service's code, copied to `at`, as a clone elsewhere would hold it."""
    shutil.copytree(
        PROJECT_DIR / "chalicelib", at / "chalicelib", ignore=shutil.ignore_patterns("__pycache__")
    )
    return at


def define_from(
    project: Path, cwd: Path, sqlite_path: Optional[Path] = None, name: str = "W", **variables: str
) -> None:
    """DEFINE (of workflow `name`) run from `cwd` on `project`'s code, naming
    `sqlite_path` (None: no file)."""
    env = command_env(cwd, PYTHONPATH=str(project), **variables)
    del env["WORKFLOW_SQLITE_PATH"]
    if sqlite_path is not None:
        env["WORKFLOW_SQLITE_PATH"] = str(sqlite_path)
    subprocess.run([sys.executable, "-c", DEFINE, name], cwd=cwd, env=env, check=True)


def clone_folder(project: Path) -> str:
    real = os.path.realpath(project)
    return f"{project.name}-{zlib.crc32(real.encode()):08x}"


def files_in(folder: Path) -> list[Path]:
    return sorted(path for path in folder.rglob("*") if path.is_file())


def test_without_a_path_the_file_is_in_the_clones_folder_of_the_data_directory(
    tmp_path: Path,
) -> None:
    project = checkout(tmp_path / "project")
    code = files_in(project)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    data = tmp_path / "data"

    define_from(project, elsewhere, XDG_DATA_HOME=str(data))

    assert (data / "approval-workflows" / clone_folder(project) / "workflows.sqlite3").is_file()
    # Nothing written into the project (chalice local would restart), nor where it ran.
    assert [path for path in files_in(project) if "__pycache__" not in path.parts] == code
    assert list(elsewhere.iterdir()) == []


def test_without_a_data_directory_it_is_the_one_under_home(tmp_path: Path) -> None:
    project = checkout(tmp_path / "project")
    home = tmp_path / "home"

    define_from(project, tmp_path, HOME=str(home), XDG_DATA_HOME="relative/is/ignored")

    folder = home / ".local" / "share" / "approval-workflows" / clone_folder(project)
    assert (folder / "workflows.sqlite3").is_file()


def test_one_clone_keeps_one_file_and_another_clone_its_own(tmp_path: Path) -> None:
    first, second = checkout(tmp_path / "one" / "project"), checkout(tmp_path / "two" / "project")
    data = tmp_path / "data"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()

    define_from(first, tmp_path / "a", name="From a", XDG_DATA_HOME=str(data))
    define_from(first, tmp_path / "b", name="From b", XDG_DATA_HOME=str(data))
    define_from(second, tmp_path / "a", name="Another clone", XDG_DATA_HOME=str(data))

    def names(project: Path) -> list[str]:
        path = data / "approval-workflows" / clone_folder(project) / "workflows.sqlite3"
        with contextlib.closing(sqlite3.connect(path)) as db:
            return [name for (name,) in db.execute("SELECT name FROM workflows ORDER BY id")]

    assert names(first) == ["From a", "From b"]
    assert names(second) == ["Another clone"]


def test_a_named_path_is_used_as_it_is(tmp_path: Path) -> None:
    project = checkout(tmp_path / "project")
    named = tmp_path / "named" / "w.sqlite3"
    data = tmp_path / "data"
    define_from(project, tmp_path, named, XDG_DATA_HOME=str(data))
    assert named.is_file()
    assert not (project / ".data").exists()
    assert not data.exists()
