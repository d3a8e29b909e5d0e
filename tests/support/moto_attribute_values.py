"""moto's DynamoDB answers, with each item's attribute values written directly.

moto 5.2.5 writes every answer through one serializer for all of AWS, which
walks the answer along botocore's model: for each attribute value of each
item it looks up all ten members of `AttributeValue` (S, N, B, ... BOOL),
each under up to six aliases. That was a third of moto's time on a request
in the API tests. An attribute value moto holds is already what the wire
carries ({"S": "..."}, {"M": {...}}), so `install` writes such a value as it
is, member by member in the model's order, exactly as that serializer does;
any other value (binary ones, which it base64-encodes, or anything it would
have to look up) still goes through moto's serializer, as everything else
does.

Only the moto code this was read against is changed (its serializer's
source digest); another version is left as it is, and `install()` says so
(False: a contract test fails then, so that whoever upgrades moto looks
again). The contract test also holds each answer's body to the one moto
would write.
"""

from __future__ import annotations

import functools
from typing import Any, Optional

from tests.support.moto_sources import is_as_read

# sha256 of moto 5.2.5's moto/core/serialize.py.
CHECKED = "bb79b5b1196894de9617b956382692f9ff007f0d0b41be46ba6636599bb6ac42"
MEMBERS = ("S", "N", "B", "SS", "NS", "BS", "M", "L", "NULL", "BOOL")
_MEMBER_SET = frozenset(MEMBERS)
_STRINGS = frozenset({"S", "N"})
_STRING_SETS = frozenset({"SS", "NS"})
_BOOLEANS = frozenset({"NULL", "BOOL"})


@functools.cache
def install() -> bool:
    """Patch moto (once per process); False if its code is not the one checked."""
    from moto.core import serialize

    if not is_as_read(serialize, CHECKED):
        return False
    if "dynamodb" in serialize.SERVICE_SPECIFIC_SERIALIZERS:
        return False
    serialize.SERVICE_SPECIFIC_SERIALIZERS["dynamodb"] = {"json": serializer_class()}
    return True


@functools.cache
def serializer_class() -> type[Any]:
    """moto's JSON serializer, writing a plain attribute value as it is."""
    from moto.core.serialize import JSONSerializer

    class DynamoDBSerializer(JSONSerializer):
        def _serialize_type_structure(
            self, serialized: Any, value: Any, shape: Any, key: str
        ) -> None:
            if key and shape.name == "AttributeValue" and not self._transforms():
                written = as_written(value)
                if written is not None:
                    serialized[key] = written
                    return
            super()._serialize_type_structure(serialized, value, shape, key)

        def _transforms(self) -> bool:
            return bool(getattr(self._value_picker, "response_transformers", None))

    return DynamoDBSerializer


def as_written(value: Any) -> Optional[dict[str, Any]]:
    """`value` as moto's serializer writes an AttributeValue, if it holds only
    members written as they are (no binary); None otherwise."""
    if type(value) is not dict or not value.keys() <= _MEMBER_SET:
        return None
    written: dict[str, Any] = {}
    for name in MEMBERS:
        member = value.get(name)
        if member is None:
            continue
        converted = _member(name, member)
        if converted is None:
            return None
        written[name] = converted
    return written


def _member(name: str, member: Any) -> Any:
    if name in _STRINGS:
        return member if type(member) is str else None
    if name in _BOOLEANS:
        return member if type(member) is bool else None
    if name in _STRING_SETS:
        plain = type(member) is list and all(type(entry) is str for entry in member)
        return list(member) if plain else None
    if name == "M" and type(member) is dict:
        entries = {key: as_written(entry) for key, entry in member.items()}
        return None if None in entries.values() else entries
    if name == "L" and type(member) is list:
        entries_list = [as_written(entry) for entry in member]
        return None if None in entries_list else entries_list
    return None
