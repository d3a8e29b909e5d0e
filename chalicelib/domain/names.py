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


# What a principal's name may not be or hold (docs/approver-rules.md, "one
# person, one name"): what would let two names look alike while being
# different people, or hide what a name is. Two kinds of rule:
#
# written_problem, each character on its own (the OpenAPI document's pattern
# states it; a body that breaks it is 400):
# - more than MAX_PRINCIPAL characters; none but spaces;
# - a start that is a kind of principal or the service's own, in any spelling
#   that is the same name (RESERVED_PREFIXES): "user:bob" is bob, not another;
# - control characters (Cc), tab and newline included; format characters (Cf:
#   bidirectional controls, zero-width joiners, interlinear annotation, Arabic
#   and Syriac number and abbreviation marks, Egyptian hieroglyph joiners, tag
#   characters); surrogates (Cs) and private use (Co), which render as
#   nothing, a box, or what a font chooses;
# - the default-ignorable code points (INVISIBLE_RANGES: Hangul fillers and
#   variation selectors among them);
# - characters that render blank but are no plain space: every space separator
#   (Zs) but U+0020, the line and paragraph separators (Zl, Zp), BLANK_GLYPHS;
# - presentation forms of other characters (PRESENTATION_FORMS: mathematical
#   and other styled letters, circled, squared, superscript and subscript
#   forms, fractions, Arabic positional forms, no-break variants), which show
#   as the character they decompose to. Fullwidth and halfwidth forms are
#   kept: canonical() maps them to their usual width, as RFC 8265 does.
#
# combination_problem, what no pattern states (a body that breaks it is 422):
# - an unassigned code point (Cn, in the Unicode version of Python's
#   unicodedata): which code points are unassigned changes with each Unicode
#   version, so no pattern a client checks can say it alike, and listing them
#   made the document's name patterns ten times longer and schemathesis's
#   generation of names ten times slower;
# and how the characters go together, after Unicode TR 39 (Security Mechanisms):
# - more than one script: the name's resolved script set (section 5.1: each
#   character's Script_Extensions, Han augmented with Japanese, Korean and
#   Bopomofo's Hanb, Common and Inherited going with any script) is empty,
#   unless Latin with Han+Hiragana+Katakana, Han+Hangul or Han+Bopomofo (the
#   Highly Restrictive level, section 5.2). So a Cyrillic і in "rіta" is
#   refused, and so is a name in two scripts ("Rita Иванова"): two names that
#   look alike could otherwise be two people;
# - digits of more than one decimal system (section 5.3);
# - a combining mark with nothing to combine with (first, or after a space),
#   the same nonspacing mark twice in a row, or more than MAX_MARKS in a row
#   (section 5.4): they render as another name, or over its neighbours.
MAX_PRINCIPAL = 200
BLANK_GLYPHS = "\u2800\ufffc\U00016fe4\U0001d159"
# The service signs its own actions with system: (system:deadline); user: and
# group: say which kind of principal a name is.
RESERVED_PREFIX = "system:"
RESERVED_PREFIXES = (RESERVED_PREFIX, "user:", "group:")
PRESENTATION_FORMS = (
    "<font>", "<noBreak>", "<initial>", "<medial>", "<final>", "<isolated>", "<circle>",
    "<square>", "<super>", "<sub>", "<fraction>", "<small>", "<vertical>",
)  # fmt: skip
REFUSED_CATEGORIES = ("Cc", "Cf", "Cs", "Co", "Zl", "Zp")
MAX_MARKS = 4


def principal_problem(name: str) -> Optional[str]:
    """Why `name` (already trimmed) cannot be a user's or a group's: a reason in
    words; None if it can. Checked alike for names in bodies and in tokens."""
    return written_problem(name) or combination_problem(name)


def written_problem(name: str) -> Optional[str]:
    """Why `name` cannot be a principal's for its length, its start or one of
    its characters (what the OpenAPI document's pattern states); None if not."""
    if len(name) > MAX_PRINCIPAL:
        return f"is longer than {MAX_PRINCIPAL} characters"
    if not name.strip():
        return "is blank"
    key = canonical(name)
    reserved = next((p for p in RESERVED_PREFIXES if key.startswith(p)), None)
    if reserved == RESERVED_PREFIX:
        return f"starts with {RESERVED_PREFIX!r}, which is reserved for the service's own actions"
    if reserved is not None:
        return f"starts with {reserved!r} (in some spelling), which says a principal's kind"
    if name.isascii() and name.isprintable():
        return None  # most names: no control, invisible or blank character
    return next(filter(None, map(character_problem, name)), None)


def character_problem(char: str) -> Optional[str]:
    """Why no principal's name may hold `char`; None if one may."""
    import unicodedata

    category = unicodedata.category(char)
    code = f"U+{ord(char):04X}"
    if category == "Cc":
        return f"holds a control character ({code})"
    if _invisible(char):
        return f"holds an invisible or bidirectional control character ({code})"
    if category in REFUSED_CATEGORIES:
        return f"holds a format or private-use character ({code})"
    if (category == "Zs" and char != " ") or char in BLANK_GLYPHS:
        return f"holds a character that renders blank ({code})"
    if unicodedata.decomposition(char).startswith(PRESENTATION_FORMS):
        return f"holds a presentation form of another character ({code}): write that one"
    return None


def combination_problem(name: str) -> Optional[str]:
    """Why `name` cannot be a principal's for what no pattern states: an
    unassigned code point, or characters, each allowed, that cannot go together
    in one name (Unicode TR 39's mixed-script, mixed-number and mark rules);
    None if it can."""
    if name.isascii():
        return None  # Latin and Common only, no marks
    import unicodedata

    unassigned = next((char for char in name if unicodedata.category(char) == "Cn"), None)
    if unassigned is not None:
        return (
            f"holds a code point unassigned in Unicode {unicodedata.unidata_version} "
            f"(U+{ord(unassigned):04X})"
        )
    name = unicodedata.normalize("NFC", name)
    if not _one_script(name):
        return "mixes scripts (write a name in one script)"
    if len({ord(char) - unicodedata.decimal(char) for char in name if char.isdecimal()}) > 1:
        return "mixes digits of different number systems"
    return _marks_problem(name)


def _marks_problem(name: str) -> Optional[str]:
    import unicodedata

    run: list[str] = []
    before = " "
    for char in unicodedata.normalize("NFD", name):  # each mark apart from its letter
        if not unicodedata.category(char).startswith("M"):
            run, before = [], char
            continue
        if before == " ":
            return f"holds a combining mark with nothing to combine with (U+{ord(char):04X})"
        nonspacing = unicodedata.category(char) == "Mn"
        if nonspacing and run and run[-1] == char:
            return f"repeats a combining mark (U+{ord(char):04X})"
        run.append(char)
        if len(run) > MAX_MARKS:
            return f"stacks more than {MAX_MARKS} combining marks on one character"
    return None


# Scripts that TR 39 (section 5.1) augments: a Han character may be written
# in Japanese, Korean or Chinese with Bopomofo; kana are Japanese, Hangul Korean.
AUGMENTED = {
    "Hani": ("Hanb", "Jpan", "Kore"),
    "Hira": ("Jpan",),
    "Kana": ("Jpan",),
    "Hang": ("Kore",),
    "Bopo": ("Hanb",),
}
# With Latin, the sets TR 39's Highly Restrictive level allows.
LATIN = "Latn"
WITH_LATIN = frozenset({"Jpan", "Hanb", "Kore"})


def _one_script(name: str) -> bool:
    """Whether `name` is Single Script or Highly Restrictive (TR 39, 5.2)."""
    sets = [found for found in map(_scripts, name) if found is not None]
    resolved = frozenset[str].intersection(*sets) if sets else frozenset({LATIN})
    if resolved:
        return True
    # Latin beside Han with kana, Hangul or Bopomofo: drop the characters that
    # may be Latin and resolve the rest.
    rest = [found for found in sets if LATIN not in found]
    return bool(rest) and bool(frozenset[str].intersection(*rest) & WITH_LATIN)


def _scripts(char: str) -> Optional[frozenset[str]]:
    """`char`'s augmented Script_Extensions; None for Common and Inherited (any)."""
    import bisect

    starts, sets = _script_table()
    return sets[bisect.bisect_right(starts, ord(char)) - 1]


@functools.cache
def _script_table() -> tuple[list[int], list[Optional[frozenset[str]]]]:
    from chalicelib.domain.scripts import RANGES

    starts: list[int] = []
    sets: list[Optional[frozenset[str]]] = []
    for entry in "".join(RANGES).split():
        start, _, codes = entry.partition(":")
        starts.append(int(start, 16))
        sets.append(None if codes == "*" else _augmented(codes))
    return starts, sets


@functools.cache
def _augmented(codes: str) -> frozenset[str]:
    found = codes.split("+")
    return frozenset(found).union(*(AUGMENTED.get(code, ()) for code in found))


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
