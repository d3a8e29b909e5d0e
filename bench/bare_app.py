"""A Chalice app with the service's routes and handlers, each doing nothing: the
framework's own cost.

Every route and event handler app.py registers is registered here too, with
the same path, methods and settings (tests/unit/test_bench_bare_app.py keeps
the two tables equal): what Chalice spends registering a route at import, and
matching a request against the route table, is the framework's, not the
service's.
"""

from __future__ import annotations

from typing import Any

from chalice.app import Chalice, Rate

app = Chalice(app_name="bare")


def nothing(*args: Any, **kwargs: Any) -> Any:
    return {}


ROUTES = (
    ("/workflows", "POST", "create_workflow"),
    ("/workflows", "GET", "list_workflows"),
    ("/workflows/{workflow_id}", "GET", "get_workflow"),
    ("/workflows/{workflow_id}/steps", "POST", "append_step"),
    ("/workflows/{workflow_id}/versions", "POST", "publish_version"),
    ("/workflows/{workflow_id}/versions", "GET", "list_versions"),
    ("/workflows/{workflow_id}/versions/{version}", "GET", "get_workflow_version"),
    ("/workflows/{workflow_id}/retire", "POST", "retire_workflow"),
    ("/workflows/{workflow_id}/reinstate", "POST", "reinstate_workflow"),
    ("/workflows/{workflow_id}/stats", "GET", "workflow_stats"),
    ("/runs", "POST", "start_run"),
    ("/runs", "GET", "list_runs"),
    ("/runs/{run_id}", "GET", "get_run"),
    ("/runs/{run_id}/audit", "GET", "audit_run"),
    ("/runs/{run_id}/permissions", "GET", "run_permissions"),
    ("/runs/{run_id}/events", "GET", "run_events"),
    ("/runs/{run_id}/approve", "POST", "approve"),
    ("/runs/{run_id}/reject", "POST", "reject"),
    ("/runs/{run_id}/return", "POST", "return_run"),
    ("/runs/{run_id}/resubmit", "POST", "resubmit"),
    ("/runs/{run_id}/cancel", "POST", "cancel"),
    ("/runs/{run_id}/reassign", "POST", "reassign"),
    ("/runs/{run_id}/move", "POST", "move"),
    ("/inbox", "GET", "inbox"),
    ("/delegations", "POST", "create_delegation"),
    ("/delegations", "GET", "list_delegations"),
    ("/delegations/{delegation_id}", "GET", "get_delegation"),
    ("/delegations/{delegation_id}", "DELETE", "revoke_delegation"),
    ("/contacts", "GET", "list_contacts"),
    ("/contacts/{principal}", "PUT", "put_contact"),
    ("/contacts/{principal}", "GET", "get_contact"),
    ("/contacts/{principal}", "DELETE", "delete_contact"),
    ("/act/{token}", "GET", "link_offer"),
    ("/act/{token}", "POST", "link_decision"),
    ("/integrations/slack/interactions", "POST", "slack_interaction"),
    ("/auth/signin", "GET", "sign_in"),
    ("/auth/callback", "GET", "sign_in_callback"),
    ("/auth/session", "GET", "signed_in_session"),
    ("/auth/renew", "POST", "renew_session"),
    ("/auth/signout", "POST", "sign_out"),
    ("/openapi.json", "GET", "openapi_document"),
    ("/", "GET", "page_document"),
    ("/ui/{name}", "GET", "page_file"),
)

for path, method, name in ROUTES:
    app.route(path, methods=[method], name=name)(nothing)

app.on_dynamodb_record(
    stream_arn="arn:aws:dynamodb:us-east-1:000000000000:table/bare/stream/packaged",
    batch_size=100,
    starting_position="TRIM_HORIZON",
    name="on_dynamodb_record",
)(nothing)
app.on_sqs_message(
    queue_arn="arn:aws:sqs:us-east-1:000000000000:bare-webhooks",
    batch_size=10,
    name="deliver_webhooks",
)(nothing)
app.on_sqs_message(
    queue_arn="arn:aws:sqs:us-east-1:000000000000:bare-notifications",
    batch_size=10,
    name="notify_people",
)(nothing)
app.schedule(Rate(1, unit=Rate.MINUTES), name="sweep_deadlines")(nothing)
