"""The state machine's names are defined once (chalicelib/domain/lifecycle.py):
every other place that names them is made from them or held to them, and
fails its check when one changes."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

from chalicelib.domain.lifecycle import ActionKind, OnDeadline, RunStatus
from chalicelib.storage.sqlite.adapter import SQLiteStorage
from tests.support import lifecycle_places as places

PROJECT_DIR = Path(__file__).resolve().parents[2]
LIFECYCLE = "chalicelib/domain/lifecycle.py"
NAMES = {str(member) for kinds in (ActionKind, RunStatus, OnDeadline) for member in kinds}
# Literals that spell a name but mean something else.
ELSEWHERE = {
    # The Prefer header's `return` preference (RFC 7240: return=minimal).
    ("chalicelib/api/http.py", "return"),
}


def test_the_openapi_document_names_them_as_the_domain_does() -> None:
    document = json.loads((PROJECT_DIR / "chalicelib/openapi.json").read_text(encoding="utf-8"))
    assert places.openapi_problems(document) == []


def test_the_page_s_types_name_them_as_the_domain_does() -> None:
    """types.js, which TypeScript's checker holds the page's lists to."""
    types_js = (PROJECT_DIR / "chalicelib/ui/types.js").read_text(encoding="utf-8")
    assert places.page_problems(types_js) == []


def test_a_new_sqlite_file_checks_the_names_of_the_domain(tmp_path: Path) -> None:
    storage = SQLiteStorage(str(tmp_path / "new.sqlite3"))
    storage.list_workflows(None, 1)
    storage.close()
    import sqlite3

    with sqlite3.connect(tmp_path / "new.sqlite3") as conn:
        schema = [sql for (sql,) in conn.execute("SELECT sql FROM sqlite_master") if sql]
    conn.close()
    assert places.sqlite_problems(schema) == []


def test_each_name_is_written_once_in_the_service() -> None:
    """As a literal, in app.py and chalicelib/, only in lifecycle.py: every
    other module names the member."""
    written: dict[str, list[str]] = {}
    for path in sorted([PROJECT_DIR / "app.py", *(PROJECT_DIR / "chalicelib").rglob("*.py")]):
        where = str(path.relative_to(PROJECT_DIR))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Constant) or node.value not in NAMES:
                continue
            if (where, node.value) not in ELSEWHERE:
                written.setdefault(node.value, []).append(where)
    assert written == {name: [LIFECYCLE] for name in sorted(NAMES)}


# Put a lifecycle module whose RETURN is named "send_back" in the domain's
# place, then check every place as the tests above do: the SQLite schema made
# from it, the CHECKs of a file made before (sys.argv[1]), the document, the page.
RENAMED = """
import json, sys, types
from pathlib import Path
source = Path("chalicelib/domain/lifecycle.py").read_text(encoding="utf-8")
renamed = source.replace('RETURN = "return"', 'RETURN = "send_back"')
assert renamed != source
module = types.ModuleType("chalicelib.domain.lifecycle")
sys.modules[module.__name__] = module
exec(compile(renamed, "lifecycle.py", "exec"), module.__dict__)
import chalicelib.domain
chalicelib.domain.lifecycle = module
from chalicelib.storage.sqlite import migrations
from tests.support import lifecycle_places as places
print(json.dumps({
    "made": places.sqlite_problems(migrations.SCHEMA),
    "made_with": [name for name in ("'send_back'", "'return'") if name in migrations.SCHEMA[3]],
    "file_made_before": places.sqlite_problems(json.loads(sys.argv[1])),
    "openapi": places.openapi_problems(json.loads(Path("chalicelib/openapi.json").read_text())),
    "page": places.page_problems(Path("chalicelib/ui/types.js").read_text()),
}))
"""


def test_a_name_changed_in_the_domain_fails_every_place_that_holds_it() -> None:
    from chalicelib.storage.sqlite import migrations

    done = subprocess.run(
        [sys.executable, "-c", RENAMED, json.dumps(migrations.SCHEMA)],
        cwd=PROJECT_DIR,
        check=True,
        capture_output=True,
        text=True,
    )
    found = json.loads(done.stdout)

    # Made from the names: the schema follows (a file made before needs a migration).
    assert (found["made"], found["made_with"]) == ([], ["'send_back'"])
    assert found["file_made_before"] == [
        "CHECK(action): ['approve', 'reject', 'cancel', 'skip', 'return', 'resubmit', 'reassign', "
        "'move'] is not "
        "['approve', 'reject', 'cancel', 'skip', 'send_back', 'resubmit', 'reassign', 'move']"
    ]
    # Held to them: each check names the place.
    assert [problem.split(":")[0] for problem in found["openapi"]] == [
        "Action.action",
        "Permissions.required",
        "Permissions.properties",
    ]
    assert [problem.split(":")[0] for problem in found["page"]] == [
        "types.js ActionName",
        "types.js RecordedAction",
    ]


def test_mypy_names_the_member_a_match_leaves_out(tmp_path: Path) -> None:
    """Every match over the names ends in typing.assert_never: with one
    branch taken out of a copy of decision.decide, mypy refuses the copy."""
    copy = tmp_path / "chalicelib"
    shutil.copytree(
        PROJECT_DIR / "chalicelib", copy, ignore=shutil.ignore_patterns("__pycache__", "ui")
    )
    decision = copy / "domain" / "decision.py"
    source = decision.read_text(encoding="utf-8")
    branch = (
        "        case ActionKind.CANCEL:\n"
        "            return Decision(action, actor, comment, RunStatus.CANCELLED, None, at)\n"
    )
    assert source.count(branch) == 1
    decision.write_text(source.replace(branch, ""), encoding="utf-8")

    done = subprocess.run(
        [
            *(sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent"),
            *("--cache-dir", str(tmp_path / "cache"), "chalicelib/domain/decision.py"),
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )

    assert done.returncode == 1, done.stdout
    assert '"assert_never" has incompatible type "Literal[ActionKind.CANCEL]"' in done.stdout
    assert "Found 1 error in 1 file" in done.stdout
