"""What a name is: the characters the service refuses in names, and what counts
as blank. Pure; the edge (chalicelib/api/validation.py) applies it to what
callers send, and the rules (a rejection's required reason) to what they mean."""

from __future__ import annotations

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


def _invisible(char: str) -> bool:
    code = ord(char)
    return any(low <= code <= high for low, high in INVISIBLE_RANGES)
