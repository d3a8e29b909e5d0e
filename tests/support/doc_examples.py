"""The examples of README.md and docs/*.md, read from the pages and run as a
reader runs them (tests/local/test_doc_examples.py). The convention, which
docs/development.md explains to the pages' writers:

- An example block is a ```sh block in which a command runs `curl` against
  `localhost:8000`. Its commands run in page order, in one bash shell per page
  (so a variable set by one is seen by the next), on a fresh database.
- A block with a `curl` to anywhere else is not run, and must say why on the
  line before it: `<!-- not run: the reason -->`.
- `# -> ...` on the line right after a command is what it answers; a command
  without one must succeed (curl: a 2xx status; anything else: exit 0).
  - `# -> 409 {"error": "..."}`: the HTTP status, then the body, a JSON value
    that may go on over the next `#` lines. `...` stands for what the page
    leaves out: a value (`"created_at": ...`), more members of an object
    (`{"id": 1, ...}`, where without it the members must be exactly those
    shown), any number of items of an array (`[{"actor": "maria", ...}, ...]`),
    or any text inside a string (`"whsec_..."`).
  - `# -> 200 Idempotent-Replayed: true`: a header the answer carries (one per
    line, before the body; its value may hold `...` too).
  - `# -> valid: run 1, ...`: what a command other than curl prints, one line.
  - With `curl ... > FILE` the body is what curl wrote into FILE.
- `make run` (or `make run &`) in an example block starts the page's server
  with what the shell exported before it; a page that starts none is run
  against a `make run` started before its first example.
- A ```python block whose first line is `# save as NAME` (a ```js block: `//
  save as NAME`) is written to NAME in the examples' working directory before
  the page's commands run.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shlex
import signal
import subprocess
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Optional, Union

PROJECT_DIR = Path(__file__).resolve().parents[2]
DOC_PORT = "localhost:8000"
NOT_RUN = re.compile(r"^<!--\s*not run:\s*(\S.*?)\s*-->$")
FENCE = re.compile(r"^(\s*)```(\S*)\s*$")
STATUS = re.compile(r"^(\d{3})(?:\s+(.*))?$")
HEADER = re.compile(r"^([A-Za-z][A-Za-z0-9-]*):\s*(.*)$")
SAVE_AS = re.compile(r"^(?:#|//)\s*save as\s+(\S+)\s*$")
# The blocks a page may have its reader save, by their language.
SAVED = ("python", "js")
SENTINEL = "\x1e"


class PageError(ValueError):
    """A page that does not follow the convention (the message says where)."""


# -- answers: JSON with `...` ---------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class AnyValue:
    """`...` where a value goes: anything."""


@dataclasses.dataclass(frozen=True)
class Rest:
    """`...` among an array's items: any number of items, none included."""


@dataclasses.dataclass(frozen=True)
class Text:
    """A string; `...` in it stands for any text."""

    shown: str

    def matches(self, value: str) -> bool:
        parts = (re.escape(part) for part in self.shown.split("..."))
        return re.fullmatch(".*".join(parts), value, re.DOTALL) is not None


@dataclasses.dataclass(frozen=True)
class Exact:
    value: Union[int, float, bool, None]


@dataclasses.dataclass(frozen=True)
class Obj:
    members: tuple[tuple[str, Pattern], ...]
    open: bool  # `...` among the members: others may be there too


@dataclasses.dataclass(frozen=True)
class Arr:
    items: tuple[Union[Pattern, Rest], ...]


Pattern = Union[AnyValue, Text, Exact, Obj, Arr]

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<rest>\.\.\.)
      | (?P<string>"(?:[^"\\]|\\.)*")
      | (?P<number>-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)
      | (?P<literal>true|false|null)
      | (?P<punct>[{}\[\]:,])
    )""",
    re.VERBOSE,
)


def _tokens(text: str) -> list[tuple[str, str]]:
    found, at = [], 0
    while at < len(text):
        if text[at:].strip() == "":
            break
        match = _TOKEN.match(text, at)
        if not match or match.lastgroup is None:
            raise PageError(f"not JSON with `...`: {text[at : at + 40]!r}")
        found.append((match.lastgroup, match.group(match.lastgroup)))
        at = match.end()
    return found


def parse_pattern(text: str) -> Pattern:
    """The pattern an answer's body shows: JSON, with `...` where the page leaves out."""
    tokens = _tokens(text)
    pattern, at = _value(tokens, 0)
    if at != len(tokens):
        raise PageError(f"more after the JSON value: {text!r}")
    return pattern


def _value(tokens: list[tuple[str, str]], at: int) -> tuple[Pattern, int]:
    if at >= len(tokens):
        raise PageError("the JSON value ends too early")
    kind, text = tokens[at]
    if kind == "rest":
        return AnyValue(), at + 1
    if kind == "string":
        return Text(json.loads(text)), at + 1
    if kind in ("number", "literal"):
        return Exact(json.loads(text)), at + 1
    if text == "{":
        return _object(tokens, at + 1)
    if text == "[":
        return _array(tokens, at + 1)
    raise PageError(f"a JSON value cannot start with {text!r}")


def _expect(tokens: list[tuple[str, str]], at: int, *texts: str) -> str:
    if at >= len(tokens) or tokens[at][1] not in texts:
        got = tokens[at][1] if at < len(tokens) else "the end"
        raise PageError(f"expected {' or '.join(texts)} in the JSON, not {got}")
    return tokens[at][1]


def _object(tokens: list[tuple[str, str]], at: int) -> tuple[Pattern, int]:
    members: list[tuple[str, Pattern]] = []
    is_open = False
    if at < len(tokens) and tokens[at][1] == "}":
        return Obj((), False), at + 1
    while True:
        kind, text = tokens[at] if at < len(tokens) else ("end", "")
        if kind == "rest":
            is_open, at = True, at + 1
        elif kind == "string":
            _expect(tokens, at + 1, ":")
            value, at = _value(tokens, at + 2)
            members.append((json.loads(text), value))
        else:
            raise PageError(f"expected a member or ... in the JSON object, not {text!r}")
        if _expect(tokens, at, ",", "}") == "}":
            return Obj(tuple(members), is_open), at + 1
        at += 1


def _array(tokens: list[tuple[str, str]], at: int) -> tuple[Pattern, int]:
    items: list[Union[Pattern, Rest]] = []
    if at < len(tokens) and tokens[at][1] == "]":
        return Arr(()), at + 1
    while True:
        if at < len(tokens) and tokens[at][0] == "rest":
            items.append(Rest())
            at += 1
        else:
            item, at = _value(tokens, at)
            items.append(item)
        if _expect(tokens, at, ",", "]") == "]":
            return Arr(tuple(items)), at + 1
        at += 1


def mismatches(pattern: Pattern, value: Any, path: str = "$") -> list[str]:
    """Where `value` differs from what the page shows; empty when it answers that."""
    if isinstance(pattern, AnyValue):
        return []
    if isinstance(pattern, Text):
        if isinstance(value, str) and pattern.matches(value):
            return []
        return [f"{path}: the page shows {json.dumps(pattern.shown)}, got {_short(value)}"]
    if isinstance(pattern, Exact):
        same = type(value) is type(pattern.value) and value == pattern.value
        if same or (_is_number(value) and _is_number(pattern.value) and value == pattern.value):
            return []
        return [f"{path}: the page shows {json.dumps(pattern.value)}, got {_short(value)}"]
    if isinstance(pattern, Obj):
        if not isinstance(value, dict):
            return [f"{path}: the page shows an object, got {_short(value)}"]
        found = []
        for name, member in pattern.members:
            if name not in value:
                found.append(f"{path}: no member {json.dumps(name)}")
            else:
                found += mismatches(member, value[name], f"{path}.{name}")
        shown = {name for name, _ in pattern.members}
        extra = [name for name in value if name not in shown]
        if extra and not pattern.open:
            found.append(f"{path}: members the page does not show (add ...?): {extra}")
        return found
    if not isinstance(value, list):
        return [f"{path}: the page shows an array, got {_short(value)}"]
    if not any(isinstance(item, Rest) for item in pattern.items):
        if len(value) != len(pattern.items):
            return [f"{path}: the page shows {len(pattern.items)} items, got {len(value)}"]
        found = []
        for index, (item, got) in enumerate(zip(pattern.items, value, strict=True)):
            assert not isinstance(item, Rest)
            found += mismatches(item, got, f"{path}[{index}]")
        return found
    if _fits(pattern.items, value, path):
        return []
    return [f"{path}: no items in this order match what the page shows; got {_short(value)}"]


def _fits(items: tuple[Union[Pattern, Rest], ...], values: list[Any], path: str) -> bool:
    if not items:
        return not values
    head, tail = items[0], items[1:]
    if isinstance(head, Rest):
        return any(_fits(tail, values[skip:], path) for skip in range(len(values) + 1))
    return bool(values) and not mismatches(head, values[0], path) and _fits(tail, values[1:], path)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _short(value: Any, limit: int = 300) -> str:
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."


# -- pages ----------------------------------------------------------------------------


@dataclasses.dataclass
class Answer:
    """What the page shows a command answering."""

    status: Optional[int] = None  # an HTTP answer's status; None: a command's output
    headers: list[tuple[str, Text]] = dataclasses.field(default_factory=list)
    body: Optional[Pattern] = None
    text: Optional[Text] = None


@dataclasses.dataclass
class Example:
    page: str
    line: int  # 1-based, of the command's first line
    command: str
    answer: Optional[Answer] = None

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line}"


@dataclasses.dataclass
class Page:
    name: str
    examples: list[Example]
    files: dict[str, str]  # saved as, content


def _blocks(lines: list[str]) -> Iterator[tuple[str, int, list[str], Optional[str]]]:
    """(language, first content line's number, content lines, the not-run reason)."""
    at = 0
    while at < len(lines):
        fence = FENCE.match(lines[at])
        if not fence:
            at += 1
            continue
        indent, language = fence.group(1), fence.group(2)
        before = next((line.strip() for line in reversed(lines[:at]) if line.strip()), "")
        reason = NOT_RUN.match(before)
        end = at + 1
        while end < len(lines) and lines[end].strip() != "```":
            end += 1
        content = [line.removeprefix(indent) for line in lines[at + 1 : end]]
        yield language, at + 2, content, reason.group(1) if reason else None
        at = end + 1


def _complete(text: str) -> bool:
    """Whether `text` is a whole command: no open quote or parenthesis, and no
    line that ends in a continuation (`\\`, `|`, `&&`, `||`)."""
    depth, quote, at, code = 0, "", 0, []
    while at < len(text):
        char = text[at]
        if quote == "'":
            quote = "" if char == "'" else quote
        elif char == "\\":
            at += 1
            code.append(" ")
        elif quote == '"':
            quote = "" if char == '"' else quote
        elif char in "'\"":
            quote = char
        elif char == "#" and (at == 0 or text[at - 1].isspace()):
            while at < len(text) and text[at] != "\n":
                at += 1
            continue
        else:
            depth += {"(": 1, ")": -1}.get(char, 0)
            code.append(char)
        at += 1
    ends = "".join(code).rstrip()
    return (
        not quote
        and depth <= 0
        and not ends.endswith(("|", "&&", "\\"))
        and not (text.rstrip().endswith("\\"))
    )


def _runs_curl(command: str) -> bool:
    return re.search(r"(^|[\s|;&($])curl\s", command) is not None


def _answer(pieces: list[str], where: str) -> tuple[Answer, int]:
    """The answer that `# -> ...` (pieces[0], after the arrow) and the comment
    lines right after it show; and how many of those lines it takes."""
    status = STATUS.match(pieces[0])
    if not status:
        return Answer(text=Text(pieces[0])), 1
    answer = Answer(status=int(status.group(1)))
    body = ""
    for index, text in enumerate([status.group(2) or "", *pieces[1:]]):
        if body:
            body += " " + text
        elif text.startswith(("{", "[", '"')):
            body = text
        elif header := HEADER.match(text):
            answer.headers.append((header.group(1), Text(header.group(2))))
            continue
        elif index == 0 and text:
            raise PageError(f"{where}: neither a header nor a JSON body after the status: {text!r}")
        elif index == 0:
            continue
        else:
            return answer, index  # a comment of the page's own
        if _balanced(body):
            answer.body = parse_pattern(body)
            return answer, index + 1
    if body:
        raise PageError(f"{where}: the answer's JSON does not end")
    return answer, len(pieces)


def _balanced(text: str) -> bool:
    depth = 0
    for kind, token in _tokens(text):
        if kind == "punct" and token in "{[":
            depth += 1
        elif kind == "punct" and token in "}]":
            depth -= 1
    return depth == 0


def _sh_examples(name: str, first_line: int, content: list[str]) -> list[Example]:
    examples: list[Example] = []
    pending: list[str] = []
    start = 0
    at = 0
    last_end = -1  # the index of the last line of the last command
    while at < len(content):
        line = content[at]
        stripped = line.strip()
        if pending:
            pending.append(line)
        elif stripped.startswith("# ->"):
            where = f"{name}:{first_line + at}"
            if not examples or last_end != at - 1:
                raise PageError(f"{where}: an answer that does not follow a command")
            if examples[-1].answer is not None:
                raise PageError(f"{where}: a second answer for one command")
            pieces = [stripped[len("# ->") :].strip()]
            for following in content[at + 1 :]:
                if not following.strip().startswith("#") or following.strip().startswith("# ->"):
                    break
                pieces.append(following.strip()[1:].strip())
            examples[-1].answer, taken = _answer(pieces, where)
            at += taken
            continue
        elif not stripped or stripped.startswith("#"):
            at += 1
            continue
        else:
            pending, start = [line], at
        if _complete("\n".join(pending)):
            command = "\n".join(pending)
            examples.append(Example(name, first_line + start, command))
            last_end = at
            pending = []
        at += 1
    if pending:
        raise PageError(f"{name}:{first_line + start}: a command that does not end")
    return examples


def read_page(path: Path, name: Optional[str] = None) -> Page:
    """The examples of one page, in order, and the files it has the reader save."""
    name = name or str(path.relative_to(PROJECT_DIR))
    lines = path.read_text(encoding="utf-8").splitlines()
    examples: list[Example] = []
    files: dict[str, str] = {}
    for language, first_line, content, not_run in _blocks(lines):
        save_as = SAVE_AS.match(content[0]) if language in SAVED and content else None
        if save_as:
            files[save_as.group(1)] = "\n".join(content) + "\n"
        if language not in ("sh", "bash", "shell", "console"):
            continue
        text = "\n".join(content)
        if not _runs_curl(text) or not_run:
            continue
        if DOC_PORT not in text:
            raise PageError(
                f"{name}:{first_line}: a curl example that is not run "
                f"(not on {DOC_PORT}) must say why: <!-- not run: ... --> before it"
            )
        examples += _sh_examples(name, first_line, content)
    return Page(name, examples, files)


# -- running them ---------------------------------------------------------------------

_PRELUDE = r"""
set -u
__DIR=$(pwd)/.examples
mkdir -p "$__DIR"
# The page's commands run from the project, as the reader runs them.
make() { command make -C "$__PROJECT" --no-print-directory "$@"; }
curl() { command curl -D "$__DIR/headers.$__N" "$@"; }
__serve() {
    if [ -e "$__DIR/server.pid" ]; then echo "a page starts one server" >&2; return 1; fi
    set -m
    make run >"$__DIR/server.out" 2>&1 &
    echo $! >"$__DIR/server.pid"
    set +m
    for __i in $(seq 600); do
        command curl -s -o /dev/null "http://127.0.0.1:$PORT/openapi.json" && return 0
        if ! kill -0 "$(cat "$__DIR/server.pid")" 2>/dev/null; then
            cat "$__DIR/server.out" >&2
            return 1
        fi
        sleep 0.1
    done
    echo "make run does not answer after 60 s" >&2
    return 1
}
__stop() {
    if [ -e "$__DIR/server.pid" ]; then
        kill -TERM -- "-$(cat "$__DIR/server.pid")" 2>/dev/null
        wait
    fi
}
trap __stop EXIT
__N=0
"""


def _is_make_run(command: str) -> bool:
    try:
        words = shlex.split(command, comments=True)
    except ValueError:
        return False
    return words in (["make", "run"], ["make", "run", "&"])


def script(page: Page, port: int) -> str:
    """The bash script that runs the page's examples in order, each followed by a
    line naming it and its exit status."""
    parts = [_PRELUDE]
    if not any(_is_make_run(example.command) for example in page.examples):
        parts.append("__serve || exit 99")
    for number, example in enumerate(page.examples, start=1):
        if _is_make_run(example.command):
            command = "__serve || exit 99"
        else:
            command = example.command.replace(DOC_PORT, f"localhost:{port}")
        parts += [f"__N={number}", command, f"printf '\\n{SENTINEL}%s %s\\n' {number} $?"]
    return "\n".join(parts) + "\n"


@dataclasses.dataclass
class Outcome:
    """What one command did."""

    output: str
    exit_status: int
    http_status: Optional[int] = None
    headers: dict[str, str] = dataclasses.field(default_factory=dict)


def _headers(path: Path) -> tuple[Optional[int], dict[str, str]]:
    if not path.exists():
        return None, {}
    # The last response curl received (after any 100 Continue).
    block = path.read_text(encoding="latin-1").replace("\r\n", "\n").strip().split("\n\n")[-1]
    first, *rest = block.split("\n")
    if not first.startswith("HTTP/"):
        return None, {}  # curl ran, but got no answer (nothing listening, say)
    headers = {}
    for line in rest:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    return int(first.split()[1]), headers


def _body(example: Example, outcome: Outcome, work_dir: Path) -> str:
    words = shlex.split(example.command, comments=True)
    for index, word in enumerate(words):
        if word == ">" and index + 1 < len(words):
            return (work_dir / words[index + 1]).read_text(encoding="utf-8")
        if word.startswith(">") and len(word) > 1:
            return (work_dir / word[1:]).read_text(encoding="utf-8")
    text = outcome.output
    if text.startswith("HTTP/"):  # curl -i: the headers, a blank line, the body
        text = re.split(r"\r?\n\r?\n", text, maxsplit=1)[-1]
    return text


def problems(example: Example, outcome: Outcome, work_dir: Path) -> list[str]:
    """How the command's answer differs from what the page shows it answering."""
    answer = example.answer
    if outcome.http_status is None:
        if outcome.exit_status != 0:
            return [f"exit status {outcome.exit_status}"]
        if answer is None:
            return []
        if answer.text is None:
            return ["the page shows an HTTP answer, but the command sent no request"]
        if answer.text.matches(outcome.output.strip()):
            return []
        printed = outcome.output.strip()
        return [f"the page shows {answer.text.shown!r}, the command printed {printed!r}"]
    found = [] if outcome.exit_status == 0 else [f"exit status {outcome.exit_status}"]
    if answer is None or answer.status is None:
        if not 200 <= outcome.http_status < 300:
            found.append(f"answered {outcome.http_status}, and the page shows no answer")
        if answer is not None:
            found.append("the page shows printed text, but the command's output is an HTTP answer")
        return found
    if outcome.http_status != answer.status:
        found.append(f"the page shows {answer.status}, the server answered {outcome.http_status}")
    for name, value in answer.headers:
        got = outcome.headers.get(name.lower())
        if got is None or not value.matches(got):
            found.append(f"the page shows {name}: {value.shown}, the answer has {got!r}")
    if answer.body is not None:
        text = _body(example, outcome, work_dir)
        try:
            body = json.loads(text)
        except ValueError:
            return [*found, f"the body is not JSON: {text[:300]!r}"]
        found += mismatches(answer.body, body)
    return found


def run(
    page: Page, work_dir: Path, env: Mapping[str, str], port: int, timeout: float = 240
) -> list[str]:
    """Run the page's examples in `work_dir` against a fresh `make run` on `port`;
    what differs from the page, one message per example that does."""
    for name, content in page.files.items():
        (work_dir / name).write_text(content, encoding="utf-8")
    (work_dir / "examples.sh").write_text(script(page, port), encoding="utf-8")
    # PYTHONPATH: `python3 -m chalicelib...` finds the project, as from its root.
    environment = {
        **env,
        "PORT": str(port),
        "PYTHONPATH": str(PROJECT_DIR),
        "__PROJECT": str(PROJECT_DIR),
    }
    process = subprocess.Popen(
        ["bash", "examples.sh"],
        cwd=work_dir,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill(process.pid)
        out, err = process.communicate()
        return [f"{page.name}: the examples did not end within {timeout} s"]
    finally:
        _stop_server(work_dir)
    stdout, stderr = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
    outcomes = _outcomes(stdout, work_dir)
    found = []
    for number, example in enumerate(page.examples, start=1):
        first_line = example.command.splitlines()[0]
        if number not in outcomes:
            found.append(f"{example.where}: did not run ({first_line})\n  stderr: {stderr[-2000:]}")
            break
        outcome = outcomes[number]
        wrong = problems(example, outcome, work_dir)
        if wrong:
            got = f"{outcome.http_status or ''} {outcome.output.strip()[:1500]}".strip()
            found.append(
                f"{example.where}: {first_line}\n  " + "\n  ".join(wrong) + f"\n  got: {got}"
            )
    return found


def _outcomes(stdout: str, work_dir: Path) -> dict[int, Outcome]:
    outcomes = {}
    pieces = re.split(rf"\n{SENTINEL}(\d+) (\d+)\n", stdout)
    for index in range(1, len(pieces) - 1, 3):
        number, exit_status = int(pieces[index]), int(pieces[index + 1])
        status, headers = _headers(work_dir / ".examples" / f"headers.{number}")
        outcomes[number] = Outcome(pieces[index - 1], exit_status, status, headers)
    return outcomes


def _kill(group: int) -> None:
    try:
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _stop_server(work_dir: Path) -> None:
    """The server a page started, should the script have left it behind."""
    pid_file = work_dir / ".examples" / "server.pid"
    if pid_file.exists() and pid_file.read_text().strip():
        _kill(int(pid_file.read_text()))
