"""The routes of the approval-workflow service: parse, call the engine, shape.

Each route validates its request into plain values (chalicelib/api/validation.py),
calls one engine function and returns its model; `api.answers` turns the model,
or the domain error, into the HTTP response (chalicelib/api/http.py). The
parsers of bodies and query strings are imported by the routes that use them:
a cold start that serves a read by id loads neither.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Optional

from chalice.app import Chalice, CloudWatchEvent, DynamoDBEvent, Rate, Response, SQSEvent

# Under `chalice local`'s reloader (in the worker it starts, CHALICE_WORKER is
# set), any new file in the project restarts the server, dropping the requests
# in flight: the bytecode of a module that a request imports first would be one.
if os.environ.get("CHALICE_WORKER"):
    sys.dont_write_bytecode = True

from chalicelib import background, engine
from chalicelib.api import access_log, http, identity, paths, representations
from chalicelib.domain.models import (
    Awaiting,
    Delegation,
    Event,
    Page,
    Permissions,
    Run,
    RunAudit,
    Step,
    Workflow,
)

if TYPE_CHECKING:
    from chalicelib.domain.models import Contact
    from chalicelib.domain.stats import WorkflowStats
    from chalicelib.storage import Backend

app = Chalice(app_name="approval-workflows")
# Stand-ins that `chalice package` needs; deploy/stack.yaml replaces both with
# the stack's own table stream and queue.
RELAYED_STREAM = "arn:aws:dynamodb:us-east-1:000000000000:table/approval-workflows/stream/packaged"
WEBHOOK_QUEUE = "arn:aws:sqs:us-east-1:000000000000:approval-workflows-webhooks"
NOTIFICATION_QUEUE = "arn:aws:sqs:us-east-1:000000000000:approval-workflows-notifications"
app.api.cors = http.cors()
access_log.install(app)
# Served by `chalice local`: the event dispatch and deadline sweeps that
# `make run` starts itself start on the first request (nothing on Lambda).
background.when_served_locally(app)

_STORAGE: Optional[Backend] = None


def get_storage() -> Backend:
    """The process's storage, created on first use so cold starts stay light."""
    global _STORAGE
    if _STORAGE is None:
        from chalicelib.storage import create_storage

        _STORAGE = create_storage()
    return _STORAGE


def use_storage(storage: Optional[Backend]) -> None:
    """Serve from `storage` from now on (None: create it again on next use)."""
    global _STORAGE
    _STORAGE = storage


api = http.JsonApi(app, key_store=get_storage)


@app.route("/workflows", methods=["POST"])
@api.answers(201, location=lambda workflow: f"/workflows/{workflow.id}")
def create_workflow() -> Workflow:
    from chalicelib.api import validation

    identity.require_admin(api.caller())
    new = validation.new_workflow(api.body())
    return engine.create_workflow(
        get_storage(),
        new.name,
        new.description,
        new.steps,
        policy=new.policy,
        input_schema=new.input_schema,
        max_returns=new.max_returns,
    )


@app.route("/workflows", methods=["GET"])
@api.answers(200)
def list_workflows() -> Page[Workflow]:
    from chalicelib import versions
    from chalicelib.api import queries

    query = queries.workflow_list_query(api.query())
    return versions.list_workflows(get_storage(), query.limit, query.cursor, query.retired)


@app.route("/workflows/{workflow_id}", methods=["GET"])
@api.answers(200)
def get_workflow(workflow_id: str) -> Workflow:
    return engine.get_workflow(get_storage(), paths.path_id(workflow_id, "Workflow"))


@app.route("/workflows/{workflow_id}/steps", methods=["POST"])
@api.answers(201, location=lambda step: f"/workflows/{step.workflow_id}")
def append_step(workflow_id: str) -> Step:
    from chalicelib.api import validation

    identity.require_admin(api.caller())
    body = api.body()
    wid = paths.path_id(workflow_id, "Workflow")
    return engine.append_step(get_storage(), wid, validation.new_step(body))


@app.route("/workflows/{workflow_id}/stats", methods=["GET"])
@api.answers(200)
def workflow_stats(workflow_id: str) -> WorkflowStats:
    from chalicelib import stats
    from chalicelib.api import queries

    wid = paths.path_id(workflow_id, "Workflow")
    query = queries.stats_query(api.query())
    reader = identity.reader_of(api.caller())
    return stats.workflow_stats(
        get_storage(), wid, query.start, query.end, *reader, version=query.version
    )


# -- a workflow's versions and retirement (chalicelib/versions.py) -----------------


@app.route("/workflows/{workflow_id}/versions", methods=["POST"])
@api.answers(201, location=lambda workflow: f"/workflows/{workflow.id}/versions/{workflow.version}")
def publish_version(workflow_id: str) -> Workflow:
    from chalicelib import versions
    from chalicelib.api import validation

    identity.require_admin(api.caller())
    new, expected_version = validation.new_version(api.body())
    definition = versions.Definition(
        new.description, new.steps, new.policy, new.input_schema, new.max_returns
    )
    wid = paths.path_id(workflow_id, "Workflow")
    return versions.publish_version(get_storage(), wid, definition, expected_version)


@app.route("/workflows/{workflow_id}/versions", methods=["GET"])
@api.answers(200)
def list_versions(workflow_id: str) -> Page[Workflow]:
    from chalicelib import versions
    from chalicelib.api import queries

    query = queries.workflow_query(api.query())
    wid = paths.path_id(workflow_id, "Workflow")
    return versions.list_versions(get_storage(), wid, query.limit, query.cursor)


@app.route("/workflows/{workflow_id}/versions/{version}", methods=["GET"])
@api.answers(200)
def get_workflow_version(workflow_id: str, version: str) -> Workflow:
    from chalicelib import versions

    wid = paths.path_id(workflow_id, "Workflow")
    return versions.get_workflow_version(get_storage(), wid, paths.path_id(version, "Version"))


@app.route("/workflows/{workflow_id}/retire", methods=["POST"])
@api.answers(200)
def retire_workflow(workflow_id: str) -> Workflow:
    return _set_retired(workflow_id, True)


@app.route("/workflows/{workflow_id}/reinstate", methods=["POST"])
@api.answers(200)
def reinstate_workflow(workflow_id: str) -> Workflow:
    return _set_retired(workflow_id, False)


def _set_retired(workflow_id: str, retired: bool) -> Workflow:
    from chalicelib import versions

    identity.require_admin(api.caller())
    wid = paths.path_id(workflow_id, "Workflow")
    return versions.set_retired(get_storage(), wid, retired)


@app.route("/runs", methods=["POST"])
@api.answers(201, location=lambda run: f"/runs/{run.id}")
def start_run() -> Run:
    from chalicelib.api import validation

    new = validation.new_run(api.body())
    requester = identity.requester_of(api.caller(), new.requested_by)
    return engine.start_run(get_storage(), new.workflow_id, new.title, requester, data=new.input)


@app.route("/runs", methods=["GET"])
@api.answers(200)
def list_runs() -> Page[Run]:
    from chalicelib.api import queries

    query = queries.run_query(api.query())
    return engine.list_runs(
        get_storage(), query.workflow_id, query.status, query.limit, query.cursor
    )


@app.route("/runs/{run_id}", methods=["GET"])
@api.answers(200)
def get_run(run_id: str) -> Run:
    return engine.get_run(get_storage(), paths.path_id(run_id, "Run"))


@app.route("/runs/{run_id}/audit", methods=["GET"])
@api.answers(200)
def audit_run(run_id: str) -> RunAudit:
    return engine.audit_run(get_storage(), paths.path_id(run_id, "Run"))


@app.route("/runs/{run_id}/permissions", methods=["GET"])
@api.answers(200)
def run_permissions(run_id: str) -> Permissions:
    from chalicelib.api import queries

    rid = paths.path_id(run_id, "Run")
    caller = api.caller()
    query = queries.caller_query(api.query(), caller is not None, ("on_behalf_of",))
    actor = identity.actor_of(caller, query.actor)
    groups = caller.groups if caller is not None else query.groups
    return engine.permissions(
        get_storage(),
        rid,
        actor,
        groups,
        identity.is_admin(caller),
        query.on_behalf_of,
        administers=identity.may_administer(caller),
    )


@app.route("/runs/{run_id}/events", methods=["GET"])
@api.answers(200)
def run_events(run_id: str) -> Page[Event]:
    from chalicelib.api import queries

    rid = paths.path_id(run_id, "Run")
    query = queries.event_query(api.query())
    return engine.run_events(get_storage(), rid, query.limit, query.cursor)


@app.route("/runs/{run_id}/approve", methods=["POST"])
@api.answers(200, minimal=representations.listed_text)
def approve(run_id: str) -> Run:
    return _decide(run_id, engine.approve)


@app.route("/runs/{run_id}/reject", methods=["POST"])
@api.answers(200, minimal=representations.listed_text)
def reject(run_id: str) -> Run:
    return _decide(run_id, engine.reject)


@app.route("/runs/{run_id}/return", methods=["POST"])
@api.answers(200, minimal=representations.listed_text)
def return_run(run_id: str) -> Run:
    return _decide(run_id, engine.return_run, comment_required=True)


def _decide(run_id: str, decide: Callable[..., Run], comment_required: bool = False) -> Run:
    """An approve, reject or return request: the body, the run, who decides."""
    from chalicelib.api import validation

    body = api.body()
    rid = paths.path_id(run_id, "Run")
    caller = api.caller()
    decided = validation.decision(body, caller is None, comment_required)
    actor = identity.actor_of(caller, decided.actor)
    groups = identity.groups_of(caller, decided.groups)
    seen = engine.Seen(decided.expected_step_id, decided.expected_round, decided.on_behalf_of)
    return decide(
        get_storage(),
        rid,
        actor,
        decided.comment,
        groups=groups,
        history=not api.prefers_minimal(),
        seen=seen,
    )


@app.route("/runs/{run_id}/resubmit", methods=["POST"])
@api.answers(200, minimal=representations.listed_text)
def resubmit(run_id: str) -> Run:
    from chalicelib.api import validation

    body = api.body()
    rid = paths.path_id(run_id, "Run")
    caller = api.caller()
    again = validation.resubmission(body, actor_required=caller is None)
    return engine.resubmit(
        get_storage(),
        rid,
        identity.actor_of(caller, again.actor),
        again.comment,
        again.input,
        admin=identity.is_admin(caller),
        history=not api.prefers_minimal(),
    )


@app.route("/runs/{run_id}/reassign", methods=["POST"])
@api.answers(200, minimal=representations.listed_text)
def reassign(run_id: str) -> Run:
    from chalicelib import versions
    from chalicelib.api import administration

    rid = paths.path_id(run_id, "Run")
    caller = api.caller()
    given = administration.reassignment(api.body(), actor_required=caller is None)
    return versions.reassign(
        get_storage(),
        rid,
        identity.actor_of(caller, given.actor),
        given.approvers,
        given.comment,
        admin=identity.may_administer(caller),
        history=not api.prefers_minimal(),
    )


@app.route("/runs/{run_id}/move", methods=["POST"])
@api.answers(200, minimal=representations.listed_text)
def move(run_id: str) -> Run:
    from chalicelib import versions
    from chalicelib.api import administration

    rid = paths.path_id(run_id, "Run")
    caller = api.caller()
    given = administration.move(api.body(), actor_required=caller is None)
    actor = identity.actor_of(caller, given.actor)
    return versions.move(
        get_storage(),
        rid,
        actor,
        given.to_version,
        given.step,
        given.comment,
        admin=identity.may_administer(caller),
        history=not api.prefers_minimal(),
    )


@app.route("/runs/{run_id}/cancel", methods=["POST"])
@api.answers(200, minimal=representations.listed_text)
def cancel(run_id: str) -> Run:
    from chalicelib.api import validation

    body = api.body()
    rid = paths.path_id(run_id, "Run")
    caller = api.caller()
    withdrawn = validation.cancellation(body, actor_required=caller is None)
    actor = identity.actor_of(caller, withdrawn.actor)
    return engine.cancel(
        get_storage(),
        rid,
        actor,
        withdrawn.reason,
        admin=identity.is_admin(caller),
        history=not api.prefers_minimal(),
    )


@app.route("/inbox", methods=["GET"])
@api.answers(200)
def inbox() -> Page[Awaiting]:
    from chalicelib.api import queries

    caller = api.caller()
    query = queries.inbox_query(api.query(), verified=caller is not None)
    actor = identity.actor_of(caller, query.actor)
    groups = caller.groups if caller is not None else query.groups
    return engine.inbox(get_storage(), actor, groups, query.limit, query.cursor)


# -- delegations ---------------------------------------------------------------------


@app.route("/delegations", methods=["POST"])
@api.answers(201, location=lambda delegation: f"/delegations/{delegation.id}")
def create_delegation() -> Delegation:
    from chalicelib import delegations
    from chalicelib.api import validation

    caller = api.caller()
    new = validation.new_delegation(api.body(), delegator_required=caller is None)
    return delegations.create(
        get_storage(),
        identity.delegator_of(caller, new.delegator),
        new.delegate,
        new.starts_at,
        new.ends_at,
        new.workflow_id,
        new.reason,
        created_by=caller.actor if caller is not None else None,
    )


@app.route("/delegations", methods=["GET"])
@api.answers(200)
def list_delegations() -> Page[Delegation]:
    from chalicelib import delegations
    from chalicelib.api import queries

    query = queries.delegation_query(api.query())
    caller = api.caller()
    return delegations.listed(
        get_storage(),
        query.delegator,
        query.delegate,
        query.active_at,
        query.limit,
        query.cursor,
        *identity.reader_of(caller),
    )


@app.route("/delegations/{delegation_id}", methods=["GET"])
@api.answers(200)
def get_delegation(delegation_id: str) -> Delegation:
    from chalicelib import delegations

    did = paths.path_id(delegation_id, "Delegation")
    return delegations.get(get_storage(), did, *identity.reader_of(api.caller()))


@app.route("/delegations/{delegation_id}", methods=["DELETE"])
@api.answers(200)
def revoke_delegation(delegation_id: str) -> Delegation:
    from chalicelib import delegations
    from chalicelib.api import queries

    did = paths.path_id(delegation_id, "Delegation")
    caller = api.caller()
    query = queries.caller_query(api.query(), verified=caller is not None)
    actor = identity.actor_of(caller, query.actor)
    return delegations.revoke(get_storage(), did, actor, identity.is_admin(caller))


# -- contacts (chalicelib/contacts.py) ----------------------------------------------


@app.route("/contacts", methods=["GET"])
@api.answers(200)
def list_contacts() -> Page[Contact]:
    from chalicelib import contacts
    from chalicelib.api import queries

    query = queries.workflow_query(api.query())
    reader, _, admin = identity.reader_of(api.caller())
    return contacts.listed(get_storage(), query.limit, query.cursor, reader, admin)


@app.route("/contacts/{principal}", methods=["PUT"])
@api.answers(200)
def put_contact(principal: str) -> Contact:
    from chalicelib import contacts
    from chalicelib.api import contact_fields

    whose = contact_fields.principal(principal)
    new = contact_fields.new_contact(api.body())
    reader, _, admin = identity.reader_of(api.caller())
    return contacts.put(get_storage(), whose, new.email, new.slack, reader, admin)


@app.route("/contacts/{principal}", methods=["GET"])
@api.answers(200)
def get_contact(principal: str) -> Contact:
    from chalicelib import contacts
    from chalicelib.api import contact_fields

    reader, _, admin = identity.reader_of(api.caller())
    return contacts.get(get_storage(), contact_fields.principal(principal), reader, admin)


@app.route("/contacts/{principal}", methods=["DELETE"])
@api.answers(200)
def delete_contact(principal: str) -> Contact:
    from chalicelib import contacts
    from chalicelib.api import contact_fields

    reader, _, admin = identity.reader_of(api.caller())
    return contacts.delete(get_storage(), contact_fields.principal(principal), reader, admin)


# -- one-time action links (chalicelib/action_links.py): HTML pages, not JSON ------------


@app.route("/act/{token}", methods=["GET"])
def link_offer(token: str) -> Response:
    """What the link would decide, and its form: nothing changes."""
    from chalicelib import action_links
    from chalicelib.api import action_pages

    def respond(base: str) -> Response:
        offer = action_links.offer(get_storage(), token)
        run, link = offer.run, offer.link
        step = run.current_step.name if run.current_step else ""
        return action_pages.confirmation(
            base, link.action, run.title, offer.workflow.name, step, link.person,
            run.input, link.on_behalf_of,
        )  # fmt: skip

    return _link_answer(respond)


@app.route("/act/{token}", methods=["POST"], content_types=["application/x-www-form-urlencoded"])
def link_decision(token: str) -> Response:
    """The link's decision, taken once, as its person."""
    from chalicelib import action_links
    from chalicelib.api import action_pages, contact_fields

    def respond(base: str) -> Response:
        comment = contact_fields.link_comment(api.form())
        done = action_links.act(get_storage(), token, comment)
        return action_pages.outcome(base, done.link.action, done.run.title, done.run.status)

    return _link_answer(respond)


def _link_answer(respond: Callable[[str], Response]) -> Response:
    """A link's page, or the page of why not (links off: 404, as an unknown one)."""
    from chalicelib import action_links
    from chalicelib.api import action_pages
    from chalicelib.domain import errors

    base = api.base_path()
    try:
        verified = identity.settings().mode == identity.JWT
        action_links.check_enabled(verified, os.environ.get(action_links.LINKS_VARIABLE))
        return respond(base)
    except errors.WorkflowError as exc:
        return action_pages.refusal(base, http.status_of(exc), exc.message)


# -- Slack's button clicks (chalicelib/slack_clicks.py): signed by Slack, not by a JWT --------


@app.route(
    "/integrations/slack/interactions",
    methods=["POST"],
    content_types=["application/x-www-form-urlencoded"],
)
def slack_interaction() -> Response:
    """A click on a message's Approve or Reject: decided as its Slack user's person."""
    import time

    from chalicelib import slack_clicks
    from chalicelib.domain import errors

    request = api.request
    raw = request.raw_body if isinstance(request.raw_body, bytes) else b""
    headers = {name.lower(): value for name, value in request.headers.items()}
    try:
        http.check_body_size(raw)
        slack_clicks.click(get_storage(), raw, headers, time.time())
    except errors.WorkflowError as exc:
        return http.domain_error_response(exc)
    return http.json_response({}, 200)


# -- events in the cloud (chalicelib/delivery/relay.py; wired by deploy/stack.yaml) -------


@app.on_dynamodb_record(stream_arn=RELAYED_STREAM, batch_size=100, starting_position="TRIM_HORIZON")
def on_dynamodb_record(event: DynamoDBEvent) -> dict[str, Any]:
    """The table's stream (event and action items, and run items that left
    inbox entries) -> the stack's EventBridge bus and the webhook queue."""
    from chalicelib.delivery import relay

    records = (record.to_dict() for record in event)
    return relay.relay(
        records,
        relay.put_events_client(),
        relay.event_bus(),
        send_messages=relay.webhook_messenger(),
    )


@app.on_sqs_message(queue_arn=WEBHOOK_QUEUE, batch_size=10)
def deliver_webhooks(event: SQSEvent) -> dict[str, Any]:
    """The relay's messages, through SQS -> the webhook, in order per run."""
    import time

    from chalicelib.delivery import dispatch, relay, webhooks

    records = (record.to_dict() for record in event)
    sink = dispatch.configured_sink()
    hide = relay.queue_hider()
    return relay.deliver_messages(
        records, get_storage(), sink, time.time, hide, webhooks.retry_delay
    )


@app.on_sqs_message(queue_arn=NOTIFICATION_QUEUE, batch_size=10)
def notify_people(event: SQSEvent) -> dict[str, Any]:
    """The bus's events, through SQS -> the emails they imply (chalicelib/delivery/notifier.py)."""
    import time

    from chalicelib.delivery import mail, notifier

    records = (record.to_dict() for record in event)
    mailer = mail.configured_mailer(default="ses")
    assert mailer is not None, "a default is given"
    return notifier.consume(records, get_storage(), mailer, time.time(), notifier.settings())


@app.schedule(Rate(1, unit=Rate.MINUTES))
def sweep_deadlines(event: CloudWatchEvent) -> None:
    """Apply the step deadlines that have passed (chalicelib/domain/deadlines.py)."""
    engine.sweep(get_storage())


# -- sign-in (chalicelib/api/signin.py): the service as the page's OIDC client --------------


@app.route("/auth/signin", methods=["GET"])
def sign_in() -> Response:
    """To the provider, with PKCE, state and nonce; back to the page afterwards."""
    from chalicelib.api import signin

    return api.signed(lambda: signin.sign_in(api.query(), api.origin(), api.base_path()))


@app.route("/auth/callback", methods=["GET"])
def sign_in_callback() -> Response:
    """The provider's answer: the code exchanged, the ID token verified, the session set."""
    from chalicelib.api import signin

    request = api.request
    return api.signed(
        lambda: signin.callback(api.query(), request.headers, api.origin(), api.base_path())
    )


@app.route("/auth/session", methods=["GET"])
def signed_in_session() -> Response:
    """Who is signed in, and until when."""
    from chalicelib.api import signin

    return api.signed(lambda: signin.session_answer(api.request.headers))


@app.route("/auth/renew", methods=["POST"])
def renew_session() -> Response:
    """A longer session, from the provider's refresh token."""
    from chalicelib.api import signin

    return api.signed(lambda: signin.renew(api.request.headers))


@app.route("/auth/signout", methods=["POST"])
def sign_out() -> Response:
    """The session cleared, and where the provider ends its own."""
    from chalicelib.api import signin

    request = api.request
    return api.signed(lambda: signin.sign_out(request.headers, api.origin(), api.base_path()))


@app.route("/openapi.json", methods=["GET"])
def openapi_document() -> Response:
    """The OpenAPI document, its servers pointing at the stage that served it."""
    return api.openapi_document()


# The approvers' page (chalicelib/api/page.py): text for a browser, not JSON, and
# no token needed to load it; the page then calls the routes above. Imported
# by these routes only: an API request's cold start does not load it.


@app.route("/", methods=["GET"])
def page_document() -> Response:
    """The page, its entry module and style sheets named under the stage that served it."""
    from chalicelib.api import page

    return page.document(api.base_path())


@app.route("/ui/{name}", methods=["GET"])
def page_file(name: str) -> Response:
    """One of the page's modules or style sheets."""
    from chalicelib.api import page

    return page.file(name)
