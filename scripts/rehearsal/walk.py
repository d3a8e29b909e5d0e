"""The rehearsal's requests (docs/rehearsal.md, step 6), each asked of `make run`
and of the stack, and the events, the deadline and the webhooks between them.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Optional, Union

from scripts.rehearsal.scenario import Conversation, Side, assets_of, cursor_of, wait_for

if TYPE_CHECKING:
    from scripts.rehearsal.rehearsal import Run

# A path, or a path that depends on a side's earlier answers.
Path_ = Union[str, Callable[[Side], str]]

ORIGIN = "https://approvals.example.com"
# Who calls, and their groups (the token's groups claim).
CALLERS = {
    "ada": ("workflow-admins",),
    "rita": (),
    "maria": (),
    "finn": (),
    "cfo": (),
    "late": (),
    "mo": (),
    "ann": ("finance",),
    "gus": ("sales",),
    "fay": ("finance",),
    "dave": (),
}
# make run's sweeper (every second) must reject the deadline's run this soon.
LOCAL_SWEEP_SECONDS = 60.0


def walk(c: Conversation, run: Run) -> None:
    """The README's walk-through, its approver rules, and the rest of what the
    stack does (lists, audits, events, safe retries, the page, a deadline)."""

    def id_of(label: str) -> Callable[[Side], int]:
        return lambda side: int(side.answers[label].json()["id"])

    def at(label: str, suffix: str = "") -> Callable[[Side], str]:
        return lambda side: f"/runs/{id_of(label)(side)}{suffix}"

    def run_of(workflow: str, title: str, **more: Any) -> Callable[[Side], dict[str, Any]]:
        return lambda side: {"workflow_id": id_of(workflow)(side), "title": title, **more}

    def after(label: str, path: Path_) -> Callable[[Side], str]:
        """`path` (a list's), from where the page `label` answered ended."""
        return lambda s: f"{path(s) if callable(path) else path}&cursor={cursor_of(label)(s)}"

    def get(label: str, path: Path_, who: Optional[str] = None, expect: int = 200) -> None:
        c.ask(label, "GET", path, who=who, expect=expect)

    def post(label: str, path: Path_, body: Any, who: str, expect: int = 201, **more: Any) -> None:
        c.ask(label, "POST", path, body, who=who, expect=expect, **more)

    def start(label: str, workflow: str, title: str, who: str, **more: Any) -> None:
        headers = more.pop("headers", None)
        post(label, "/runs", run_of(workflow, title, **more), who, headers=headers)

    def decide(label: str, run: str, action: str, who: str, expect: int = 200, **body: Any) -> None:
        """`who` decides `run` (its start's label), naming themselves as the actor."""
        post(label, at(run, f"/{action}"), {"actor": who, **body}, who, expect)

    # A deadline first, so that it passes while the rest goes on. Its step awaits
    # a group no caller here is in: whether make run's sweeper has rejected it
    # yet must not change an inbox the conversation compares.
    cab = {"name": "CAB", "approvers": ["group:change-board"], "deadline_seconds": 1}
    change = {"name": "Change", "steps": [{**cab, "on_deadline": "reject"}]}
    post("deadline workflow", "/workflows", change, "ada")
    # The requester is told of her runs' outcomes (docs/notifications.md).
    mine = {"email": "rita@example.com"}
    c.ask("rita's contact", "PUT", "/contacts/user:rita", mine, who="rita", expect=200)
    start("deadline run", "deadline workflow", "CHG-7: database upgrade", "rita")

    # The README's walk-through, each caller with a token of their own.
    purchase = {"name": "Purchase order", "steps": ["Manager", "Finance"]}
    post("po workflow", "/workflows", purchase, "ada")
    post("po step", lambda s: f"/workflows/{id_of('po workflow')(s)}/steps", {"name": "CFO"}, "ada")
    start("po run", "po workflow", "PO-1042: 12 laptops", "rita")
    decide("po approve maria", "po run", "approve", "maria", comment="Within budget")
    decide("po approve finn", "po run", "approve", "finn")
    decide("po approve cfo", "po run", "approve", "cfo")
    get("po completed", at("po run"), "rita")
    decide("po reject late", "po run", "reject", "late", 409)

    # Content and conditions: the schema validator (a native library) loads in
    # the function, and a step whose condition does not hold is skipped.
    amount = {"amount": {"type": "number", "minimum": 0}}
    schema = {"type": "object", "required": ["amount"], "properties": amount}
    tiers = ["Manager", {"name": "CFO", "when": {">": [{"var": "amount"}, 10000]}}]
    tiered = {"name": "Tiered purchase", "input_schema": schema, "steps": tiers}
    post("tiered workflow", "/workflows", tiered, "ada")
    refused = run_of("tiered workflow", "PO-3001", input={"amount": -1})
    post("tiered refused", "/runs", refused, "rita", 422)
    start("tiered run", "tiered workflow", "PO-3002: toner", "rita", input={"amount": 500})
    decide("tiered approve", "tiered run", "approve", "maria")

    # Delegation and send back: a delegate returns the run for the delegator,
    # the requester resubmits it, and the delegate approves it in round 2.
    now = time.time()
    window = {
        "starts_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 60)),
        "ends_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now + 86400)),
    }
    expenses = {"name": "Expenses", "steps": [{"name": "Manager", "approvers": ["user:maria"]}]}
    post("away workflow", "/workflows", expenses, "ada")
    start("away run", "away workflow", "EXP-12: taxi", "rita")
    leave = {"delegate": "dave", "reason": "On leave", **window}
    post("delegation", "/delegations", leave, "maria")
    post("away return", at("away run", "/return"), {"comment": "Attach the receipt"}, "dave", 200)
    post("away resubmit", at("away run", "/resubmit"), {"comment": "Receipt attached"}, "rita", 200)
    post("away approve", at("away run", "/approve"), {}, "dave", 200)

    def revoked(side: Side) -> str:
        return f"/delegations/{id_of('delegation')(side)}"

    c.ask("delegation revoked", "DELETE", revoked, who="maria", expect=200)
    get("away audit", at("away run", "/audit"), "rita")

    # The approver rules.
    finance = {"name": "Finance", "approvers": ["group:finance", "user:cfo"]}
    steps = ["Manager", {**finance, "required_approvals": 2}]
    big = {"name": "Purchase over 10k", "steps": steps, "reject_requires_comment": True}
    post("big workflow", "/workflows", big, "ada")
    start("big run", "big workflow", "PO-2001: servers", "ann", requested_by="ann")
    decide("big approve mo", "big run", "approve", "mo")
    decide("big approve ann", "big run", "approve", "ann", 403)
    decide("big approve gus", "big run", "approve", "gus", 403)
    get("inbox fay", "/inbox", "fay")
    decide("big approve fay", "big run", "approve", "fay")
    decide("big approve fay again", "big run", "approve", "fay", 409)
    decide("big approve cfo", "big run", "approve", "cfo")
    start("big2 run", "big workflow", "PO-2002: racks", "rita")
    decide("big2 reject without reason", "big2 run", "reject", "mo", 422)
    decide("big2 reject", "big2 run", "reject", "mo", comment="Not this quarter")

    # Safe retries, a minimal answer, a cancel.
    key = {"Idempotency-Key": "rehearsal-" + secrets.token_hex(8)}
    start("keyed run", "po workflow", "PO-1043: monitors", "rita", headers=key)
    start("keyed run replayed", "po workflow", "PO-1043: monitors", "rita", headers=key)
    screens = run_of("po workflow", "PO-1043: screens")
    post("keyed run changed", "/runs", screens, "rita", 422, headers=key)
    # A keyed decision whose transaction DynamoDB fails (injected, on the
    # stack's side alone: nothing is written) answers 503 and releases its
    # key, so that its retry with the same key, asked of both sides, decides.
    retried = {"Prefer": "return=minimal", "Idempotency-Key": "rehearsal-" + secrets.token_hex(8)}
    run.fail_transactions(1000)
    approve_keyed = at("keyed run", "/approve")
    c.ask_deployed("keyed approve failed", "POST", approve_keyed, {}, "maria", retried, 503)
    run.fail_transactions(0)
    post("keyed approve minimal", approve_keyed, {}, "maria", 200, headers=retried)
    start("cancel run", "po workflow", "PO-1044: chairs", "rita")
    post("cancel by gus", at("cancel run", "/cancel"), {}, "gus", 403)
    post("cancel", at("cancel run", "/cancel"), {"reason": "Ordered elsewhere"}, "rita", 200)
    # A click on a Slack button, signed with the app's secret (which the API
    # function reads from its parameter), by a Slack user who is nobody's
    # contact: it decides nothing. Without Slack's signature: 401.
    click, signed = slack_click(run.env.slack_secret, "U0NOBODY", "approve", "1:1:1")
    c.ask("slack click", "POST", SLACK_INTERACTIONS, click, headers=signed, expect=200)
    unsigned = {**signed, "X-Slack-Signature": "v0=" + "0" * 64}
    c.ask("slack click unsigned", "POST", SLACK_INTERACTIONS, click, headers=unsigned, expect=401)

    # Reading: lists and their pages, an audit, a run's events.
    get("runs page 1", "/runs?limit=2", "ada")
    get("runs page 2", after("runs page 1", "/runs?limit=2"), "ada")
    big_workflow = id_of("big workflow")
    get("completed runs", lambda s: f"/runs?workflow_id={big_workflow(s)}&status=completed", "ada")
    get("workflows page 1", "/workflows?limit=1", "ada")
    get("workflows page 2", after("workflows page 1", "/workflows?limit=2"), "ada")
    get("audit", at("po run", "/audit"), "rita")
    get("events page 1", at("po run", "/events?limit=3"), "rita")
    get("events page 2", after("events page 1", at("po run", "/events?limit=3")), "rita")

    # What is refused before any route runs, or by the gateway.
    c.ask("no token", "POST", "/runs", {"title": "x"}, expect=401)
    get("no such run", "/runs/999999", "ada", 404)
    get("no such route", "/reports", "ada", 404)
    c.ask("no such method", "DELETE", "/runs", who="ada", expect=405)

    # The contract, the page and its assets, and a browser's preflight from the allowed origin.
    get("openapi", "/openapi.json")
    local_page, deployed_page = c.ask("page", "GET", "/", expect=200)
    local_assets = assets_of(local_page.body.decode())
    deployed_assets = assets_of(deployed_page.body.decode())
    if len(local_assets) != len(deployed_assets) or not local_assets:
        run.outcome.failures.append(f"the page names assets {local_assets} / {deployed_assets}")
    for index, urls in enumerate(zip(local_assets, deployed_assets, strict=False)):
        get(f"page asset {index}", _either(*urls))
    preflight = {
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "authorization,content-type,idempotency-key",
    }
    c.ask("preflight", "OPTIONS", at("big run", "/approve"), headers=preflight, expect=200)

    # Events: the stream to the relay, the bus to the queue. A relay that cannot
    # put its events on the bus (PutEvents failing) parks the batch in the dead-
    # letter queue; the run's next event brings them all to the webhook, in order.
    run.relay()
    run.fail_put_events(10**6)
    start("parked run", "po workflow", "PO-1045: desks", "rita")
    run.relay(expect_failures=True)
    run.fail_put_events(0)
    post("parked approve", at("parked run", "/approve"), {}, "maria", 200)
    run.relay()

    # The deadline: the schedule's event to the sweeper, once the step is due.
    due = c.deployed.answers["deadline run"].json()["current_step_due_at"]
    wait_for(lambda: time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime()) > due[:19], 5)
    run.sweep()
    run.relay()
    if run.local is not None:
        local = run.local
        bearer = {"Authorization": f"Bearer {c.tokens['rita']}"}

        def rejected() -> bool:
            answer = local.request("GET", at("deadline run")(c.local), bearer, None)
            return bool(json.loads(answer[2]).get("status") == "rejected")

        wait_for(rejected, LOCAL_SWEEP_SECONDS)
    get("deadline rejected", at("deadline run"), "rita")

    # The webhook queue to the sender, until nothing is left (one delivery fails once).
    run.drain()
    get("every run", "/runs?limit=100", "ada")
    # The notifier's queue to the notifier: the requester's emails, through SES.
    run.notify()


SLACK_INTERACTIONS = "/integrations/slack/interactions"


def slack_click(secret: str, user: str, action: str, value: str) -> tuple[str, dict[str, str]]:
    """A block_actions request as Slack sends it (form field `payload`), and its
    headers, signed now with `secret` (docs/notifications.md#slack)."""
    import hashlib
    import hmac
    from urllib.parse import urlencode

    payload = {
        "type": "block_actions",
        "user": {"id": user},
        "actions": [{"action_id": action, "value": value}],
    }
    body = urlencode({"payload": json.dumps(payload)})
    stamp = str(int(time.time()))
    base = f"v0:{stamp}:{body}".encode()
    signature = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    headers = {
        "Content-Type": "application/x-www-form-urlencoded",
        "X-Slack-Request-Timestamp": stamp,
        "X-Slack-Signature": signature,
    }
    return body, headers


def _either(local: str, deployed: str) -> Callable[[Side], str]:
    """One path for `make run`, another for the stack (an asset under the stage)."""
    return lambda side: local if side.name == "make run" else deployed
