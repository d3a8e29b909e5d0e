"""The rule of a principal's name (chalicelib/domain/names.py): the characters
no name may hold, the combinations TR 39 refuses, and the script table it reads."""

from __future__ import annotations

from pathlib import Path

import pytest

from chalicelib.domain import names

PROJECT_DIR = Path(__file__).resolve().parents[2]


def test_the_script_table_is_what_scripts_script_table_writes() -> None:
    """chalicelib/domain/scripts.py comes from Unicode's Scripts.txt and
    ScriptExtensions.txt as unicodedataplus (requirements-dev.txt) compiles
    them: run scripts/script_table.py after changing that pin."""
    from scripts import script_table

    shipped = (PROJECT_DIR / "chalicelib" / "domain" / "scripts.py").read_text(encoding="utf-8")
    assert shipped == script_table.module_text()


@pytest.mark.parametrize("name", ["rita\u0378", "rita\U0001fffe"], ids=ascii)
def test_an_unassigned_code_point_is_refused_by_the_rule_no_pattern_states(name: str) -> None:
    """Which code points are unassigned changes with Unicode's version: the
    document's pattern lets them by, and the service refuses them (422)."""
    assert names.written_problem(name) is None
    problem = names.combination_problem(name)
    assert problem is not None and "unassigned in Unicode" in problem
    assert names.principal_problem(name) == problem


@pytest.mark.parametrize(
    "name, reason",
    [
        ("rita\ufff9", "format"),  # interlinear annotation anchor
        ("rita\ufffa", "format"),  # interlinear annotation separator
        ("rita\ufffb", "format"),
        ("rita\u0605", "format"),  # Arabic number mark above
        ("rita\u070f", "format"),  # Syriac abbreviation mark
        ("rita\U00013430", "format"),  # Egyptian hieroglyph vertical joiner
        ("rita\U000e0041", "invisible"),  # a tag character
        ("rita\U00016fe4", "renders blank"),  # Khitan small script filler
        ("rita\U0001d159", "renders blank"),  # musical null notehead
        ("rita\ufffc", "renders blank"),
        ("rita\u3164", "invisible"),  # Hangul filler
        ("rita\ue000", "private-use"),
        ("rita\U000f0000", "private-use"),
        ("\U0001d42b\U0001d422\U0001d42d\U0001d41a", "presentation form"),  # bold rita
        ("rita\u00b2", "presentation form"),
        ("r\u24d8ta", "presentation form"),  # circled i
        ("a\u2011b", "presentation form"),  # non-breaking hyphen
        ("\ufeb3", "presentation form"),  # an Arabic positional form
        ("user:rita", "principal's kind"),
        ("Group:finance", "principal's kind"),
        ("sy\ufb06em:x", "reserved"),
    ],
    ids=ascii,
)
def test_a_character_that_hides_or_passes_for_another_is_refused(name: str, reason: str) -> None:
    problem = names.written_problem(name)

    assert problem is not None and reason in problem
    assert names.principal_problem(name) == problem


@pytest.mark.parametrize(
    "name, reason",
    [
        ("r\u0456ta", "mixes scripts"),  # a Cyrillic i among Latin letters
        ("\u0440ita", "mixes scripts"),  # a Cyrillic r
        ("Rita \u0418\u0432\u0430\u043d\u043e\u0432\u0430", "mixes scripts"),
        ("\u0430 b", "mixes scripts"),  # one Cyrillic letter as a word of its own
        ("rita\U00016fe0", "mixes scripts"),  # Tangut beside Latin
        ("\u4e2d\u6587\u3105\ud55c", "mixes scripts"),  # Han, Bopomofo and Hangul together
        ("\u0967\u0968" + "3", "digits"),  # Devanagari digits beside an ASCII one
        ("\u0301rita", "nothing to combine with"),
        ("rita \u0301", "nothing to combine with"),
        ("ri\u0301\u0301ta", "repeats a combining mark"),
        ("r\u00ed\u0301ta", "repeats a combining mark"),  # the first acute composed
        ("a\u0301\u0302\u0303\u0304\u0306", "more than 4"),
    ],
    ids=ascii,
)
def test_characters_that_may_not_go_together_are_refused(name: str, reason: str) -> None:
    assert names.written_problem(name) is None
    problem = names.combination_problem(name)

    assert problem is not None and reason in problem
    assert names.principal_problem(name) == problem


@pytest.mark.parametrize(
    "name",
    [
        "rita",
        "Rita M\u00fcller",
        "Caf\u00e9",
        "Cafe\u0301",
        "Vi\u1ec7t",
        "\u0418\u0432\u0430\u043d\u043e\u0432\u0430",  # Cyrillic alone
        "\u0395\u03bb\u03ad\u03bd\u03b7",  # Greek alone
        "\u7530\u4e2d\u592a\u90ce",  # Han
        "\u5c71\u7530\u306f\u306a\u3053",  # Han and Hiragana
        "Tanaka \u7530\u4e2d \u30cf\u30ca",  # Latin, Han and Katakana
        "\uae40\ucca0\uc218",  # Hangul
        "\u91d1\ucca0\uc218",  # Han and Hangul
        "\u4e2d\u6587\u3105",  # Han and Bopomofo
        "\u0e01\u0e33\u0e1e\u0e25",  # Thai, with SARA AM
        "\u0535\u0580\u0587\u0561\u0576",  # Armenian, with its ech-yiwn ligature
        "\uff32\uff49\uff54\uff41",  # fullwidth: the same person as Rita
        "\u0663\u0664 \u0639\u0644\u064a",  # Arabic letters and Arabic-Indic digits
        "rita-2 o'neil.x@example",
    ],
    ids=ascii,
)
def test_names_in_one_script_are_accepted(name: str) -> None:
    assert names.principal_problem(name) is None


def test_most_names_are_checked_without_the_script_table() -> None:
    """An ASCII name needs neither unicodedata nor the table: the common case
    costs what it did."""
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from chalicelib.domain import names\n"
        "assert names.principal_problem('maria.lopez-2') is None\n"
        "print(sorted(m for m in ('unicodedata', 'chalicelib.domain.scripts') if m in sys.modules))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], cwd=PROJECT_DIR, check=True, capture_output=True, text=True
    ).stdout.strip()
    assert loaded == "[]"
