"""A workflow's figures on the page (#/workflows/{id}): the counts, the plot of
the waits at each step, drawn in SVG on one scale, and the overdue runs as links."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from playwright.sync_api import expect

from chalicelib import engine
from chalicelib.storage import Backend
from tests.support.api import Api
from tests.support.browser import PageUnderTest

# Whole seconds, so that the waits between these stamps are exact.
NOW = datetime.now(UTC).replace(microsecond=0)


def ago(hours: float) -> engine.Clock:
    stamp = NOW - timedelta(hours=hours)
    return lambda: stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def test_the_waits_are_plotted_per_step_and_the_overdue_runs_linked(
    tab: PageUnderTest, api: Api, storage: Backend
) -> None:
    steps = ["Manager", {"name": "Finance", "deadline_seconds": 60}]
    workflow = api.create_workflow("Purchase order", steps=steps)
    done = engine.start_run(storage, workflow["id"], "PO-1: desks", "rita", clock=ago(3))
    engine.approve(storage, done.id, "mo", clock=ago(2))
    engine.approve(storage, done.id, "fay", clock=ago(1))
    late = engine.start_run(storage, workflow["id"], "PO-2: chairs", "rita", clock=ago(3))
    engine.approve(storage, late.id, "mo", clock=ago(2.5))

    tab.act_as("maria")
    tab.visit("#/workflows")
    tab.page.get_by_role("link", name="How long Purchase order takes").click()

    expect(tab.heading).to_have_text("How long Purchase order takes")
    expect(tab.fact("started")).to_have_text("2")
    expect(tab.fact("completed")).to_have_text("1")
    expect(tab.fact("overdue")).to_have_text("1")
    plot = tab.page.get_by_role("img", name="Waits at each step", exact=False)
    expect(plot).to_be_visible()
    manager = plot.locator('g[data-step="Manager"]')
    finance = plot.locator('g[data-step="Finance"]')
    # One scale for both: the longest wait (Finance's hour) spans the plot.
    span = float(finance.locator("rect.part-p50").get_attribute("width") or 0)
    assert span > 200
    assert float(manager.locator("rect.part-p50").get_attribute("width") or 0) == span / 2
    assert float(manager.locator("rect.part-p90").get_attribute("width") or 0) == span / 2
    expect(finance.locator("text")).to_have_text("Finance")
    expect(tab.page.locator("ol.step-figures > li")).to_have_text(
        [
            "Manager: 2 waits: median 30 minutes, p90 60 minutes, p99 60 minutes, longest "
            "60 minutes. 2 approvals, 0 rejections, 0 returns, 0 skips.",
            "Finance: 1 wait: median 60 minutes, p90 60 minutes, p99 60 minutes, longest "
            "60 minutes. 1 approval, 0 rejections, 0 returns, 0 skips.",
        ]
    )

    tab.page.get_by_role("link", name="Last 7 days").click()
    expect(tab.page.get_by_role("link", name="Last 7 days")).to_have_attribute(
        "aria-current", "page"
    )
    tab.page.get_by_role("link", name=f"Run {late.id}").click()
    expect(tab.heading).to_have_text("PO-2: chairs")
