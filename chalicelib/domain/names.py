"""What a name is: the characters the service refuses in names, what counts as
blank, and when two names are one person's. Pure; the edge
(chalicelib/api/validation.py, chalicelib/api/identity.py) applies it to what
callers send, and the rules compare names by their canonical key.

One person, one name: every comparison of a user or group name (a requester,
an approval counted once, distinct approvers, a step's approvers and those a
deadline escalates it to, group membership, the admin group, the inbox, an
Idempotency-Key's owner) compares `canonical(name)`, in the spirit of RFC
8265's UsernameCaseMapped profile: fullwidth and halfwidth forms mapped to
their usual width (their <wide> and <narrow> compatibility decompositions),
case folded (Unicode full case folding), then NFC. Names are kept and shown as
given; only their comparison folds them.
"""

from __future__ import annotations

import functools
from typing import Optional

# Unicode's Default_Ignorable_Code_Point: characters that render as nothing
# (zero-width spaces and joiners, the BOM, bidi and variation controls). A
# required string made of these and whitespace alone is blank.
INVISIBLE_RANGES = (
    (0x00AD, 0x00AD), (0x034F, 0x034F), (0x061C, 0x061C), (0x115F, 0x1160),
    (0x17B4, 0x17B5), (0x180B, 0x180F), (0x200B, 0x200F), (0x202A, 0x202E),
    (0x2060, 0x206F), (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)  # fmt: skip
_INVISIBLE_STARTS = [low for low, _ in INVISIBLE_RANGES]  # sorted, as the ranges are
# Control characters (Unicode category Cc) other than tab and newline are
# refused in names, titles and actors: they corrupt logs and screens.
ALLOWED_CONTROLS = "\t\n"


def is_blank(value: str) -> bool:
    """Whether `value` shows nothing: whitespace and invisible characters only."""
    return all(char.isspace() or _invisible(char) for char in value)


def has_control_characters(value: str) -> bool:
    import unicodedata

    return any(
        unicodedata.category(char) == "Cc" and char not in ALLOWED_CONTROLS for char in value
    )


# A name a principal may not have: what would make two names look alike while
# being different, or hide what a name is. Beyond INVISIBLE_RANGES (the
# default-ignorable code points, bidirectional controls among them: U+061C,
# U+200E-U+200F, U+202A-U+202E, U+2066-U+2069):
# - control characters (category Cc), tab and newline included;
# - characters that render blank but are no plain space: every space separator
#   (category Zs) but U+0020, the line and paragraph separators (Zl, Zp), and
#   U+2800 BRAILLE PATTERN BLANK;
# - more than MAX_PRINCIPAL characters, and none but spaces.
MAX_PRINCIPAL = 200
BLANK_GLYPHS = "\u2800"
# The names the service signs its own actions with (system:deadline): no caller's.
RESERVED_PREFIX = "system:"


def principal_problem(name: str) -> Optional[str]:
    """Why `name` (already trimmed) cannot be a user's or a group's: a reason in
    words; None if it can. Checked alike for names in bodies and in tokens."""
    if len(name) > MAX_PRINCIPAL:
        return f"is longer than {MAX_PRINCIPAL} characters"
    if not name.strip():
        return "is blank"
    if canonical(name).startswith(RESERVED_PREFIX):
        return f"starts with {RESERVED_PREFIX!r}, which is reserved for the service's own actions"
    if name.isascii() and name.isprintable():
        return None  # most names: no control, invisible or blank character
    import unicodedata

    for char in name:
        category = unicodedata.category(char)
        if category == "Cc":
            return f"holds a control character (U+{ord(char):04X})"
        if _invisible(char):
            return f"holds an invisible or bidirectional control character (U+{ord(char):04X})"
        if (category == "Zs" and char != " ") or category in ("Zl", "Zp") or char in BLANK_GLYPHS:
            return f"holds a character that renders blank (U+{ord(char):04X})"
    return None


@functools.lru_cache(maxsize=4096)
def canonical(name: str) -> str:
    """The key two names of one person share: width-mapped, case-folded, NFC."""
    if name.isascii():
        return name.lower()  # ASCII: no width forms, and folding is lowercasing
    import unicodedata

    widths = ("<wide>", "<narrow>")
    mapped = "".join(
        "".join(chr(int(code, 16)) for code in mapping.split()[1:])
        if (mapping := unicodedata.decomposition(char)).startswith(widths)
        else char
        for char in name
    )
    return unicodedata.normalize("NFC", unicodedata.normalize("NFC", mapped).casefold())


def canonical_principal(principal: str) -> str:
    """A principal ("user:<name>", "group:<name>", or "*") with its name's canonical key."""
    kind, colon, name = principal.partition(":")
    return f"{kind}:{canonical(name)}" if colon else principal


def same(first: str, second: object) -> bool:
    """Whether `first` and `second` (a name, or None) name one person."""
    return isinstance(second, str) and canonical(first) == canonical(second)


def _invisible(char: str) -> bool:
    code = ord(char)
    if code < _INVISIBLE_STARTS[0]:
        return False  # ASCII and Latin-1 below the soft hyphen: most names, whole
    # Imported here: a cold start whose request names no such character does not.
    import bisect

    # The last range starting at or before `code` holds it, if any does.
    at = bisect.bisect_right(_INVISIBLE_STARTS, code) - 1
    return at >= 0 and code <= INVISIBLE_RANGES[at][1]
