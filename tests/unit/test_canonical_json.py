"""The one canonical JSON text (chalicelib/domain/canonical_json.py) is RFC
8785's: held to the rfc8785 package, to the RFC's own table of numbers, and to
JavaScript (node), as a verifier in another language computes it."""

from __future__ import annotations

import json
import random
import shutil
import struct
import subprocess
from typing import Any

import pytest
import rfc8785

from chalicelib.domain import audit, canonical_json
from chalicelib.domain.canonical_json import canonical

# RFC 8785, Appendix B: IEEE 754 bits, and the text every implementation writes.
RFC_NUMBERS = [
    ("0000000000000000", "0"),
    ("8000000000000000", "0"),
    ("0000000000000001", "5e-324"),
    ("8000000000000001", "-5e-324"),
    ("7fefffffffffffff", "1.7976931348623157e+308"),
    ("ffefffffffffffff", "-1.7976931348623157e+308"),
    ("4340000000000000", "9007199254740992"),
    ("c340000000000000", "-9007199254740992"),
    ("4430000000000000", "295147905179352830000"),
    ("44b52d02c7e14af5", "9.999999999999997e+22"),
    ("44b52d02c7e14af6", "1e+23"),
    ("44b52d02c7e14af7", "1.0000000000000001e+23"),
    ("444b1ae4d6e2ef4e", "999999999999999700000"),
    ("444b1ae4d6e2ef4f", "999999999999999900000"),
    ("444b1ae4d6e2ef50", "1e+21"),
    ("3eb0c6f7a0b5ed8c", "9.999999999999997e-7"),
    ("3eb0c6f7a0b5ed8d", "0.000001"),
    ("41b3de4355555553", "333333333.3333332"),
    ("41b3de4355555554", "333333333.33333325"),
    ("41b3de4355555555", "333333333.3333333"),
    ("41b3de4355555556", "333333333.3333334"),
    ("41b3de4355555557", "333333333.33333343"),
    ("becbf647612f3696", "-0.0000033333333333333333"),
    ("43143ff3c1cb0959", "1424953923781206.2"),
]


def double(bits: str) -> float:
    value: float = struct.unpack(">d", bytes.fromhex(bits))[0]
    return value


@pytest.mark.parametrize("bits, text", RFC_NUMBERS, ids=[bits for bits, _ in RFC_NUMBERS])
def test_numbers_are_written_as_the_rfcs_table_writes_them(bits: str, text: str) -> None:
    assert canonical(double(bits)) == text == rfc8785.dumps(double(bits)).decode()


@pytest.mark.parametrize(
    "value, text",
    [
        (1e16, "10000000000000000"),
        (1e-7, "1e-7"),
        (1200.0, "1200"),
        (0.5, "0.5"),
        (1e-5, "0.00001"),
        (2**60, "1152921504606847000"),  # the double it is read as, as JavaScript writes it
        (-(2**53) + 1, "-9007199254740991"),
    ],
)
def test_the_numbers_where_it_differs_from_json_dumps(value: Any, text: str) -> None:
    assert canonical(value) == text
    assert canonical({"n": value}) == f'{{"n":{text}}}'


def test_keys_sort_by_utf16_code_units_not_code_points() -> None:
    keys = {"\ue000": 1, "\U0001f600": 2, "a": 3, "é": 4}

    text = canonical(keys)

    assert text == '{"a":3,"é":4,"\U0001f600":2,"\ue000":1}'
    assert text == rfc8785.dumps(keys).decode()
    assert text != json.dumps(keys, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def test_strings_escape_quotes_backslashes_and_controls_only() -> None:
    text = 'q"b\\ t\t n\n c\x01 del\x7f ls\u2028 é 😀'

    assert canonical(text) == '"q\\"b\\\\ t\\t n\\n c\\u0001 del\x7f ls\u2028 é 😀"'
    assert canonical(text) == rfc8785.dumps(text).decode()


def test_every_kind_of_value_is_written_as_the_package_writes_it() -> None:
    value: Any = {
        "z": [1, -2, 3.25, True, False, None, "x", [], {}],
        "a": {"nested": {"deep": [0.1, 1e300, -1e-300]}},
        "": "empty key",
    }
    assert canonical(value) == rfc8785.dumps(value).decode()
    assert canonical(("tuple", 1)) == '["tuple",1]'


def test_a_member_of_the_lifecycle_is_written_as_its_text() -> None:
    """The state machine's names are StrEnums: a chain entry holds one as the
    text it stores, at the top or inside an object."""
    from chalicelib.domain.lifecycle import ActionKind, RunStatus

    assert canonical(ActionKind.RETURN) == '"return"'
    written = {"action": ActionKind.APPROVE, "states": [RunStatus.IN_PROGRESS]}
    assert canonical(written) == '{"action":"approve","states":["in_progress"]}'


@pytest.mark.parametrize("value", [float("nan"), float("inf"), -float("inf"), 10**400])
def test_a_number_no_json_text_holds_is_refused(value: Any) -> None:
    with pytest.raises(ValueError, match="JSON number"):
        canonical({"n": value})


@pytest.mark.parametrize("value", [{1: "x"}, {"s": {1, 2}}, b"bytes"])
def test_what_is_not_json_is_refused(value: Any) -> None:
    with pytest.raises(TypeError):
        canonical(value)


def test_the_chain_hashes_the_canonical_text() -> None:
    data = {"amount": 1200.0, "ratio": 1e-7}
    assert audit.canonical(data) == canonical(data) == '{"amount":1200,"ratio":1e-7}'
    assert audit.input_digest(data) == audit.sha256_hex('{"amount":1200,"ratio":1e-7}')


def random_doubles(count: int) -> list[float]:
    """Doubles of every kind: any bits (denormals, the largest), spread over the
    decades, and integers on both sides of 2**53."""
    draw = random.Random(8785)
    found: list[float] = []
    while len(found) < count:
        kind = draw.randrange(3)
        if kind == 0:
            value = struct.unpack("<d", draw.getrandbits(64).to_bytes(8, "little"))[0]
        elif kind == 1:
            value = draw.random() * 10 ** draw.randint(-30, 30)
        else:
            value = float(draw.randint(-(10**22), 10**22))
        if value == value and abs(value) != float("inf"):
            found.append(value)
    return found


def test_doubles_are_written_as_javascript_writes_them() -> None:
    node = shutil.which("node")
    assert node, "the cross-check runs node, as the JavaScript verifier does"
    doubles = random_doubles(20000)
    # Each double of the list on stdin, as JSON.stringify writes it.
    script = (
        "let t = ''; process.stdin.on('data', (c) => (t += c)).on('end', () => "
        "process.stdout.write(JSON.stringify(JSON.parse(t).map((x) => JSON.stringify(x)))));"
    )

    done = subprocess.run(
        [node, "-e", script], input=json.dumps(doubles), capture_output=True, text=True, timeout=60
    )

    written = json.loads(done.stdout)
    assert [canonical(value) for value in doubles] == written


@pytest.mark.parametrize(
    "text, held",
    [
        ("1.5", True),
        ("1.50", True),
        ("150e-2", True),
        ("1E+2", True),
        ("-0.0", True),
        ("0e10", True),
        ("5e-324", True),
        ("1.7976931348623157e308", True),
        ("0.1", True),
        ("0.30000000000000001", False),
        ("1.5e-400", False),
        ("1e400", False),
        ("-1e400", False),
        ("123456789012345678.5", False),
    ],
)
def test_a_number_is_kept_when_its_double_denotes_what_its_text_does(text: str, held: bool) -> None:
    assert canonical_json.kept(text, float(text)) is held
