"""Write the OpenAPI document's patterns of principals' names from the rule.

    python scripts/openapi_names.py          (rewrites chalicelib/openapi.json)

The rule of a name lives in chalicelib/domain/names.py (`written_problem`: its
length, its start and each of its characters). The document states it as the
patterns of four schemas (KINDS), every name field referring to one of them.

A pattern cannot state the rules about how the characters go together (one
script, one number system, combining marks: `combination_problem`); the
schemas' descriptions say them, and the service answers 422 for them.
tests/api/test_openapi.py checks every code point against the rule and that
the document holds what this writes.
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Iterator
from pathlib import Path

PROJECT_DIR = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(PROJECT_DIR))

from chalicelib.domain import names  # noqa: E402

DOCUMENT = PROJECT_DIR / "chalicelib" / "openapi.json"
END = "(?![\\s\\S])"  # the end, even before a final newline (Python's $ is not)
# Each schema's kinds, as a pattern, and the longest kind its names may be sent with.
KINDS = {
    "UserName": ("(?:user:)?", "user:"),
    "GroupName": ("(?:group:)?", "group:"),
    "Principal": ("(?:user:|group:)", "group:"),
    "Delegate": ("(?:user:|group:)?", "group:"),
}


def refused_ranges() -> Iterator[tuple[int, int]]:
    """The runs of code points no name may hold (names.character_problem)."""
    start = None
    for code in range(sys.maxunicode + 2):
        # Surrogates are left out: no UTF-8 text holds one (the service refuses
        # a body that does as not Unicode text), and neither ECMA-262's nor
        # Rust's regex class may name one at the end of a range.
        refused = (
            code <= sys.maxunicode
            and not 0xD800 <= code <= 0xDFFF
            and names.character_problem(chr(code)) is not None
        )
        if refused and start is None:
            start = code
        elif not refused and start is not None:
            yield start, code - 1
            start = None


def _char(code: int) -> str:
    # \uXXXX in the BMP, as JSON Schema's (ECMA-262) and Python's regexes both
    # read it; a code point beyond it as itself (no escape means it in both).
    return f"\\u{code:04x}" if code <= 0xFFFF else chr(code)


def refused_class() -> str:
    """The characters a name may not hold, as the inside of a regex class."""
    return "".join(
        _char(low) if low == high else f"{_char(low)}-{_char(high)}"
        for low, high in refused_ranges()
    )


def _spellings(text: str) -> str:
    """A regex of every spelling of `text` that is one name with it
    (names.canonical), one character or more at a time."""
    if not text:
        return ""
    alternatives = []
    for length in range(1, len(text) + 1):
        chars = _by_key().get(text[:length])
        if chars:
            klass = "".join(map(_char, chars))
            alternatives.append(f"[{klass}]{_spellings(text[length:])}")
    return alternatives[0] if len(alternatives) == 1 else f"(?:{'|'.join(alternatives)})"


@functools.cache
def _by_key() -> dict[str, list[int]]:
    """The code points of each canonical key of one character."""
    keys: dict[str, list[int]] = {}
    for code in range(sys.maxunicode + 1):
        if not 0xD800 <= code <= 0xDFFF:
            keys.setdefault(names.canonical(chr(code)), []).append(code)
    return keys


def name_pattern() -> str:
    """A name after its kind: not a reserved start in any spelling, not blank
    (spaces alone), at most MAX_PRINCIPAL characters none of them refused."""
    reserved = "|".join(_spellings(prefix) for prefix in names.RESERVED_PREFIXES)
    return f"(?! *(?:{reserved}))(?! *{END})[^{refused_class()}]{{1,{names.MAX_PRINCIPAL}}}{END}"


def patterns() -> dict[str, str]:
    name = name_pattern()
    return {schema: f"^{kind}{name}" for schema, (kind, _) in KINDS.items()}


def max_lengths() -> dict[str, int]:
    """The most characters each schema's names take as sent (the pattern says
    the same; the page reads maxLength for its fields' limits)."""
    return {schema: len(longest) + names.MAX_PRINCIPAL for schema, (_, longest) in KINDS.items()}


def main() -> int:
    document = json.loads(DOCUMENT.read_text(encoding="utf-8"))
    schemas = document["components"]["schemas"]
    for schema, pattern in patterns().items():
        schemas[schema]["pattern"] = pattern
        schemas[schema]["maxLength"] = max_lengths()[schema]
    DOCUMENT.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", "utf-8")
    print(f"wrote the name patterns of {DOCUMENT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
