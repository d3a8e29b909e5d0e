"""A function's execution environment, as Lambda's Python runtime runs it: the
handler imported once (the init phase), then one invocation after another.

    python -I -S bootstrap.py TASK_ROOT RUNTIME_DIR HANDLER (--answers FD | --check-imports)

Run by scripts/rehearsal/runtime.py in a fresh interpreter: isolated (-I: no
PYTHON* variables, no user site, not even this file's folder on the path) and
without site (-S: no site-packages), so the path holds the unzipped package,
then the runtime's boto3, then the standard library: nothing of the project
tree or its virtualenv. Standard library only, here.

Invocations arrive on standard input, one JSON line each ({"id", "event",
"deadline"}); each answer goes to file descriptor FD, one JSON line (the
handler's result, or Lambda's error shape). The function's own output, and
START, END and REPORT as Lambda writes them, go to standard output, which the
rehearsal sends on to CloudWatch Logs.
"""

from __future__ import annotations

import ast
import decimal
import importlib
import json
import os
import sys
import time
import traceback
from typing import Any


class Context:
    """What Lambda hands the handler beside the event."""

    def __init__(self, request_id: str, deadline: float) -> None:
        self.aws_request_id = request_id
        self.function_name = os.environ.get("AWS_LAMBDA_FUNCTION_NAME", "")
        self.function_version = os.environ.get("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        self.invoked_function_arn = os.environ.get("REHEARSAL_FUNCTION_ARN", "")
        self.memory_limit_in_mb = os.environ.get("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "")
        self.log_group_name = os.environ.get("AWS_LAMBDA_LOG_GROUP_NAME", "")
        self.log_stream_name = os.environ.get("AWS_LAMBDA_LOG_STREAM_NAME", "")
        self.identity = None
        self.client_context = None
        self._deadline = deadline

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.time()) * 1000))


def _decimal(value: Any) -> Any:
    # What Lambda's runtime does with the Decimals a DynamoDB read gives.
    if isinstance(value, decimal.Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _error(kind: str, exc: BaseException) -> dict[str, Any]:
    return {
        "errorType": kind,
        "errorMessage": str(exc),
        "stackTrace": traceback.format_exception(exc),
    }


def _imported_names(path: str) -> list[tuple[int, str, list[str]]]:
    """(line, module, names) of every import in a file, inside functions too,
    but not under `if TYPE_CHECKING:` (never run)."""
    with open(path, encoding="utf-8") as source:
        tree = ast.parse(source.read(), path)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skipped.update(id(child) for body in node.body for child in ast.walk(body))
    found: list[tuple[int, str, list[str]]] = []
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module, [alias.name for alias in node.names]))
    return found


def check_imports(task_root: str) -> list[str]:
    """Every import the app's own files make, resolved here: what would fail."""
    failures = []
    for folder, _, files in os.walk(task_root):
        relative = os.path.relpath(folder, task_root)
        own = relative == "." or relative.split(os.sep)[0] == "chalicelib"
        for filename in sorted(files) if own else []:
            if not filename.endswith(".py") or (relative == "." and filename != "app.py"):
                continue
            path = os.path.join(folder, filename)
            for line, module, names in _imported_names(path):
                where = f"{os.path.relpath(path, task_root)}:{line}"
                try:
                    imported = importlib.import_module(module)
                except Exception as exc:  # any failure to import is the finding
                    failures.append(f"{where}: import {module}: {type(exc).__name__}: {exc}")
                    continue
                for name in names:
                    if name != "*" and not hasattr(imported, name):
                        try:
                            importlib.import_module(f"{module}.{name}")
                        except Exception as exc:
                            failures.append(
                                f"{where}: from {module} import {name}: {type(exc).__name__}"
                            )
    return failures


def main() -> int:
    task_root, runtime_dir, handler = sys.argv[1:4]
    # Lambda's task root is read-only: no bytecode is written there either.
    sys.dont_write_bytecode = True
    sys.path[:0] = [task_root, runtime_dir]
    os.chdir(task_root)
    if "--check-imports" in sys.argv[4:]:
        print(json.dumps({"path": sys.path, "failures": check_imports(task_root)}))
        return 0
    answers = os.fdopen(int(sys.argv[sys.argv.index("--answers") + 1]), "w", encoding="utf-8")
    try:
        module, _, name = handler.rpartition(".")
        function = getattr(importlib.import_module(module), name)
        init_error = None
    except Exception as exc:  # Lambda reports it on every invocation
        function = None
        init_error = _error("Runtime.ImportModuleError", exc)
        traceback.print_exc()
    for line in sys.stdin:
        request = json.loads(line)
        request_id = request["id"]
        os.environ["_X_AMZN_TRACE_ID"] = request.get("trace", "")
        print(f"START RequestId: {request_id} Version: $LATEST", flush=True)
        started = time.perf_counter()
        if function is None:
            answer: dict[str, Any] = {"error": init_error}
        else:
            try:
                result = function(request["event"], Context(request_id, request["deadline"]))
                answer = {"result": json.loads(json.dumps(result, default=_decimal))}
            except Exception as exc:
                traceback.print_exc()
                answer = {"error": _error(type(exc).__name__, exc)}
        took = (time.perf_counter() - started) * 1000
        sys.stderr.flush()
        print(f"END RequestId: {request_id}", flush=True)
        print(f"REPORT RequestId: {request_id}\tDuration: {took:.2f} ms", flush=True)
        answers.write(json.dumps(answer) + "\n")
        answers.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
