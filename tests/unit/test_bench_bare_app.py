"""The benchmarks' bare app has the service's route table: the framework's cost
of registering and matching those routes is counted on both sides."""

from __future__ import annotations

from typing import Any

import app
from bench import bare_app


def route_table(chalice_app: Any) -> list[tuple[str, str, str]]:
    return sorted(
        (path, method, entry.view_name)
        for path, methods in chalice_app.routes.items()
        for method, entry in methods.items()
    )


def handlers(chalice_app: Any) -> list[tuple[str, str]]:
    return sorted((type(source).__name__, source.name) for source in chalice_app.event_sources)


def test_the_bare_app_registers_every_route_and_handler_of_the_service() -> None:
    assert route_table(bare_app.app) == route_table(app.app)
    assert handlers(bare_app.app) == handlers(app.app)
