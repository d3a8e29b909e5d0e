"""The page's lists of the state machine's names are held by TypeScript's
checker to chalicelib/ui/types.js (which tests/unit/test_lifecycle.py holds to
the domain): a name changed there fails `make lint` on every list that spells
it. Here, not in the unit tier: the checker takes seconds."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[2]
TSC = PROJECT_DIR / "node_modules" / ".bin" / "tsc"


def test_a_name_changed_in_the_page_s_types_fails_its_lists(tmp_path: Path) -> None:
    assert TSC.exists(), "make lint installs the page's checkers (npm ci)"
    shutil.copytree(PROJECT_DIR / "chalicelib" / "ui", tmp_path / "chalicelib" / "ui")
    shutil.copy(PROJECT_DIR / "tsconfig.json", tmp_path)
    (tmp_path / "node_modules").symlink_to(PROJECT_DIR / "node_modules")
    types_js = tmp_path / "chalicelib" / "ui" / "types.js"
    source = types_js.read_text(encoding="utf-8")
    union = '"approve" | "reject" | "return" | "resubmit" | "cancel"'
    assert source.count(union) == 1
    types_js.write_text(source.replace(union, union.replace("return", "send_back")))

    done = subprocess.run(
        [str(TSC), "-p", "tsconfig.json"], cwd=tmp_path, capture_output=True, text=True
    )

    assert done.returncode != 0
    failed = {line.split("(")[0] for line in done.stdout.splitlines() if "'return'" in line}
    # The words of each action (run.js, timeline.js), and the decisions' forms.
    assert {"chalicelib/ui/run.js", "chalicelib/ui/timeline.js"} <= failed, done.stdout
