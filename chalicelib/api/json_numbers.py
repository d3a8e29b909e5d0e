"""The one rule for the numbers of every request body: a number enters the
service only as the number it was written as.

JSON (RFC 8259) leaves a number's range and precision to the reader; this
service, its answers, events and page read numbers as doubles (JavaScript
does, and the audit's canonical form, RFC 8785, is a double's text). So a
body's number is refused (400, naming its JSON Pointer) where a double
would not keep it: beyond the range of a double (1e400, which Python reads
as inf and writes back as Infinity, not JSON), or with a fraction or an
exponent that a double reads as another number (1.5e-400 is 0,
0.30000000000000001 is 0.3). An integer written without either is read
exactly, as Python reads it, if a double holds it as a finite number at
all; where a run's input must be I-JSON's, chalicelib/domain/content.py
holds its integers to +-(2**53 - 1).

The check is the decoder's: its hooks see each number's text, and cost a
call per number on the common path. Only a body that holds a refused number
is parsed a second time, to find where it is.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from chalicelib.domain.canonical_json import finite, finite_integer, kept, number

# Past this many characters an integer's text may be beyond every double.
_SAFE_INTEGER_TEXT = 308
_SHOWN_CHARACTERS = 40


class UnkeptNumber(ValueError):
    """A number of a body that a double would not keep as written."""


def read_float(text: str) -> float:
    """The decoder's hook for a number with a fraction or an exponent."""
    value = float(text)
    # Most numbers are written as their shortest text already (JSON.stringify's).
    if repr(value) == text or kept(text, value):
        return value
    raise UnkeptNumber(text)


def read_int(text: str) -> int:
    """The decoder's hook for an integer."""
    value = int(text)
    if len(text) <= _SAFE_INTEGER_TEXT or finite_integer(value):
        return value
    raise UnkeptNumber(text)


def problem(text: str) -> str:
    """Why the body `text`, whose decoding met an unkept number, is refused:
    the first such number, where it is, and what a double would make of it."""
    try:
        found = _first(_marking.decode(text), "")
    except (ValueError, RecursionError):
        found = None
    if found is None:  # not found again: say what is refused all the same
        return "The request body holds a number that a JSON number (a double) does not keep"
    where, literal = found
    shown = literal if len(literal) <= _SHOWN_CHARACTERS else literal[:_SHOWN_CHARACTERS] + "..."
    read = float(literal)  # an integer's text beyond every double reads as inf too
    if not finite(read):
        return (
            f"The number {shown} at {where or '/'} is beyond the range of a JSON number (a "
            "double, at most +-1.7976931348623157e308)"
        )
    return (
        f"The number {shown} at {where or '/'} would be read as {number(read)}, another "
        "number: send the digits a double keeps (its shortest form, as JSON.stringify writes it)"
    )


class _Unkept:
    """An unkept number's place in the second parse."""

    def __init__(self, literal: str) -> None:
        self.literal = literal


class _Pairs(list[tuple[str, Any]]):
    """An object of the second parse: its members in order, duplicates kept."""


def _marked_float(text: str) -> Any:
    try:
        return read_float(text)
    except UnkeptNumber:
        return _Unkept(text)


def _marked_int(text: str) -> Any:
    try:
        return read_int(text)
    except UnkeptNumber:
        return _Unkept(text)


def _first(node: Any, at: str) -> Optional[tuple[str, str]]:
    """The JSON Pointer and text of the first unkept number in `node`, in order."""
    if isinstance(node, _Unkept):
        return at, node.literal
    if isinstance(node, _Pairs):
        members = [(_token(key), value) for key, value in node]
    elif isinstance(node, list):
        members = [(str(index), value) for index, value in enumerate(node)]
    else:
        return None
    for token, value in members:
        found = _first(value, f"{at}/{token}")
        if found:
            return found
    return None


def _token(key: str) -> str:
    """A key as a JSON Pointer (RFC 6901) token."""
    return key.replace("~", "~0").replace("/", "~1")


_marking = json.JSONDecoder(
    object_pairs_hook=_Pairs, parse_float=_marked_float, parse_int=_marked_int
)
