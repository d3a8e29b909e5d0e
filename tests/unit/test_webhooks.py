"""Standard Webhooks signing, the retry schedule and the sink settings."""

from __future__ import annotations

import pytest

from chalicelib.delivery import dispatch, webhooks
from chalicelib.domain.models import Event
from tests.support.receiver import SECRET, Receiver

EVENT = Event("evt-1", "runs/1", 1, "approval.run.started", '{"id":"evt-1"}')


def test_the_signature_is_the_standard_webhooks_reference_one() -> None:
    # The example of the Standard Webhooks specification's reference libraries.
    key = webhooks.secret_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
    signed = webhooks.signature(
        key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, b'{"test": 2432232314}'
    )
    assert signed == "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="


@pytest.mark.parametrize(
    "secret", ["MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!", "whsec_c2hvcnQ="]
)
def test_a_secret_that_is_not_whsec_and_a_long_base64_key_is_refused(secret: str) -> None:
    with pytest.raises(webhooks.InvalidSecret):
        webhooks.secret_key(secret)


def test_retries_start_within_5_seconds_double_and_stop_growing_at_an_hour() -> None:
    lowest = [webhooks.retry_delay(n, lambda: 0.0) for n in range(1, 16)]
    highest = [webhooks.retry_delay(n, lambda: 1.0) for n in range(1, 16)]
    assert (lowest[0], highest[0]) == (2.5, 5.0)
    assert highest[:4] == [5.0, 10.0, 20.0, 40.0]
    assert max(highest) == 3600.0 and highest[-1] == 3600.0
    # Retries never stop: a receiver down for days still gets each event, hourly.
    assert webhooks.retry_delay(10_000, lambda: 1.0) == 3600.0


def test_a_webhook_is_signed_and_only_2xx_is_delivered() -> None:
    with Receiver() as receiver:
        hook = webhooks.Webhook(receiver.url, webhooks.secret_key(SECRET))
        assert hook.send(EVENT, 1_900_000_000.7)
        receiver.failing = True
        assert not hook.send(EVENT, 1_900_000_001.0)
    first, second = receiver.received
    assert first.body == EVENT.body.encode() and first.status == 204
    assert first.headers["webhook-id"] == "evt-1"
    assert first.headers["webhook-timestamp"] == "1900000000"
    assert first.headers["content-type"] == "application/cloudevents+json"
    assert second.headers["webhook-id"] == "evt-1" and second.status == 500


@pytest.mark.parametrize("status", [301, 302, 303, 307, 308])
def test_a_redirect_is_a_failure_and_is_not_followed(status: int) -> None:
    # Standard Webhooks: a 3xx is a failure. Followed, a 301, 302 or 303 would
    # turn the POST into a GET without the event, and count as delivered.
    with Receiver() as receiver:
        receiver.answer = status
        hook = webhooks.Webhook(receiver.url, webhooks.secret_key(SECRET))
        assert not hook.send(EVENT, 1_900_000_000.0)
    assert [(got.method, got.path, got.status) for got in receiver.received] == [
        ("POST", "/hooks", status)
    ]


def test_no_answer_in_time_or_nobody_listening_is_a_failure() -> None:
    with Receiver() as receiver:
        url = receiver.url
    assert not webhooks.Webhook(url, b"k" * 32, timeout=0.5).send(EVENT, 0)


def test_the_sink_is_log_unless_a_webhook_url_is_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("WORKFLOW_EVENTS", "WORKFLOW_WEBHOOK_URL", "WORKFLOW_WEBHOOK_SECRET"):
        monkeypatch.delenv(name, raising=False)
    assert dispatch.configured_sink() is dispatch.log_sink
    monkeypatch.setenv("WORKFLOW_WEBHOOK_URL", "http://127.0.0.1:9/hooks")
    with pytest.raises(ValueError, match="WORKFLOW_WEBHOOK_SECRET"):
        dispatch.configured_sink()
    monkeypatch.setenv("WORKFLOW_WEBHOOK_SECRET", "whsec_short")
    with pytest.raises(ValueError, match="WORKFLOW_WEBHOOK_SECRET"):
        dispatch.configured_sink()
    monkeypatch.setenv("WORKFLOW_WEBHOOK_SECRET", SECRET)
    assert dispatch.configured_sink() != dispatch.log_sink
    monkeypatch.setenv("WORKFLOW_EVENTS", "log")
    assert dispatch.configured_sink() is dispatch.log_sink
    monkeypatch.setenv("WORKFLOW_EVENTS", "carrier-pigeon")
    with pytest.raises(ValueError, match="WORKFLOW_EVENTS"):
        dispatch.configured_sink()


def test_the_log_sink_prints_one_json_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert dispatch.log_sink(EVENT, 0)
    assert capsys.readouterr().out == EVENT.body + "\n"
