"""Email: the messages the notifier sends, and the three ways it sends them.

WORKFLOW_MAIL picks the way:

    ses                 Amazon SES v2 SendEmail (the packaged default), as a raw message
    smtp://HOST:PORT    plain SMTP; WORKFLOW_SMTP_STARTTLS=on upgrades the connection
                        first, WORKFLOW_SMTP_USER and WORKFLOW_SMTP_PASSWORD (or
                        WORKFLOW_SMTP_PASSWORD_PARAMETER, an SSM SecureString) log in
    dir:PATH            each message written to PATH as an .eml file (make run's
                        default: mail/ beside its database)

WORKFLOW_MAIL_FROM is the sender. A message has a plain-text and an HTML
part, made with the standard library's `email` package.
"""

from __future__ import annotations

import html
import logging
import os
from collections.abc import Callable
from email.message import EmailMessage
from pathlib import Path
from typing import Any, Optional

from chalicelib.domain.record import Record

MAIL_VARIABLE = "WORKFLOW_MAIL"
FROM_VARIABLE = "WORKFLOW_MAIL_FROM"
DEFAULT_FROM = "approvals@localhost"
SMTP_TIMEOUT_SECONDS = 10
LOGGER = logging.getLogger("approval-workflows.notifications")

# Sends one message; raises OSError (or a client's error) where it could not.
Mailer = Callable[[EmailMessage], str]


class Link(Record):
    label: str
    url: str


class Letter(Record):
    """What one email says, before it is a MIME message."""

    to: str
    subject: str
    lines: tuple[str, ...]
    # Field name -> value as the page shows it.
    fields: tuple[tuple[str, str], ...]
    links: tuple[Link, ...]


def message(letter: Letter, sender: str) -> EmailMessage:
    """The letter as a multipart/alternative message: text, then HTML."""
    mail = EmailMessage()
    mail["From"] = sender
    mail["To"] = letter.to
    mail["Subject"] = letter.subject
    text = [*letter.lines, ""]
    text += [f"  {name}: {value}" for name, value in letter.fields]
    text += ["", *(f"{link.label}: {link.url}" for link in letter.links)]
    mail.set_content("\n".join(text) + "\n")
    mail.add_alternative(_html(letter), subtype="html")
    return mail


def _html(letter: Letter) -> str:
    e = html.escape
    paragraphs = "".join(f"<p>{e(line)}</p>" for line in letter.lines)
    rows = "".join(
        f"<tr><th>{e(name)}</th><td>{e(value)}</td></tr>" for name, value in letter.fields
    )
    table = f'<table cellpadding="4">{rows}</table>' if rows else ""
    links = " ".join(
        f'<a href="{e(link.url)}" style="display:inline-block;padding:8px 14px;margin:4px;'
        f'border:1px solid #555;border-radius:4px;text-decoration:none">{e(link.label)}</a>'
        for link in letter.links
    )
    return (
        f'<!doctype html><html><body style="font-family:sans-serif">'
        f"<h2>{e(letter.subject)}</h2>{paragraphs}{table}<p>{links}</p></body></html>"
    )


# -- the ways to send ------------------------------------------------------------------


def configured_mailer(default: Optional[str] = None) -> Optional[Mailer]:
    """The mailer WORKFLOW_MAIL names (or `default`); None where none is set;
    ValueError, saying what to set, for one that cannot work."""
    setting = os.environ.get(MAIL_VARIABLE, "").strip() or (default or "")
    if not setting:
        return None
    if setting == "ses":
        return ses_send
    if setting.startswith("smtp://"):
        host, _, port = setting.removeprefix("smtp://").rstrip("/").rpartition(":")
        if not host or not port.isdigit():
            raise ValueError(f"{MAIL_VARIABLE} is {setting!r}: write smtp://HOST:PORT")
        return Smtp(host, int(port)).send
    if setting.startswith("dir:") and setting[4:]:
        return Directory(Path(setting[4:])).send
    raise ValueError(f"{MAIL_VARIABLE} is {setting!r}: set it to ses, smtp://HOST:PORT or dir:PATH")


def sender() -> str:
    return os.environ.get(FROM_VARIABLE, "").strip() or DEFAULT_FROM


class Directory:
    """Writes each message as an .eml file: what a developer opens to see it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def send(self, mail: EmailMessage) -> str:
        import uuid

        self.folder.mkdir(parents=True, exist_ok=True)
        path = self.folder / f"{uuid.uuid4().hex}.eml"
        path.write_bytes(bytes(mail))
        return str(path)


class Smtp:
    """Plain SMTP, upgraded with STARTTLS where WORKFLOW_SMTP_STARTTLS=on."""

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port

    def send(self, mail: EmailMessage) -> str:
        import smtplib

        from chalicelib import secret_store

        with smtplib.SMTP(self.host, self.port, timeout=SMTP_TIMEOUT_SECONDS) as server:
            if os.environ.get("WORKFLOW_SMTP_STARTTLS", "").strip().lower() == "on":
                server.starttls()
            user = os.environ.get("WORKFLOW_SMTP_USER", "").strip()
            if user:
                server.login(user, secret_store.value("WORKFLOW_SMTP_PASSWORD") or "")
            server.send_message(mail)
        return f"smtp://{self.host}:{self.port}"


_SES: list[Any] = []


def ses_send(mail: EmailMessage) -> str:
    """SES v2 SendEmail, the raw message (its text and HTML parts as made here)."""
    if not _SES:
        import boto3

        _SES.append(boto3.client("sesv2"))
    answer = _SES[0].send_email(
        FromEmailAddress=mail["From"],
        Destination={"ToAddresses": [mail["To"]]},
        Content={"Raw": {"Data": bytes(mail)}},
    )
    return f"ses:{answer.get('MessageId', '')}"


def forget_clients() -> None:
    """Create the SES client again on next use (tests change its endpoint)."""
    _SES.clear()
