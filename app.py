"""The routes of the approval-workflow service: parse, call the engine, shape.

Each route validates its request into plain values (chalicelib/api/validation.py),
calls one engine function and returns its model; `api.answers` turns the model,
or the domain error, into the HTTP response (chalicelib/api/http.py). The
parsers of bodies and query strings are imported by the routes that use them:
a cold start that serves a read by id loads neither.
"""

from __future__ import annotations

import gc
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

# The service's modules and their records live as long as the process:
# collecting among them while they load is wasted work on a cold start (about
# 0.65 million instructions, by callgrind). The collector waits until they are
# loaded, and leaves them out of every later collection (gc.freeze).
gc.disable()
try:
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
finally:
    # On again even if an import failed.
    gc.freeze()
    gc.enable()

if TYPE_CHECKING:
    from chalicelib.storage import Backend

app = Chalice(app_name="approval-workflows")
# Stand-ins that `chalice package` needs; deploy/stack.yaml replaces both with
# the stack's own table stream and queue.
RELAYED_STREAM = "arn:aws:dynamodb:us-east-1:000000000000:table/approval-workflows/stream/packaged"
WEBHOOK_QUEUE = "arn:aws:sqs:us-east-1:000000000000:approval-workflows-webhooks"
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


# -- events in the cloud (chalicelib/delivery/relay.py; wired by deploy/stack.yaml) -------


@app.on_dynamodb_record(stream_arn=RELAYED_STREAM, batch_size=100, starting_position="TRIM_HORIZON")
def on_dynamodb_record(event: DynamoDBEvent) -> dict[str, Any]:
    """The table's stream (event items only) -> the stack's EventBridge bus."""
    from chalicelib.delivery import relay

    records = (record.to_dict() for record in event)
    return relay.relay(records, relay.put_events_client(), relay.event_bus())


@app.on_sqs_message(queue_arn=WEBHOOK_QUEUE, batch_size=10)
def deliver_webhooks(event: SQSEvent) -> dict[str, Any]:
    """The bus's events, through SQS -> the webhook, in order per run."""
    import time

    from chalicelib.delivery import dispatch, relay, webhooks

    records = (record.to_dict() for record in event)
    sink = dispatch.configured_sink()
    hide = relay.queue_hider()
    return relay.deliver_messages(
        records, get_storage(), sink, time.time, hide, webhooks.retry_delay
    )


@app.schedule(Rate(1, unit=Rate.MINUTES))
def sweep_deadlines(event: CloudWatchEvent) -> None:
    """Apply the step deadlines that have passed (chalicelib/domain/deadlines.py)."""
    engine.sweep(get_storage())


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
