"""chalicelib.domain.record.Record behaves as typing.NamedTuple does, field for field."""

from __future__ import annotations

import pickle
from typing import Any, NamedTuple, Optional

import pytest

from chalicelib.domain.record import Record


class Typed(NamedTuple):
    id: int
    name: str
    tags: tuple[str, ...] = ()
    note: Optional[str] = None


class Fast(Record):
    id: int
    name: str
    tags: tuple[str, ...] = ()
    note: Optional[str] = None

    def shown(self) -> str:
        return f"{self.id}: {self.name}"


CALLS: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((1, "a"), {}),
    ((1, "a", ("x",)), {}),
    ((1, "a", ("x",), "n"), {}),
    ((1,), {"name": "a"}),
    ((), {"id": 1, "name": "a", "note": "n"}),
    ((1, "a"), {"note": "n"}),
]
REFUSED: list[tuple[tuple[Any, ...], dict[str, Any]]] = [
    ((), {}),
    ((1,), {}),
    ((1, "a", (), None, "extra"), {}),
    ((1, "a"), {"id": 2}),
    ((1, "a"), {"colour": "red"}),
    ((), {"name": "a"}),
]


@pytest.mark.parametrize(("args", "kwargs"), CALLS)
def test_a_record_is_made_as_a_named_tuple_is(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    fast, typed = Fast(*args, **kwargs), Typed(*args, **kwargs)
    assert tuple(fast) == tuple(typed) and fast == typed and hash(fast) == hash(typed)
    assert (fast.id, fast.name, fast.tags, fast.note) == (
        typed.id,
        typed.name,
        typed.tags,
        typed.note,
    )
    assert repr(fast) == repr(typed).replace("Typed", "Fast")
    assert fast._asdict() == typed._asdict()
    assert fast._replace(note="changed") == typed._replace(note="changed")
    assert isinstance(fast._replace(note="x"), Fast) and isinstance(fast, Record)


@pytest.mark.parametrize(("args", "kwargs"), REFUSED)
def test_a_call_a_named_tuple_refuses_is_refused(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> None:
    with pytest.raises(TypeError):
        Typed(*args, **kwargs)
    with pytest.raises(TypeError):
        Fast(*args, **kwargs)


def test_a_record_is_immutable_and_keeps_its_class_attributes() -> None:
    record = Fast(1, "a")
    with pytest.raises(AttributeError):
        record.name = "b"  # type: ignore[misc]
    with pytest.raises(ValueError):
        record._replace(colour="red")  # type: ignore[call-arg]
    assert Fast._fields == Typed._fields
    assert Fast._field_defaults == Typed._field_defaults
    assert Fast._make([2, "b", (), None]) == Fast(2, "b")
    assert record.shown() == "1: a"
    assert pickle.loads(pickle.dumps(record)) == record


def test_fields_with_defaults_come_last() -> None:
    with pytest.raises(TypeError):

        class Wrong(Record):
            note: str = ""
            id: int  # type: ignore[misc]
