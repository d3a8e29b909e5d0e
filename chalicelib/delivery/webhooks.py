"""Sending one event to a webhook, as the Standard Webhooks specification signs it.

    POST <WORKFLOW_WEBHOOK_URL>
    Content-Type: application/cloudevents+json
    webhook-id: <the event's id>             the same on every retry: dedupe by it
    webhook-timestamp: <Unix seconds>         of this attempt
    webhook-signature: v1,<base64 HMAC-SHA256(secret, "{id}.{timestamp}.{body}")>

The secret is `whsec_` + base64 of the key (WORKFLOW_WEBHOOK_SECRET); the
body is the CloudEvent exactly as stored. Any answer but 2xx, or none within
TIMEOUT_SECONDS, is a failure, retried later (chalicelib/delivery/dispatch.py) with
the same id and body. A redirect (3xx) is a failure too, as the specification
says, and is not followed: urllib would follow a 301, 302 or 303 as a GET
without the body, and the event would count as delivered without arriving.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import logging
import random
import urllib.error
import urllib.request
from collections.abc import Callable

from chalicelib.domain.models import Event
from chalicelib.domain.record import Record

SECRET_PREFIX = "whsec_"
TIMEOUT_SECONDS = 10
CONTENT_TYPE = "application/cloudevents+json"
# Backoff between attempts of one event: doubling from FIRST_RETRY_SECONDS up
# to MAX_RETRY_SECONDS, each delay jittered down to half of it. Retries go on
# for as long as the receiver fails (hourly once the ramp is over, about 12
# attempts in): an event is never dropped, and a run's later events wait for it.
FIRST_RETRY_SECONDS = 5.0
MAX_RETRY_SECONDS = 3600.0
LOGGER = logging.getLogger("approval-workflows.events")


class NoRedirects(urllib.request.HTTPRedirectHandler):
    """Leaves every 3xx to the error handlers: urlopen raises it as an HTTPError."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def answer_of(request: urllib.request.Request, timeout: float) -> tuple[int, str]:
    """The status `request` is answered, and where a redirect points ("" if it
    is none); OSError if there is no answer."""
    try:
        with urllib.request.build_opener(NoRedirects).open(request, timeout=timeout) as answer:
            return int(answer.status), ""
    except urllib.error.HTTPError as exc:
        with exc:
            return exc.code, exc.headers.get("Location", "") if 300 <= exc.code < 400 else ""


class InvalidSecret(ValueError):
    """WORKFLOW_WEBHOOK_SECRET is not `whsec_` + base64."""


def secret_key(secret: str) -> bytes:
    """The HMAC key of a `whsec_` secret."""
    if not secret.startswith(SECRET_PREFIX):
        raise InvalidSecret("the webhook secret must start with 'whsec_' (then base64)")
    try:
        key = base64.b64decode(secret[len(SECRET_PREFIX) :], validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidSecret("the webhook secret after 'whsec_' is not base64") from exc
    if len(key) < 24:
        raise InvalidSecret("the webhook secret's key must be at least 24 bytes")
    return key


def signature(key: bytes, event_id: str, timestamp: int, body: bytes) -> str:
    """The webhook-signature header of one attempt."""
    signed = f"{event_id}.{timestamp}.".encode() + body
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def retry_delay(attempts: int, rand: Callable[[], float] = random.random) -> float:
    """Seconds to wait after the `attempts`th failed attempt (from 1): within
    5 s after the first, doubling, at most an hour; jittered so that events
    failing together do not come back together."""
    ceiling = min(MAX_RETRY_SECONDS, FIRST_RETRY_SECONDS * 2.0 ** min(attempts - 1, 20))
    return ceiling / 2 + ceiling / 2 * rand()


class Webhook(Record):
    """Where events go, and the key that signs them."""

    url: str
    key: bytes
    timeout: float = TIMEOUT_SECONDS

    def send(self, event: Event, now: float) -> bool:
        """POST `event`, signed at `now` (Unix seconds); True on a 2xx answer."""
        body = event.body.encode("utf-8")
        timestamp = int(now)
        request = urllib.request.Request(
            self.url,
            data=body,
            method="POST",
            headers={
                "Content-Type": CONTENT_TYPE,
                "User-Agent": "approval-workflows",
                "webhook-id": event.id,
                "webhook-timestamp": str(timestamp),
                "webhook-signature": signature(self.key, event.id, timestamp, body),
            },
        )
        try:
            status, moved = answer_of(request, self.timeout)
        except (OSError, ValueError) as exc:  # refused, unreachable, timed out, bad URL
            LOGGER.warning("webhook %s: event %s not delivered: %s", self.url, event.id, exc)
            return False
        if moved:
            LOGGER.warning(
                "webhook %s: event %s answered %s to %s: redirects are not followed, "
                "set the webhook URL to where it points",
                *(self.url, event.id, status, moved),
            )
        elif not 200 <= status < 300:
            LOGGER.warning("webhook %s: event %s answered %s", self.url, event.id, status)
        return 200 <= status < 300
