"""The offline verifiers of an audit answer, run as an auditor runs them on a
saved answer and the saved answers of the versions its chain binds: the
service's module (`python -m chalicelib.domain.audit verify`), and the two
docs/audit.md shows, in Python and in JavaScript (node, on
docs/verify-audit.mjs: the file the page shows)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Optional

PROJECT_DIR = Path(__file__).resolve().parents[2]
AUDIT_PAGE = PROJECT_DIR / "docs" / "audit.md"
JS_VERIFIER = PROJECT_DIR / "docs" / "verify-audit.mjs"


def page_block(language: str) -> str:
    """The saved block of `language` docs/audit.md shows, without its `save as` line."""
    text = AUDIT_PAGE.read_text(encoding="utf-8")
    block = text.split(f"```{language}\n", 1)[1].split("```", 1)[0]
    return block.split("\n", 1)[1]


def saved(tmp_path: Path, document: Any, name: str = "audit.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(document, ensure_ascii=False), encoding="utf-8")
    return path


Versions = Sequence[dict[str, Any]]


def run_module(
    tmp_path: Path, document: Any, versions: Versions = ()
) -> subprocess.CompletedProcess[str]:
    """`python -m chalicelib.domain.audit verify FILE VERSION_FILE...`, from the project's root."""
    command = [sys.executable, "-m", "chalicelib.domain.audit", "verify"]
    return _run(command, tmp_path, document, versions)


def run_page_python(
    tmp_path: Path, document: Any, versions: Versions = ()
) -> subprocess.CompletedProcess[str]:
    """docs/audit.md's verify.py, saved as the page says and run."""
    script = tmp_path / "verify.py"
    script.write_text(page_block("python"), encoding="utf-8")
    return _run([sys.executable, str(script)], tmp_path, document, versions)


def run_javascript(
    tmp_path: Path, document: Any, versions: Versions = ()
) -> subprocess.CompletedProcess[str]:
    """docs/verify-audit.mjs, with node."""
    node = shutil.which("node")
    assert node, "the JavaScript verifier runs with node (Node.js 18 or later)"
    return _run([node, str(JS_VERIFIER)], tmp_path, document, versions)


def bound_versions(answer: dict[str, Any]) -> list[int]:
    """The versions whose definitions an audit answer's chain binds digests of:
    the genesis's and each move's (an auditor fetches their answers)."""
    records = [answer["genesis"], *answer["entries"]]
    found = {record.get("workflow_version", 1) for record in records}
    return sorted(found) if any("definition_digest" in record for record in records) else []


def verdicts(tmp_path: Path, document: Any, versions: Versions = ()) -> dict[str, bool]:
    """Whether each offline verifier finds the saved answer valid, given the
    saved answers of `versions`."""
    runs = {"module": run_module, "python": run_page_python, "javascript": run_javascript}
    found = {}
    for name, run in runs.items():
        done = run(tmp_path, document, versions)
        assert done.returncode in (0, 1), (name, done.stdout, done.stderr)
        found[name] = done.returncode == 0
    return found


def assert_agree(
    tmp_path: Path, answer: dict[str, Any], valid: Optional[bool] = None, versions: Versions = ()
) -> None:
    """The answer's own verdict (or `valid`, for an answer altered after it
    was given) is every offline verifier's, given the versions it binds."""
    verdict = answer["valid"] if valid is None else valid
    expected = {name: verdict for name in ("module", "python", "javascript")}
    assert verdicts(tmp_path, answer, versions) == expected


def _run(
    command: list[str], tmp_path: Path, document: Any, versions: Versions
) -> subprocess.CompletedProcess[str]:
    files = [saved(tmp_path, version, f"version-{at}.json") for at, version in enumerate(versions)]
    return subprocess.run(
        [*command, str(saved(tmp_path, document)), *map(str, files)],
        cwd=PROJECT_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
