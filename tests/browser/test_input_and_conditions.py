"""What is being approved, on the page: a run's input on its page and in the
inbox (the schema's fields first, in its order, with their titles; as text; a
web address as a link and nothing else), the start form's field per property
of the workflow's schema (or one JSON box without one), and each step's
condition in the service's words, with the steps a run skipped shown so."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import Locator, expect

from chalicelib.domain import conditions
from tests.support.api import Api
from tests.support.browser import WIDTHS, PageUnderTest

PURCHASE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["amount", "supplier"],
    "properties": {
        "amount": {"type": "number", "minimum": 0, "title": "Amount (EUR)"},
        "supplier": {"type": "string", "minLength": 1, "description": "Who sells it."},
        "link": {"type": "string", "format": "uri", "title": "Quote"},
    },
}
QUOTE = "https://erp.example/po/1043?from=page"
MARKUP = "<img src=x onerror=window.pwned=1>"
SCRIPT = "javascript:window.pwned=2"


def workflow(api: Api, steps: Any = ("Manager",), schema: Any = None, name: str = "PO") -> Any:
    body: dict[str, Any] = {"name": name, "steps": list(steps)}
    if schema is not None:
        body["input_schema"] = schema
    created = api.post("/workflows", body)
    assert created.status_code == 201, created.body
    return created.json_body


def started(api: Api, workflow_id: int, data: Any, title: str = "PO-1043: laptops") -> Any:
    body = {"workflow_id": workflow_id, "title": title, "input": data}
    response = api.post("/runs", body)
    assert response.status_code == 201, response.body
    return response.json_body


def input_section(tab: PageUnderTest) -> Locator:
    return tab.page.get_by_role("region", name="What is being approved")


def start_form(tab: PageUnderTest, name: str) -> Locator:
    """The Workflows view's start form of workflow `name`, opened."""
    card = tab.page.locator("li.card").filter(has=tab.page.get_by_role("heading", name=name))
    card.get_by_text("Start a run").click()
    return card.locator("form")


def runs_sent(tab: PageUnderTest) -> list[Any]:
    return [request["body"] for request in tab.sent if request["path"] == "/runs"]


# -- the input on the run page and in the inbox -------------------------------------


def test_the_run_page_shows_the_input_schema_fields_first_as_text(
    tab: PageUnderTest, api: Api
) -> None:
    po = workflow(api, schema=PURCHASE_SCHEMA)
    data = {
        "note": MARKUP,
        "link": QUOTE,
        "script": SCRIPT,
        "supplier": "Acme",
        "amount": 5000,
        "lines": [{"sku": "LAP-14", "qty": 2}],
        "tags": ["urgent", "it"],
        "capex": True,
        "previous": None,
    }
    run = started(api, po["id"], data)
    empty = started(api, po["id"], {"amount": 0, "supplier": "Acme"}, "PO-1044: a pen")
    nothing = started(api, workflow(api, name="Other")["id"], {}, "PO-1045: nothing")
    tab.act_as("maria")
    tab.open_run(run)

    assert tab.input_fields() == [
        ("Amount (EUR)", "5000"),
        ("supplier", "Acme"),
        ("Quote", QUOTE),
        ("note", MARKUP),
        ("script", SCRIPT),
        ("lines", "sku LAP-14 qty 2"),
        ("tags", '["urgent", "it"]'),
        ("capex", "yes"),
        ("previous", "none"),
    ]
    links = input_section(tab).get_by_role("link")
    expect(links).to_have_count(1)  # the javascript: text is no link
    expect(links).to_have_text(QUOTE)
    expect(links).to_have_attribute("href", QUOTE)
    expect(links).to_have_attribute("rel", "noopener noreferrer")
    assert tab.page.locator("#view img, #view script").count() == 0
    assert tab.page.evaluate("() => typeof window.pwned") == "undefined"

    tab.open_run(empty)
    assert tab.input_fields() == [("Amount (EUR)", "0"), ("supplier", "Acme")]
    tab.open_run(nothing)  # an empty input: no section
    expect(tab.page.get_by_role("heading", name="History")).to_be_visible()
    expect(input_section(tab)).to_have_count(0)


def test_the_inbox_shows_each_runs_first_fields_in_one_line(tab: PageUnderTest, api: Api) -> None:
    po = workflow(api, schema=PURCHASE_SCHEMA)
    started(api, po["id"], {"note": "x", "link": QUOTE, "supplier": "Acme", "amount": 5000})
    free = workflow(api, name="Free form")
    started(api, free["id"], {"zone": "EU", "cost_centre": "4711"}, "Free: two fields")
    started(api, free["id"], {}, "Free: nothing")
    tab.act_as("maria")

    def summary(title: str) -> Locator:
        card = tab.page.locator("li.card").filter(has=tab.page.get_by_role("link", name=title))
        return card.locator("p.input-summary")

    expect(summary("PO-1043: laptops")).to_have_text(
        f"Amount (EUR): 5000 · supplier: Acme · Quote: {QUOTE} · 1 more field"
    )
    expect(summary("Free: two fields")).to_have_text("zone: EU · cost_centre: 4711")
    expect(summary("Free: nothing")).to_have_count(0)


# -- starting a run --------------------------------------------------------------------

FORM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["amount", "supplier", "country"],
    "properties": {
        "amount": {"type": "number", "minimum": 0, "title": "Amount (EUR)"},
        "units": {"type": "integer", "minimum": 1},
        "supplier": {"type": "string", "description": "Who sells it."},
        "urgent": {"type": "boolean", "title": "Urgent"},
        "country": {"enum": ["DE", "AT", "FR"], "title": "Country"},
        "due": {"type": "string", "format": "date", "title": "Needed by"},
        "meeting": {"type": "string", "format": "date-time", "title": "Review meeting"},
        "contact": {"type": "string", "format": "email", "title": "Contact"},
        "link": {"type": "string", "format": "uri", "title": "Quote"},
        "tags": {"type": "array", "items": {"type": "string"}, "title": "Tags"},
        "note": {"type": "string", "title": "Note"},
    },
}


# What the form sends for 2026-03-01 10:30 typed in New York: its wall time, with its offset.
MEETING = "2026-03-01T10:30:00-05:00"


@pytest.mark.parametrize("timezone", ["America/New_York"])
def test_the_start_form_offers_a_field_per_property_and_sends_what_was_typed(
    tab: PageUnderTest, api: Api
) -> None:
    po = workflow(api, schema=FORM_SCHEMA, name="Purchase order")
    tab.act_as("maria")
    tab.visit("#/workflows")
    form = start_form(tab, "Purchase order")

    kinds = {
        "Amount (EUR)": ("input", "number"),
        "units": ("input", "number"),
        "supplier": ("input", "text"),
        "Urgent": ("input", "checkbox"),
        "Country": ("select", None),
        "Needed by": ("input", "date"),
        "Review meeting": ("input", "datetime-local"),
        "Contact": ("input", "email"),
        "Quote": ("input", "url"),
        "Tags": ("textarea", None),
        "Note": ("input", "text"),
    }
    for label, (tag, kind) in kinds.items():
        field = form.get_by_label(label)
        assert field.evaluate("node => node.tagName.toLowerCase()") == tag, label
        if kind:
            expect(field).to_have_attribute("type", kind)
        is_required = label in ("Amount (EUR)", "supplier", "Country")
        assert field.evaluate("node => node.required") is is_required, label
        assert form.get_by_label(f"{label} (required)").count() == int(is_required), label
    expect(form.get_by_label("units")).to_have_attribute("step", "1")
    expect(form.get_by_label("Amount (EUR)")).to_have_attribute("step", "any")
    expect(form.get_by_label("supplier")).to_have_accessible_description("Who sells it.")

    form.get_by_label("Title of the new run of Purchase order").fill("PO-7: laptops")
    form.get_by_label("Amount (EUR)").fill("1200.50")
    form.get_by_label("units").fill("3")
    form.get_by_label("supplier").fill("Acme")
    form.get_by_label("Urgent").check()
    form.get_by_label("Country").select_option(label="AT")
    form.get_by_label("Needed by").fill("2026-03-01")
    form.get_by_label("Review meeting").fill("2026-03-01T10:30")
    form.get_by_label("Contact").fill("buyer@example.org")
    form.get_by_label("Quote").fill(QUOTE)
    form.get_by_label("Tags").fill('["it", "lisbon"]')
    form.get_by_role("button", name="Start run").click()
    expect(tab.heading).to_have_text("PO-7: laptops")

    (run,) = api.get(f"/runs?workflow_id={po['id']}").json_body["items"]
    expected = {
        "amount": 1200.5,
        "units": 3,
        "supplier": "Acme",
        "urgent": True,
        "country": "AT",
        "due": "2026-03-01",
        "meeting": MEETING,
        "contact": "buyer@example.org",
        "link": QUOTE,
        "tags": ["it", "lisbon"],
    }
    assert run["input"] == expected  # the empty Note left out
    assert list(run["input"]) == list(expected)
    meeting = input_section(tab).locator("time")
    expect(meeting).to_have_attribute("datetime", MEETING)
    expect(meeting).to_contain_text("10:30")


def test_the_services_refusal_is_shown_by_the_field_it_names(tab: PageUnderTest, api: Api) -> None:
    workflow(api, schema=PURCHASE_SCHEMA, name="Purchase order")
    tab.act_as("maria")
    tab.visit("#/workflows")
    tab.expect_failed_request(422)
    form = start_form(tab, "Purchase order")
    amount, supplier = form.get_by_label("Amount (EUR)"), form.get_by_label("supplier")
    form.get_by_label("Title of the new run of Purchase order").fill("PO-8")
    amount.fill("5")
    form.get_by_role("button", name="Start run").click()  # no supplier
    expect(supplier).to_have_attribute("aria-invalid", "true")
    expect(supplier).to_have_accessible_description(
        re.compile(r"Who sells it\. .*at /supplier: \"supplier\" is a required property")
    )
    expect(supplier).to_be_focused()
    expect(amount).not_to_have_attribute("aria-invalid", "true")

    supplier.fill("Acme")
    expect(supplier).not_to_have_attribute("aria-invalid", "true")
    amount.fill("-5")
    form.get_by_role("button", name="Start run").click()
    expect(amount).to_have_attribute("aria-invalid", "true")
    says = (
        "'input' does not meet the workflow's schema at /amount: -5 is less than the minimum of 0"
    )
    expect(amount).to_have_accessible_description(f"{says}.")
    expect(amount).to_be_focused()
    expect(supplier).not_to_have_attribute("aria-invalid", "true")
    assert api.get("/runs").json_body["items"] == []
    assert len(runs_sent(tab)) == 2


def test_without_a_schema_one_json_box_takes_the_whole_input(tab: PageUnderTest, api: Api) -> None:
    big = {"name": "Big", "when": {">": [{"var": "amount"}, 10000]}}
    free = workflow(api, steps=[big, "Manager"], name="Free form")
    tab.act_as("maria")
    tab.visit("#/workflows")
    form = start_form(tab, "Free form")
    box = form.get_by_label("Input (JSON object)")
    form.get_by_label("Title of the new run of Free form").fill("Free: one")
    start = form.get_by_role("button", name="Start run")

    for typed, says in (
        ('{"amount": 5', "This is not valid JSON"),
        ("[1, 2]", "The input must be a JSON object"),
        ('"text"', "The input must be a JSON object"),
    ):
        box.fill(typed)
        start.click()
        expect(box).to_have_attribute("aria-invalid", "true")
        expect(box).to_have_accessible_description(re.compile(f"{re.escape(says)}.*Nothing was"))
        expect(box).to_be_focused()
    assert runs_sent(tab) == []  # refused on the page: nothing sent

    tab.expect_failed_request(413)
    box.fill('{"blob": "' + "x" * 33_000 + '"}')
    start.click()
    expect(box).to_have_attribute("aria-invalid", "true")
    expect(box).to_have_accessible_description(re.compile("too large for the service"))
    assert len(runs_sent(tab)) == 1

    box.fill('{"supplier": "Acme", "amount": 5000}')
    start.click()
    expect(tab.heading).to_have_text("Free: one")
    expect(tab.status).to_have_text(
        re.compile(
            r"Run \d+ started: it waits at step 2, Manager\."
            r" Skipped, as its condition does not hold: Big\."
        )
    )
    (run,) = api.get(f"/runs?workflow_id={free['id']}").json_body["items"]
    assert run["input"] == {"supplier": "Acme", "amount": 5000}
    assert list(run["input"]) == ["supplier", "amount"]


# -- conditions ----------------------------------------------------------------------

CONDITIONS: list[Any] = [
    {">=": [{"var": "amount"}, 1000]},
    {"and": [{">=": [{"var": "amount"}, 1000]}, {"==": [{"var": "country"}, "DE"]}]},
    {"!": {"var": "vip"}},
    {"in": [{"var": "supplier.country"}, ["DE", "AT", "CH"]]},
    {
        "or": [
            {"and": [{">": [{"var": "a"}, 1]}, {"<": [{"var": "b"}, 2.5]}]},
            {"!": [{"or": [{"var": "x"}, {"var": "y"}]}]},
        ]
    },
    {"!=": [{"var": "note"}, 'say "hi" \\ ünïcode']},
    {"and": [{"==": [{"var": "p"}, None]}, {"!=": [{"var": "q"}, True]}]},
    {"in": ["ACME", {"var": "supplier.name"}]},
]


def test_each_steps_condition_reads_as_the_service_words_it(tab: PageUnderTest, api: Api) -> None:
    steps = ["Manager", *({"name": f"Step {n}", "when": c} for n, c in enumerate(CONDITIONS))]
    run = started(api, workflow(api, steps=steps, name="Conditional")["id"], {"a": 2, "b": 1})
    words = [f"Applies only if {conditions.text(condition)}." for condition in CONDITIONS]
    tab.act_as("maria")
    tab.visit("#/workflows")
    heading = tab.page.get_by_role("heading", name="Conditional")
    card = tab.page.locator("li.card").filter(has=heading)
    expect(card.locator("ol.steps > li")).to_have_count(len(steps))
    expect(card.locator("ol.steps > li").first.locator(".step-when")).to_have_count(0)
    expect(card.locator(".step-when")).to_have_text(words)

    tab.open_run(run)  # waits at Manager: the others are to come
    expect(tab.page.locator("ol.timeline .step-when")).to_have_text(words)


def test_a_step_whose_condition_does_not_hold_shows_as_skipped(
    tab: PageUnderTest, api: Api
) -> None:
    steps = ["Manager", {"name": "Finance", "when": {">=": [{"var": "amount"}, 1000]}}, "Legal"]
    run = started(api, workflow(api, steps=steps)["id"], {"amount": 500})
    tab.act_as("maria")
    tab.open_run(run)
    tab.decide("Approve")
    expect(tab.status).to_have_text(
        "You approved step 1, Manager. The run waits at step 3 of 3: Legal now."
        " Skipped, as its condition does not hold: Finance."
    )
    assert tab.steps() == ["Manager Done", "Finance Skipped", "Legal Current step"]
    finance = tab.page.locator("ol.timeline > li").nth(1)
    expect(finance.locator(".step-when")).to_have_text(
        "Skipped: it applies only if amount >= 1000, which does not hold for this run."
    )
    expect(finance.locator(".step-decisions")).to_have_count(0)  # no approval of it
    history = tab.history()
    assert history[0].endswith("maria approved at Manager"), history
    assert history[1].endswith(
        "The service skipped Finance"
        " It applies only if amount >= 1000, which does not hold for this run."
    ), history
    assert "system:conditions" not in " ".join(history)


def test_after_a_resubmit_a_step_to_come_is_judged_by_the_input_in_force(
    tab: PageUnderTest, api: Api
) -> None:
    # CFO held for round 1's input and was reached there, then sent the run
    # back; round 2's input is below its threshold, so the service will skip it.
    steps = ["Manager", {"name": "CFO", "when": {">": [{"var": "amount"}, 10000]}}]
    schema = {"type": "object", "properties": {"amount": {"type": "number"}}}
    po = workflow(api, steps=steps, schema=schema)
    run = api.post(
        "/runs",
        {
            "workflow_id": po["id"],
            "title": "PO-9",
            "requested_by": "rita",
            "input": {"amount": 12000},
        },
    ).json_body
    assert api.approve(run["id"], "maria")["current_step"]["name"] == "CFO"
    back = api.post(f"/runs/{run['id']}/return", {"actor": "cfo", "comment": "Split it"})
    assert back.status_code == 200, back.body
    again = api.post(f"/runs/{run['id']}/resubmit", {"actor": "rita", "input": {"amount": 4000}})
    assert again.status_code == 200, again.body

    tab.act_as("maria")
    tab.open_run(run)

    assert tab.steps() == ["Manager Current step", "CFO To come"]
    cfo = tab.page.locator("ol.timeline > li").nth(1)
    expect(cfo.locator(".step-when")).to_have_text("Applies only if amount > 10000.")
    tab.decide("Approve")
    expect(tab.status).to_contain_text("Skipped, as its condition does not hold: CFO.")
    expect(cfo.locator(".step-when")).to_have_text(
        "Skipped: it applies only if amount > 10000, which does not hold for this run."
    )


# -- accessible ------------------------------------------------------------------------


@pytest.mark.parametrize("width", WIDTHS)
def test_the_input_and_the_start_forms_are_accessible_and_fit(tab: PageUnderTest, api: Api) -> None:
    steps = ["Manager", {"name": "CFO", "when": {">": [{"var": "amount"}, 10000]}}]
    po = workflow(api, steps=steps, schema=FORM_SCHEMA, name="Purchase order")
    workflow(api, name="Free form")
    data = {
        "amount": 12000,
        "supplier": "Zürich Bürobedarf AG, Abteilung für Großbestellungen und Rahmenverträge",
        "country": "DE",
        "link": QUOTE + "&" + "long=" + "x" * 80,
        "lines": [{"sku": "LAP-14", "qty": 2}, {"sku": "MON-27", "qty": 4}],
        "tags": ["it", "lisbon"],
    }
    run = started(api, po["id"], data)
    tab.act_as("maria")
    tab.open_run(run)
    expect(input_section(tab)).to_be_visible()
    tab.assert_fits()
    tab.assert_accessible()

    tab.visit("#/workflows")
    start_form(tab, "Purchase order")
    free = start_form(tab, "Free form")
    free.get_by_label("Title of the new run of Free form").fill("Free")
    free.get_by_label("Input (JSON object)").fill("[]")
    free.get_by_role("button", name="Start run").click()  # refused on the page
    expect(free.get_by_label("Input (JSON object)")).to_have_attribute("aria-invalid", "true")
    tab.assert_fits()
    tab.assert_accessible()
