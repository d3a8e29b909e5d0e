"""Telling people: each recorded event's notifications, sent at most once each.

    event -> notifications.implied (who, of what) -> with their active delegates
          -> those with a contact -> per notification: claim its once-key (a
          conditional put of its "sent" marker), then compose and send; a send
          that fails releases its claim, and the event is tried again later

Driven by the events the service records, never by a request: a decision
never waits on a mail server. Deployed, a function of its own consumes the
stack's bus through a queue (`consume`, app.notify_people); under make run
and chalice local, the dispatcher thread hands each event it delivered to a
`Retrying` notifier (chalicelib/background.py), whose failed sends are tried
again with the webhooks' backoff.

Settings: WORKFLOW_PUBLIC_URL (the base of every link: without it no email
carries links), WORKFLOW_LINKS (on/off; off by default where WORKFLOW_AUTH=jwt),
WORKFLOW_LINK_TTL_SECONDS (default 259200); the mail's are delivery/mail.py's.
The token of a link is never logged.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Optional

from chalicelib import log_lines
from chalicelib.delivery import mail
from chalicelib.delivery.dispatch import Sink, iso
from chalicelib.domain import events, links, notifications
from chalicelib.domain.lifecycle import ActionKind, RunStatus
from chalicelib.domain.models import GROUP_PREFIX, USER_PREFIX, Contact, Event, Run, Workflow
from chalicelib.domain.names import canonical_principal
from chalicelib.domain.notifications import Notice
from chalicelib.domain.record import Record
from chalicelib.storage import Backend

LOGGER = log_lines.own_logger("approval-workflows.notifications")

PUBLIC_URL_VARIABLE = "WORKFLOW_PUBLIC_URL"
LINKS_VARIABLE = "WORKFLOW_LINKS"
TTL_VARIABLE = "WORKFLOW_LINK_TTL_SECONDS"
# Delegations of one delegator read per notification.
DELEGATIONS_READ = 100


class Settings(Record):
    public_url: Optional[str]
    links: bool
    ttl_seconds: int
    # The Slack bot token (None: nothing is posted to Slack).
    slack_token: Optional[str] = None


def settings(environ: Mapping[str, str] = os.environ) -> Settings:
    """The links' settings; ValueError, saying what to set, for one that cannot work."""
    url = environ.get(PUBLIC_URL_VARIABLE, "").strip().rstrip("/") or None
    jwt = environ.get("WORKFLOW_AUTH", "").strip().lower() == "jwt"
    switch = environ.get(LINKS_VARIABLE, "").strip().lower()
    if switch not in ("", "on", "off"):
        raise ValueError(f"{LINKS_VARIABLE} is {switch!r}: set it to on or off")
    raw = environ.get(TTL_VARIABLE, "").strip()
    if raw and not (raw.isdigit() and 60 <= int(raw) <= 2_592_000):
        raise ValueError(f"{TTL_VARIABLE} is {raw!r}: set it to seconds, from 60 to 2592000")
    ttl = int(raw) if raw else links.DEFAULT_TTL_SECONDS
    from chalicelib.delivery import slack

    token = slack.configured_token()
    return Settings(url, switch == "on" or (switch == "" and not jwt), ttl, token)


def notify(
    event: Event, storage: Backend, mailer: mail.Mailer, now: float, config: Settings
) -> bool:
    """Send what `event` implies, each notification at most once; whether
    every one of them is sent (or was before, or needs no sending)."""
    cloud_event = json.loads(event.body)
    updated = _update_slack(cloud_event, storage, config)
    notices = notifications.implied(cloud_event)
    if not notices:
        return updated
    at = iso(now)
    lent = [
        delegation
        for user in notifications.delegators(notices)
        for delegation in storage.list_delegations(
            canonical_principal(user), None, at, None, DELEGATIONS_READ
        ).items
    ]
    notices = notifications.with_delegates(notices, lent, at)
    found = storage.contacts_of([canonical_principal(n.principal) for n in notices])
    contacts = {canonical_principal(contact.principal): contact for contact in found}
    reachable = [
        (notice, contact)
        for notice in notices
        if (contact := contacts.get(canonical_principal(notice.principal)))
        and (contact.email or (contact.slack and config.slack_token))
    ]
    if not reachable:
        return updated
    run = storage.get_run(notices[0].run_id, history=False)
    workflow = storage.get_workflow(run.workflow_id)
    data = cloud_event.get("data") or {}
    sent = []
    for notice, contact in reachable:
        if notice.of_a_step and not _still_waits(run, notice):
            continue
        if contact.email:
            sent.append(_send(notice, contact, run, workflow, data, storage, mailer, at, config))
        if contact.slack and config.slack_token:
            sent.append(_post(notice, contact, run, workflow, data, storage, at, config))
    return updated and all(sent)


def _still_waits(run: Run, notice: Notice) -> bool:
    """Whether the run still waits at the step the notice tells of (an event
    delivered late asks nobody to decide a step decided since)."""
    step = run.current_step
    return step is not None and step.id == notice.step_id and run.round == notice.round


def _send(
    notice: Notice,
    contact: Contact,
    run: Run,
    workflow: Workflow,
    data: Mapping[str, Any],
    storage: Backend,
    mailer: mail.Mailer,
    at: str,
    config: Settings,
) -> bool:
    import uuid

    claim = f"{at}#{uuid.uuid4().hex}"
    if not storage.claim_notice(notice.once_key, claim):
        return True  # sent before (or being sent): at most once
    assert contact.email is not None
    offered = _links(notice, run, storage, at, config)
    letter = compose(notice, contact.email, run, workflow, data, offered, config.public_url)
    try:
        where = mailer(mail.message(letter, mail.sender()))
    # Any failure of a mail server or of SES (OSError, smtplib's, botocore's):
    # logged, its claim released, and tried again later; a decision never sees it.
    except Exception as exc:
        storage.release_notice(notice.once_key, claim)
        LOGGER.warning(
            "could not send %s of run %s to %s (%s: %s); trying again later",
            notice.kind,
            notice.run_id,
            notice.principal,
            type(exc).__name__,
            exc,
        )
        return False
    LOGGER.info("sent %s of run %s to %s: %s", notice.kind, notice.run_id, notice.principal, where)
    return True


def _links(
    notice: Notice, run: Run, storage: Backend, at: str, config: Settings
) -> list[mail.Link]:
    """The links of the email: one per action the person may take now (a
    user asked to decide, where links are on), then the run's page."""
    if config.public_url is None:
        return []
    offered: list[mail.Link] = []
    if notice.asks and config.links and notice.principal.startswith(USER_PREFIX):
        made = []
        for action in notifications.DECISIONS:
            token = links.new_token()
            made.append(_link(notice, action, token, at, config.ttl_seconds))
            offered.append(mail.Link(action.capitalize(), f"{config.public_url}/act/{token}"))
        storage.put_links(made)
    offered.append(mail.Link("Open the run", f"{config.public_url}/#/runs/{run.id}"))
    return offered


def _link(notice: Notice, action: str, token: str, at: str, ttl: int) -> links.ActionLink:
    from datetime import datetime, timedelta

    expires = datetime.fromisoformat(at.replace("Z", "+00:00")) + timedelta(seconds=ttl)
    return links.ActionLink(
        links.digest(token),
        notice.run_id,
        notice.round,
        notice.step_id,
        notice.principal[len(USER_PREFIX) :],
        action,
        at,
        iso(expires.timestamp()),
        notice.on_behalf_of,
    )


# -- Slack -------------------------------------------------------------------------------------

# The events that decide a step, and how its Slack messages then say so.
DECIDED = {
    events.STEP_APPROVED: "approved",
    events.STEP_REJECTED: RunStatus.REJECTED.value,
    events.STEP_EXPIRED: "expired",
    events.RUN_RETURNED: "sent back",
}


def _post(
    notice: Notice,
    contact: Contact,
    run: Run,
    workflow: Workflow,
    data: Mapping[str, Any],
    storage: Backend,
    at: str,
    config: Settings,
) -> bool:
    """chat.postMessage to the contact's Slack id, at most once (its own
    once-key); Approve and Reject for a user asked to decide."""
    import uuid

    from chalicelib.delivery import slack

    assert contact.slack is not None and config.slack_token is not None
    once, claim = notice.once_key + "#slack", f"{at}#{uuid.uuid4().hex}"
    if not storage.claim_notice(once, claim):
        return True
    letter = compose(notice, contact.slack, run, workflow, data, (), config.public_url)
    run_url = f"{config.public_url}/#/runs/{run.id}" if config.public_url else None
    asks_user = notice.asks and notice.principal.startswith(USER_PREFIX)
    decide = slack.button_value(run.id, notice.round, notice.step_id) if asks_user else None
    summary = "\n".join((f"*{letter.subject}*", *letter.lines))
    blocks = slack.blocks(summary, letter.fields, run_url, decide)
    try:
        posted = slack.post_message(config.slack_token, contact.slack, letter.subject, blocks)
    except slack.SlackError as exc:
        storage.release_notice(once, claim)
        LOGGER.warning("could not post %s of run %s to Slack: %s", notice.kind, run.id, exc)
        return False
    if notice.of_a_step:  # updated once the step is decided
        post = notifications.SlackPost(
            run.id, notice.round, notice.step_id, posted.channel, posted.ts, notice.principal
        )
        storage.put_slack_post(post)
    LOGGER.info("posted %s of run %s to %s on Slack", notice.kind, run.id, notice.principal)
    return True


def _update_slack(cloud_event: Mapping[str, Any], storage: Backend, config: Settings) -> bool:
    """Once a step is decided (by any channel), or its run cancelled, every
    message posted about it shows the outcome and who, without its buttons
    (chat.update)."""
    kind = cloud_event.get("type", "")
    data = cloud_event.get("data") or {}
    if config.slack_token is None or data.get("run_id") is None:
        return True
    if kind == events.RUN_CANCELLED:
        return _cancelled_in_slack(int(data["run_id"]), data.get("actor"), storage, config)
    verb = DECIDED.get(kind)
    step = data.get("step") or {}
    if verb is None or not step.get("id"):
        return True
    round_ = int(data.get("round") or 1)
    run = storage.get_run(int(data["run_id"]), history=False)
    waits = run.current_step is not None and run.current_step.id == step["id"]
    if run.status == RunStatus.IN_PROGRESS and waits and run.round == round_:
        return True  # an approval short of the quorum: the step still waits
    text = f"*{run.title}*: {step.get('name')} was {verb} by {data.get('actor')}."
    return _update_posts(run.id, round_, int(step["id"]), text, storage, config)


def _cancelled_in_slack(
    run_id: int, actor: Optional[str], storage: Backend, config: Settings
) -> bool:
    """A cancelled run's step (its event names none: the cancel action does)
    needs nobody's decision any more: its messages say so, without buttons."""
    run = storage.get_run(run_id)
    cancel = next((a for a in reversed(run.actions) if a.action == ActionKind.CANCEL), None)
    if cancel is None:
        return True
    text = f"*{run.title}* was cancelled by {actor}: {cancel.step_name} needs no decision any more."
    return _update_posts(run.id, cancel.round, cancel.step_id, text, storage, config)


def _update_posts(
    run_id: int, round_: int, step_id: int, text: str, storage: Backend, config: Settings
) -> bool:
    """Every message posted about the run's step in that round, as `text`."""
    from chalicelib.delivery import slack

    assert config.slack_token is not None
    done = True
    for post in storage.slack_posts(run_id, round_, step_id):
        try:
            slack.update_message(config.slack_token, post.channel, post.ts, text)
        except slack.SlackError as exc:
            LOGGER.warning("could not update a Slack message of run %s: %s", run_id, exc)
            done = False
    return done


# -- what a message says ----------------------------------------------------------------------

SUBJECTS = {
    notifications.ARRIVED: "{title} waits for you at {step}",
    notifications.REMINDED: "Reminder: {title} waits for you at {step}",
    notifications.ESCALATED: "Escalated to you: {title} waits at {step}",
    notifications.WATCHING: "{title} waits at {step}",
    RunStatus.COMPLETED.value: "{title} was approved",
    RunStatus.REJECTED.value: "{title} was rejected",
    RunStatus.RETURNED.value: "{title} was sent back for changes",
    RunStatus.CANCELLED.value: "{title} was cancelled",
}


def compose(
    notice: Notice,
    to: str,
    run: Run,
    workflow: Workflow,
    data: Mapping[str, Any],
    offered: Sequence[mail.Link],
    public_url: Optional[str],
) -> mail.Letter:
    """The letter of one notification: what is being approved, the step, who
    else may decide, the deadline, and the links."""
    step = run.current_step
    step_name = step.name if step is not None else (data.get("step") or {}).get("name", "")
    subject = f"[{workflow.name}] " + SUBJECTS[notice.kind].format(title=run.title, step=step_name)
    lines = [f"{run.title}, requested by {run.requested_by or 'nobody named'}."]
    if notice.of_a_step and step is not None:
        if notice.asks:
            behalf = f" on behalf of {notice.on_behalf_of}" if notice.on_behalf_of else ""
            lines.append(f"The step {step.name!r} waits for your decision{behalf}.")
        else:
            lines.append(f"The step {step.name!r} waits for a decision; it names you to be told.")
        who = ", ".join(step.approvers) or "anyone"
        lines.append(f"Who may decide it: {who} ({step.required_approvals} approval(s) needed).")
        if run.current_step_due_at:
            lines.append(f"Deadline: {run.current_step_due_at}.")
        if not notice.asks:
            lines.append("Open the run to follow it.")
        elif notice.principal.startswith(GROUP_PREFIX):
            lines.append("Open the run to decide it.")
    else:
        actor = data.get("actor")
        lines.append(f"It was {notice.kind} by {actor}." if actor else f"It was {notice.kind}.")
        if data.get("comment"):
            lines.append(f"Comment: {data['comment']}")
    if public_url is None:
        lines.append("(WORKFLOW_PUBLIC_URL is not set: this message carries no links.)")
    fields = tuple((name, _shown(value)) for name, value in run.input.items())
    return mail.Letter(to, subject, tuple(lines), fields, tuple(offered))


def _shown(value: Any) -> str:
    """A field's value as the page shows it: text as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


# -- where the events come from ---------------------------------------------------------------


class Retrying:
    """make run's and chalice local's notifier: the dispatcher hands it each
    event it delivered, and a thread of its own sends them, trying again with
    the webhooks' backoff what failed. What waits here is in memory: a
    process that stops loses the retries it held (never a second send)."""

    def __init__(
        self,
        storage: Callable[[], Backend],
        mailer: mail.Mailer,
        config: Settings,
        delay: Callable[[int], float],
    ) -> None:
        self._storage, self._mailer, self._config, self._delay = storage, mailer, config, delay
        self._lock = threading.Lock()
        # (due at, attempts so far, event)
        self._waiting: list[tuple[float, int, Event]] = []

    def after(self, sink: Sink) -> Sink:
        """`sink`, handing each event it delivered to this notifier."""

        def delivered(event: Event, now: float) -> bool:
            done = sink(event, now)
            if done:
                with self._lock:
                    self._waiting.append((now, 0, event))
            return done

        return delivered

    def send_due(self, now: float) -> int:
        """Send what is due; how many events were tried."""
        with self._lock:
            due = [item for item in self._waiting if item[0] <= now]
            self._waiting = [item for item in self._waiting if item[0] > now]
        for _, attempts, event in due:
            if not notify(event, self._storage(), self._mailer, now, self._config):
                with self._lock:
                    self._waiting.append((now + self._delay(attempts + 1), attempts + 1, event))
        return len(due)


def local(storage: Callable[[], Backend]) -> Retrying:
    """The notifier of make run and chalice local: WORKFLOW_MAIL, by default
    .eml files in mail/ beside the SQLite file (in the data directory, out of
    the project: chalice local restarts on every file written under it)."""
    from chalicelib.delivery import webhooks
    from chalicelib.storage import default_sqlite_path

    database = os.environ.get("WORKFLOW_SQLITE_PATH") or default_sqlite_path()
    folder = os.path.join(os.path.dirname(os.path.abspath(database)), "mail")
    mailer = mail.configured_mailer(default=f"dir:{folder}")
    assert mailer is not None, "a default is given"
    return Retrying(storage, mailer, settings(), webhooks.retry_delay)


def consume(
    records: Iterable[Mapping[str, Any]],
    storage: Backend,
    mailer: mail.Mailer,
    now: float,
    config: Settings,
) -> dict[str, Any]:
    """The deployed notifier: SQS messages of the bus's events (detail: the
    CloudEvent); the ones whose notifications could not all be sent are
    reported failed, and SQS brings them back after the queue's visibility
    timeout (each notification sent already is not sent again)."""
    failed = []
    for record in records:
        detail = json.loads(record["body"])["detail"]
        event = Event(
            detail["id"],
            detail["subject"],
            int(detail["sequence"]),
            detail["type"],
            json.dumps(detail),
        )
        if not notify(event, storage, mailer, now, config):
            failed.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failed}
