"""The events a decision's action item carries, packed.

A change that records an action (a decision: approve, reject, cancel, a
deadline's rejection) writes its events into its last action item instead of
one event item each: the same CloudEvents, ids, sequences and order, in the
same transaction, but two write units per event fewer (an approval's two
events were two items of about 750 bytes, each a write unit doubled in the
transaction; packed, both fit in the action item's own 1 KB). The relay puts
them on the bus from the item's stream record, the run's event list and the
webhook sender read them from the item, and their delivery state is kept on
it (docs/storage.md).

    events           B  FORMAT, then raw DEFLATE of one line per event,
                        "<id>\\t<type>\\t<CloudEvent JSON>", in sequence order
                        (compact JSON has neither tab nor newline)
    events_from      N  the first event's sequence (the others follow it)
    events_count     N  how many there are
    events_delivered N  how many of them were delivered, in order (none: 0)
    attempts, next_attempt_at   of the first not delivered yet, as on an event item

Only zlib (the standard library's): the relay imports this without the rest
of the storage.
"""

from __future__ import annotations

import base64
import zlib
from collections.abc import Mapping, Sequence
from typing import Any

EVENTS = "events"
FROM = "events_from"
COUNT = "events_count"
DELIVERED = "events_delivered"
# The first byte of `events`: how the rest is packed.
FORMAT = b"\x01"


def pack(events: Sequence[tuple[str, str, str]]) -> bytes:
    """`events`' (id, type, body), packed for the `events` attribute."""
    text = "\n".join(f"{event_id}\t{kind}\t{body}" for event_id, kind, body in events)
    squeezer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return FORMAT + squeezer.compress(text.encode("utf-8")) + squeezer.flush()


def unpack(packed: bytes | str) -> list[tuple[str, str, str]]:
    """The (id, type, body) of each event `pack` packed, in order; `packed` as
    boto3 reads it (bytes) or as a stream record's JSON holds it (base64)."""
    data = base64.b64decode(packed) if isinstance(packed, str) else bytes(packed)
    if data[:1] != FORMAT:
        raise ValueError(f"carried events packed in an unknown format {data[:1]!r}")
    text = zlib.decompress(data[1:], -15).decode("utf-8")
    found = []
    for line in text.split("\n"):
        event_id, kind, body = line.split("\t", 2)
        found.append((event_id, kind, body))
    return found


def carries(item: Mapping[str, Any]) -> bool:
    """Whether the item (an action's, read or streamed) carries events."""
    return EVENTS in item
