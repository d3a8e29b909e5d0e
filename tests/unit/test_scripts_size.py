"""scripts/ stays tools beside the product, not a second product (issue 39): at
most 6,000 lines of Python and shell in all, and no file over the 600 lines
every module of the project is held to."""

from __future__ import annotations

from pathlib import Path

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
MAX_LINES = 6_000
MAX_FILE_LINES = 600


def lines_by_file() -> dict[str, int]:
    """Each .py and .sh file under scripts/, and its lines (as `wc -l` counts them)."""
    return {
        str(path.relative_to(SCRIPTS)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(SCRIPTS.rglob("*"))
        if path.suffix in (".py", ".sh") and "__pycache__" not in path.parts
    }


def test_scripts_hold_at_most_6000_lines_of_python_and_shell() -> None:
    counted = lines_by_file()
    assert "rehearse.py" in counted and "run_dynamodb.sh" in counted
    longest = sorted(counted.items(), key=lambda item: -item[1])[:5]
    assert sum(counted.values()) <= MAX_LINES, f"the longest: {longest}"


def test_no_script_is_over_600_lines() -> None:
    assert {name: n for name, n in lines_by_file().items() if n > MAX_FILE_LINES} == {}
