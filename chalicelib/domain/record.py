"""Record: immutable records as typing.NamedTuple declares them, made faster.

A class written `class Step(Record): id: int; name: str = ""` is, to mypy,
exactly a typing.NamedTuple (Record is that name when type checking), and at
run time a tuple subclass with the same fields, defaults, constructor,
`_replace`, `_make`, `_asdict`, `_fields`, equality and repr. What differs is
the making of the class: typing.NamedTuple checks every annotation
(`typing._type_check`) and collections.namedtuple compiles a constructor from
source text for each class, about 125 µs a class together; the app defines
two dozen on import, a sixth of a cold start's work beyond Chalice's. Here a
class takes a few µs: one constructor serves every class, reading the class's
fields, and each field is a property over `operator.itemgetter` (namedtuple's
own accessor before Python 3.8, public and in C).

A generic record adds Generic to its bases (`class Slice(Record, Generic[T])`),
as a generic typing.NamedTuple does.
"""

from __future__ import annotations

from operator import itemgetter
from typing import TYPE_CHECKING, Any, ClassVar

__all__ = ["Record"]

# A field's value before its argument or default fills it.
_MISSING: Any = object()
# The docstring of each field's accessor, by position, as namedtuple words it.
_ALIAS_DOCS: list[str] = []


def _alias_doc(position: int) -> str:
    while len(_ALIAS_DOCS) <= position:
        _ALIAS_DOCS.append(f"Alias for field number {len(_ALIAS_DOCS)}")
    return _ALIAS_DOCS[position]


class _RecordType(type):
    """Makes each Record subclass: its fields from its annotations, in order."""

    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> Any:
        if namespace.get("_root", False):
            return super().__new__(mcls, name, bases, namespace)
        # One loop over the fields rather than a comprehension for each thing
        # made of them (each is a call of its own in 3.11): two dozen classes
        # are made on every cold start.
        fields = tuple(namespace.get("__annotations__", ()))
        count = len(fields)
        defaults: dict[str, Any] = {}
        values = []
        index = {}
        for position, field in enumerate(fields):
            if field in namespace:
                defaults[field] = value = namespace.pop(field)
            elif defaults:
                raise TypeError(f"{name}: fields with defaults must come after those without")
            else:
                value = _MISSING
            values.append(value)
            index[field] = position
            namespace[field] = property(itemgetter(position), doc=_alias_doc(position))
        # For each count of positional arguments, the values of the fields after
        # them: their defaults, or _MISSING where a field has none.
        given_values = tuple(values)
        namespace.update(
            __slots__=(),
            _fields=fields,
            _field_defaults=defaults,
            _index=index,
            _required=count - len(defaults),
            _tails=tuple([given_values[given:] for given in range(count + 1)]),
            __match_args__=fields,
        )
        return super().__new__(mcls, name, bases, namespace)


class _Record(tuple, metaclass=_RecordType):  # type: ignore[type-arg]
    """The methods every Record shares, as collections.namedtuple gives them."""

    _root = True
    __slots__ = ()
    _fields: ClassVar[tuple[str, ...]] = ()
    _field_defaults: ClassVar[dict[str, Any]] = {}
    _index: ClassVar[dict[str, int]] = {}
    _required: ClassVar[int] = 0
    _tails: ClassVar[tuple[tuple[Any, ...], ...]] = ((),)

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        given = len(args)
        if not kwargs and cls._required <= given < len(cls._tails):
            return tuple.__new__(cls, args + cls._tails[given])
        return tuple.__new__(cls, cls._arguments(args, kwargs))

    @classmethod
    def _arguments(cls, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        """The values of all fields from positional and keyword arguments and the
        defaults, refused as a function's call would be."""
        given = len(args)
        if given >= len(cls._tails):
            raise TypeError(f"{cls.__name__} takes {len(cls._fields)} arguments, not {given}")
        values = [*args, *cls._tails[given]]
        for field, value in kwargs.items():
            index = cls._index.get(field)
            if index is None or index < given:
                raise TypeError(f"{cls.__name__} has no field {field!r}, or got it twice")
            values[index] = value
        required = cls._required
        if given >= required:  # every field without a default was given by position
            return values
        missing = [
            field
            for field, value in zip(
                cls._fields[given:required], values[given:required], strict=True
            )
            if value is _MISSING
        ]
        if missing:
            raise TypeError(f"{cls.__name__} is missing the arguments {', '.join(missing)}")
        return values

    @classmethod
    def _make(cls, iterable: Any) -> Any:
        return tuple.__new__(cls, iterable)

    def _replace(self, **changes: Any) -> Any:
        if len(changes) == 1:
            # One field (an action's id or hash, a run's history): the tuple
            # around it as it is, rather than a lookup for every field.
            ((field, value),) = changes.items()
            index = self._index.get(field)
            if index is not None:
                return tuple.__new__(type(self), (*self[:index], value, *self[index + 1 :]))
        made = tuple.__new__(type(self), map(changes.pop, self._fields, self))
        if changes:
            raise ValueError(f"{type(self).__name__} has no field {', '.join(changes)}")
        return made

    def _asdict(self) -> dict[str, Any]:
        return dict(zip(self._fields, self, strict=True))

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{field}={value!r}" for field, value in zip(self._fields, self, strict=True)
        )
        return f"{type(self).__name__}({shown})"

    def __getnewargs__(self) -> tuple[Any, ...]:
        return tuple(self)


if TYPE_CHECKING:
    from typing import NamedTuple as Record
else:
    # Subclass this as typing.NamedTuple is subclassed. The class itself rather
    # than a subclass of it: every class's making looks each special method up
    # along its bases, one fewer here for each of two dozen records.
    Record = _Record
