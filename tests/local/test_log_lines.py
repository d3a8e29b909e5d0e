"""Every line on standard output is written whole: the access lines of request
threads and the event lines of the dispatcher thread (WORKFLOW_EVENTS=log)
never cut each other, on a pipe, as `make run`'s output is.

A process of its own writes them through the service's own writers
(access_log.write and dispatch.log_sink) from many threads at once, with the
interpreter switching threads as often as it can; this test reads its
standard output through a pipe and parses every line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

from tests.support.processes import PROJECT_DIR

THREADS = 8
LINES_PER_THREAD = 1500

WRITERS = textwrap.dedent(
    f"""
    import sys, threading
    from chalicelib.api import access_log
    from chalicelib.delivery import dispatch
    from chalicelib.domain.models import Event

    # Switch threads as often as the interpreter can: a line written in two
    # parts (print's text, then its newline) would be cut at once.
    sys.setswitchinterval(1e-6)
    start = threading.Barrier({THREADS})

    def access(n):
        start.wait()
        for i in range({LINES_PER_THREAD}):
            access_log.write({{"request_id": f"{{n}}-{{i}}", "method": "GET", "route": "/x",
                              "status": 200, "duration_ms": 0.1, "pad": "a" * (i % 700)}})

    def events(n):
        start.wait()
        for i in range({LINES_PER_THREAD}):
            body = '{{"id": "%d-%d", "data": {{"pad": "%s"}}}}' % (n, i, "e" * (i % 900))
            dispatch.log_sink(Event(f"{{n}}-{{i}}", "runs/1", i + 1, "t", body), 0.0)

    threads = [threading.Thread(target=access if n % 2 else events, args=(n,))
               for n in range({THREADS})]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    """
)


def test_access_lines_and_event_lines_from_many_threads_are_each_written_whole() -> None:
    result = subprocess.run(
        [sys.executable, "-c", WRITERS],
        cwd=PROJECT_DIR,
        capture_output=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr.decode()
    lines = result.stdout.decode().split("\n")
    assert lines[-1] == ""  # the output ends with a newline
    parsed = []
    for number, line in enumerate(lines[:-1], 1):
        try:
            parsed.append(json.loads(line))
        except ValueError:
            raise AssertionError(f"line {number} is not one JSON value: {line[:200]!r}") from None
    access = {line["request_id"] for line in parsed if "request_id" in line}
    events = {line["id"] for line in parsed if "id" in line}
    expected = {f"{n}-{i}" for n in range(THREADS) for i in range(LINES_PER_THREAD)}
    assert access | events == expected
    assert len(parsed) == THREADS * LINES_PER_THREAD
