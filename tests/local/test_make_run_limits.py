"""`make run` as people run it on a shared box, sent what clients really send
over real sockets: chunked bodies, a huge query, a huge header, a body
shorter than its Content-Length, a client that leaves mid-body, 50 clients at
once. Each is answered in the service's error shape ({"error": ...}, JSON,
never http.server's HTML) within 10 s, with one access line, and no
traceback; 50 concurrent clients see no reset.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.http import RawAnswer, raw_exchange, request
from tests.support.processes import command_env, free_port, started, wait_listening

# Every answer here comes within this long (the bound).
ANSWER_SECONDS = 10
START_SECONDS = 60


class Served:
    """A `make run` process on a free port, and what it wrote."""

    def __init__(self, port: int, out: Path) -> None:
        self.port = port
        self.out = out

    def lines(self) -> list[dict[str, Any]]:
        """Every line the server wrote after its "Serving on ..." line (before
        it, make may have installed what serving needs), each parsed as JSON:
        one that does not parse fails the test."""
        text = (self.out / "stdout").read_text()
        assert text.endswith("\n"), "a line was cut"
        lines = text.splitlines()
        start = next(n for n, line in enumerate(lines) if line.startswith("Serving on http://"))
        return [json.loads(line) for line in lines[start + 1 :]]

    def access_lines(self) -> list[dict[str, Any]]:
        return [line for line in self.lines() if "request_id" in line]

    def lines_of(self, request_id: str) -> list[dict[str, Any]]:
        return [line for line in self.access_lines() if line["request_id"] == request_id]

    def stderr(self) -> str:
        return (self.out / "stderr").read_text()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    out = tmp_path_factory.mktemp("make-run")
    port = free_port()
    command = ["make", "--no-print-directory", "run", f"PORT={port}"]
    with started(command, command_env(out), out) as server:
        wait_listening(port, server, START_SECONDS)
        yield Served(port, out)


def _refused(served: Served, answer: RawAnswer, status: int) -> dict[str, Any]:
    """The answer is `status` {"error": ...} in JSON, within the bound, with
    one access line saying so and no traceback; the access line."""
    assert answer.status == status, answer
    assert answer.headers["content-type"] == "application/json"
    assert set(answer.json()) == {"error"}
    assert answer.seconds < ANSWER_SECONDS
    lines = served.lines_of(answer.headers["x-request-id"])
    assert [line["status"] for line in lines] == [status]
    assert "Traceback" not in served.stderr()
    return lines[0]


def _post(path: str, fields: str, body: bytes) -> bytes:
    return (
        f"POST {path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n{fields}\r\n"
    ).encode() + body


def _chunked(body: bytes, size: int) -> bytes:
    pieces = [body[i : i + size] for i in range(0, len(body), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"


def _workflow(name: str) -> bytes:
    return json.dumps({"name": name, "steps": ["a"]}).encode()


def test_a_chunked_body_is_decoded_and_the_connection_carries_on(served: Served) -> None:
    body = _workflow("Chunked")
    with socket.create_connection(("127.0.0.1", served.port), timeout=ANSWER_SECONDS) as sock:
        sock.sendall(
            _post("/workflows", "Transfer-Encoding: chunked\r\n", _chunked(body, 7))
            # The next request on the same connection: read as one, not as a leftover.
            + b"GET /workflows?limit=100 HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
        )
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    first, second = received.split(b"HTTP/1.1 ")[1:]
    assert first.startswith(b"201 "), first
    created = json.loads(first.partition(b"\r\n\r\n")[2])
    assert created["name"] == "Chunked"
    assert second.startswith(b"200 "), second
    listed = json.loads(second.partition(b"\r\n\r\n")[2])
    assert created["id"] in [workflow["id"] for workflow in listed["items"]]


def test_a_chunked_body_with_extensions_and_trailer_fields_is_decoded(served: Served) -> None:
    body = _workflow("Chunked with trailers")
    chunks = b"%x;name=value\r\n%s\r\n0\r\nX-Checksum: 1\r\n\r\n" % (len(body), body)
    answer = raw_exchange(
        served.port, _post("/workflows", "Transfer-Encoding: chunked\r\n", chunks)
    )
    assert answer.status == 201, answer
    assert answer.json()["name"] == "Chunked with trailers"


@pytest.mark.parametrize(
    "fields, body, status",
    [
        ("Transfer-Encoding: chunked\r\n", b"zz\r\n{}\r\n0\r\n\r\n", 400),
        ("Transfer-Encoding: chunked\r\n", b"2\r\n{}XX0\r\n\r\n", 400),
        ("Transfer-Encoding: gzip, chunked\r\n", b"0\r\n\r\n", 400),
        ("Transfer-Encoding: chunked\r\nContent-Length: 2\r\n", b"0\r\n\r\n", 400),
        ("Content-Length: abc\r\n", b"", 400),
        ("Content-Length: -1\r\n", b"", 400),
        ("Content-Length: 2\r\nContent-Length: 3\r\n", b"{}", 400),
        ("Content-Length: 2000000\r\n", b"", 413),
        ("Transfer-Encoding: chunked\r\n", _chunked(b"x" * 1_100_000, 100_000), 413),
    ],
    ids=[
        "bad-chunk-size",
        "no-crlf-after-chunk",
        "other-coding",
        "both-framings",
        "length-not-a-number",
        "negative-length",
        "two-lengths",
        "length-over-1mb",
        "chunked-over-1mb",
    ],
)
def test_a_body_framed_wrong_or_too_large_is_refused_in_json_and_nothing_is_stored(
    served: Served, fields: str, body: bytes, status: int
) -> None:
    before = request(served.port, "GET", "/workflows?limit=100").json()["items"]
    answer = raw_exchange(served.port, _post("/workflows", fields, body), check_closed=True)
    line = _refused(served, answer, status)
    assert (line["method"], line["route"]) == ("POST", "/workflows")
    assert answer.closed  # what is left of the request is not read as another one
    assert request(served.port, "GET", "/workflows?limit=100").json()["items"] == before


def test_a_large_body_announced_with_expect_100_continue_is_refused_unread(
    served: Served,
) -> None:
    """curl sends Expect: 100-continue before a large body: the answer is the
    413, not a 100 Continue that would invite the megabytes."""
    with socket.create_connection(("127.0.0.1", served.port), timeout=ANSWER_SECONDS) as sock:
        sock.sendall(
            _post("/workflows", "Content-Length: 5000000\r\nExpect: 100-continue\r\n", b"")
        )
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    assert received.startswith(b"HTTP/1.1 413 "), received[:100]
    assert json.loads(received.partition(b"\r\n\r\n")[2]) == {
        "error": "The request body is larger than 1,048,576 bytes; nothing was read"
    }


def test_a_100_kb_query_is_answered_414_in_json(served: Served) -> None:
    data = b"GET /workflows?q=" + b"a" * 100_000 + b" HTTP/1.1\r\nHost: localhost\r\n\r\n"
    answer = raw_exchange(served.port, data, check_closed=True)
    line = _refused(served, answer, 414)
    assert line["method"] == "GET"
    assert answer.closed


def test_a_200_kb_header_is_answered_431_in_json(served: Served) -> None:
    data = b"GET /workflows HTTP/1.1\r\nHost: localhost\r\nX-Big: " + b"a" * 200_000 + b"\r\n\r\n"
    answer = raw_exchange(served.port, data, check_closed=True)
    line = _refused(served, answer, 431)
    assert (line["method"], line["route"]) == ("GET", "/workflows")
    assert answer.closed


def test_many_small_header_fields_past_the_limit_are_answered_431(served: Served) -> None:
    fields = "".join(f"X-{n}: {n}\r\n" for n in range(101))
    answer = raw_exchange(served.port, f"GET /workflows HTTP/1.1\r\n{fields}\r\n".encode())
    _refused(served, answer, 431)


def test_a_body_shorter_than_its_content_length_is_answered_408_and_freed(
    served: Served,
) -> None:
    """The client keeps the connection open and sends nothing more."""
    answer = raw_exchange(
        served.port, _post("/workflows", "Content-Length: 100\r\n", b'{"na'), check_closed=True
    )
    line = _refused(served, answer, 408)
    assert "4 of 100 bytes" in answer.json()["error"]
    assert answer.closed  # the connection is freed
    assert line["route"] == "/workflows"


def test_a_body_cut_short_by_closing_the_sending_side_is_answered_400(served: Served) -> None:
    answer = raw_exchange(
        served.port, _post("/workflows", "Content-Length: 100\r\n", b'{"na'), close_sending=True
    )
    _refused(served, answer, 400)
    assert "4 of 100 bytes" in answer.json()["error"]


def test_a_client_that_leaves_mid_body_leaves_one_line_and_no_traceback(served: Served) -> None:
    before = len(served.access_lines())
    with socket.create_connection(("127.0.0.1", served.port), timeout=ANSWER_SECONDS) as sock:
        sock.sendall(_post("/runs/1/approve", "Content-Length: 100\r\n", b'{"act'))
    deadline = time.monotonic() + ANSWER_SECONDS
    while len(served.access_lines()) == before:
        assert time.monotonic() < deadline, "no line for the request cut short"
        time.sleep(0.05)
    time.sleep(0.5)  # and no second one
    new = served.access_lines()[before:]
    assert [(line["method"], line["route"], line["status"]) for line in new] == [
        ("POST", "/runs/{run_id}/approve", 400)
    ]
    assert "Traceback" not in served.stderr()
    assert request(served.port, "GET", "/workflows").status == 200


def test_a_method_http_server_does_not_know_is_answered_by_the_app(served: Served) -> None:
    answer = raw_exchange(served.port, b"BREW /workflows HTTP/1.1\r\nHost: localhost\r\n\r\n")
    assert answer.status == 405
    assert answer.json() == {"error": "Unsupported method: BREW"}
    assert served.lines_of(answer.headers["x-request-id"])[0]["route"] == "/workflows"


def test_a_malformed_request_line_is_answered_400_in_json(served: Served) -> None:
    answer = raw_exchange(served.port, b"GET /workflows HTTP/1.1 extra\r\nHost: x\r\n\r\n")
    _refused(served, answer, 400)
    answer = raw_exchange(served.port, b"GET /workflows HTTP/2.0\r\nHost: x\r\n\r\n")
    _refused(served, answer, 505)


CLIENTS = 50


def test_50_concurrent_clients_each_get_their_answer_and_none_is_reset(served: Served) -> None:
    port = served.port
    created = request(port, "POST", "/workflows", {"name": "Concurrent", "steps": ["a"]})
    workflow_id = created.json()["id"]
    runs = [
        request(port, "POST", "/runs", {"workflow_id": workflow_id, "title": f"r{n}"}).json()["id"]
        for n in range(CLIENTS)
    ]
    start = threading.Barrier(CLIENTS)
    outcomes: dict[int, object] = {}

    def approve(n: int) -> None:
        start.wait()
        try:
            answer = request(port, "POST", f"/runs/{runs[n]}/approve", {"actor": f"user{n}"})
            outcomes[n] = answer.status
        except OSError as exc:  # ConnectionResetError among them
            outcomes[n] = repr(exc)

    threads = [threading.Thread(target=approve, args=(n,)) for n in range(CLIENTS)]
    began = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(ANSWER_SECONDS * 3)
    assert sorted(outcomes) == list(range(CLIENTS))
    assert [outcomes[n] for n in range(CLIENTS)] == [200] * CLIENTS
    assert time.monotonic() - began < ANSWER_SECONDS
    # Every line on standard output parses: the access lines and the event
    # lines (WORKFLOW_EVENTS=log, written meanwhile by the dispatcher thread).
    statuses = [
        line["status"]
        for line in served.access_lines()
        if line["route"] == "/runs/{run_id}/approve"
    ]
    assert statuses.count(200) >= CLIENTS
