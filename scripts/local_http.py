"""Reading one HTTP/1.1 request off a socket, within bounds, for the local server.

scripts/local_server.py reads every request through this module rather than
through http.server's own reading, which has no time limit (a body shorter
than its Content-Length held the connection for as long as the client
wished), does not decode chunked bodies (their left-over chunk was read as a
second request), and answers its own refusals in HTML. The limits below, and
the answer to each refusal, are in docs/operating.md ("What `make run` refuses
itself"): the caller answers each `Refused` in the service's error shape, and
logs it; `Gone` is a client that closed before its request ended.
"""

from __future__ import annotations

import re
import socket
import time
from email.message import Message

# A connection kept alive waits this long for its next request.
IDLE_SECONDS = 60.0
# A request, from its first byte: no pause longer than PAUSE_SECONDS, all of it
# within REQUEST_SECONDS.
PAUSE_SECONDS = 5.0
REQUEST_SECONDS = 30.0
# http.server's own line limit, so that no request that worked before is refused.
MAX_REQUEST_LINE = 65_536
MAX_HEADER_BYTES = 65_536
MAX_HEADERS = 100
# A chunk's size line (the size in hex, and extensions, which are ignored).
MAX_CHUNK_LINE = 4096
_CHUNK_SIZE = re.compile(rb"([0-9A-Fa-f]{1,15})[ \t]*(?:;.*)?")
_DIGITS = re.compile(r"[0-9]{1,19}")
_RECEIVE = 65_536


class Refused(Exception):
    """A request the server answers with `status` and `message` itself."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Gone(Exception):
    """The client closed the connection before its request ended (it may
    still read an answer, if it closed only its sending side)."""


class Reader:
    """A socket's bytes, read line by line or by count, within the time limits
    of the request that is being read."""

    def __init__(self, connection: socket.socket) -> None:
        self._connection = connection
        self._buffer = bytearray()
        self._deadline = 0.0
        # What the request has got to, for the messages of a 408 and of Gone:
        # what it was sending, and how many bytes of it `exactly` waits for.
        self.reading = "the request line"
        self._expected: int | None = None

    def next_request(self, idle: float = IDLE_SECONDS) -> bool:
        """Wait for the first byte of a next request, at most `idle` seconds;
        False if none comes (the client closed, or stayed silent). Then the
        request's own time limits start."""
        if not self._buffer:
            try:
                self._connection.settimeout(idle)
                chunk = self._connection.recv(_RECEIVE)
            except OSError:  # a timeout or a reset: no request to answer
                return False
            if not chunk:
                return False
            self._buffer += chunk
        self._deadline = time.monotonic() + REQUEST_SECONDS
        self.reading = "the request line"
        return True

    def _where(self) -> str:
        if self._expected is None:
            return self.reading
        return f"{self.reading} ({len(self._buffer):,} of {self._expected:,} bytes)"

    def _fill(self) -> None:
        """More bytes of the request; Refused with 408 if it pauses too long,
        or takes too long in all."""
        remaining = self._deadline - time.monotonic()
        late = Refused(
            408,
            f"The request did not arrive within {REQUEST_SECONDS:g} s "
            f"(it was still sending {self._where()})",
        )
        if remaining <= 0:
            raise late
        self._connection.settimeout(min(PAUSE_SECONDS, remaining))
        try:
            chunk = self._connection.recv(_RECEIVE)
        except TimeoutError:
            if remaining <= PAUSE_SECONDS:
                raise late from None
            raise Refused(
                408,
                f"Nothing came for {PAUSE_SECONDS:g} s while the request was sending "
                f"{self._where()}",
            ) from None
        except OSError:
            raise Gone(
                f"The connection failed while the request was sending {self._where()}"
            ) from None
        if not chunk:
            raise Gone(f"The connection was closed while the request was sending {self._where()}")
        self._buffer += chunk

    def line(self, limit: int, too_long: Refused) -> bytes:
        """The next line, with its line end; `too_long` if no line end comes
        within `limit` bytes."""
        searched = 0
        while True:
            end = self._buffer.find(b"\n", searched, limit)
            if end >= 0:
                found = bytes(self._buffer[: end + 1])
                del self._buffer[: end + 1]
                return found
            if len(self._buffer) >= limit:
                raise too_long
            searched = len(self._buffer)
            self._fill()

    def exactly(self, count: int) -> bytes:
        """The next `count` bytes."""
        self._expected = count
        try:
            while len(self._buffer) < count:
                self._fill()
        finally:
            self._expected = None
        found = bytes(self._buffer[:count])
        del self._buffer[:count]
        return found

    def first_word(self) -> str:
        """The start of what was read and not taken, up to its first space:
        a request line's method, when the line itself was refused."""
        word = bytes(self._buffer[:32]).partition(b" ")[0]
        return word.decode("latin-1")

    def drain(self, seconds: float, most: int) -> None:
        """Read and drop what the client still sends, until it closes, `seconds`
        pass or `most` bytes came: after an answer that ends the connection, so
        that closing it with unread bytes does not reset it before the client
        has read the answer."""
        self._buffer.clear()
        deadline = time.monotonic() + seconds
        dropped = 0
        while dropped < most:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            try:
                self._connection.settimeout(remaining)
                chunk = self._connection.recv(_RECEIVE)
            except OSError:
                return
            if not chunk:
                return
            dropped += len(chunk)


def request_line(reader: Reader) -> bytes:
    """The request line, within MAX_REQUEST_LINE bytes."""
    too_long = Refused(
        414, f"The request line is longer than {MAX_REQUEST_LINE:,} bytes: shorten the query"
    )
    line = reader.line(MAX_REQUEST_LINE + 2, too_long)
    if line in (b"\r\n", b"\n"):  # one empty line before it is allowed (RFC 9112)
        line = reader.line(MAX_REQUEST_LINE + 2, too_long)
    return line


def header_fields(reader: Reader, kind: str = "header") -> bytes:
    """The header (or trailer) fields' block, ending with its empty line,
    within MAX_HEADER_BYTES and MAX_HEADERS."""
    reader.reading = f"its {kind} fields"
    fields = bytearray()
    count = 0
    too_large = Refused(
        431, f"The request's {kind} fields are longer than {MAX_HEADER_BYTES:,} bytes in all"
    )
    while True:
        field = reader.line(MAX_HEADER_BYTES - len(fields) + 2, too_large)
        if field in (b"\r\n", b"\n"):
            return bytes(fields) + b"\r\n"
        count += 1
        if count > MAX_HEADERS:
            raise Refused(431, f"The request has more than {MAX_HEADERS} {kind} fields")
        fields += field


def body_framing(headers: Message, most: int) -> tuple[int, bool]:
    """How the body comes: (its Content-Length, False), or (0, True) when it
    is chunked; Refused if the framing is not one the server reads, or the
    announced length is over `most` bytes."""
    codings = headers.get_all("Transfer-Encoding") or []
    lengths = headers.get_all("Content-Length") or []
    if codings:
        if lengths:
            raise Refused(400, "A request has either Transfer-Encoding or Content-Length, not both")
        named = [coding.strip().lower() for value in codings for coding in value.split(",")]
        if named != ["chunked"]:
            raise Refused(
                400,
                "The only transfer coding served is chunked: send the body with a "
                "Content-Length, or with Transfer-Encoding: chunked",
            )
        return 0, True
    if not lengths:
        return 0, False
    values = {value.strip() for joined in lengths for value in joined.split(",")}
    if len(values) != 1 or not _DIGITS.fullmatch(next(iter(values))):
        raise Refused(400, "Content-Length must be one number of bytes")
    length = int(values.pop())
    if length > most:
        raise Refused(413, body_too_large(most))
    return length, False


def body_too_large(most: int) -> str:
    return f"The request body is larger than {most:,} bytes; nothing was read"


def read_chunked(reader: Reader, most: int) -> bytes:
    """A chunked body, decoded (its trailer fields are read and dropped)."""
    body = bytearray()
    malformed = Refused(
        400,
        "The chunked body is malformed: each chunk is its size in hex, CRLF, its bytes, CRLF",
    )
    while True:
        size_line = reader.line(MAX_CHUNK_LINE, malformed)
        match = _CHUNK_SIZE.fullmatch(size_line.rstrip(b"\r\n"))
        if match is None:
            raise malformed
        size = int(match[1], 16)
        if size == 0:
            break
        if len(body) + size > most:
            raise Refused(413, body_too_large(most))
        body += reader.exactly(size)
        if reader.line(2, malformed) not in (b"\r\n", b"\n"):
            raise malformed
    header_fields(reader, "trailer")  # read and dropped
    return bytes(body)
