"""What the rehearsal runs beside the stack, on 127.0.0.1: TLS, the issuer, webhook
receivers, and `make run` for the answers to compare with.

The template accepts only https URLs for the issuer's keys (JwksUrl) and the
webhook (WebhookUrl), so both are served over TLS with a certificate made for
127.0.0.1, which the functions and `make run` trust through SSL_CERT_FILE.
"""

from __future__ import annotations

import base64
import datetime
import functools
import hashlib
import hmac
import http.server
import ipaddress
import json
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

HOST = "127.0.0.1"
ISSUER_PATH = ".well-known/jwks.json"
KEY_ID = "rehearsal-1"


def certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1, and its key (PEM files)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rehearsal on 127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(HOST))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = folder / "tls.pem", folder / "tls-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    return cert_path, key_path


class _Server:
    """An HTTPS server on a free port of 127.0.0.1, in a thread."""

    def __init__(
        self, handler: Callable[..., http.server.BaseHTTPRequestHandler], tls: tuple[Path, Path]
    ) -> None:
        self.httpd = http.server.ThreadingHTTPServer((HOST, 0), handler)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(str(tls[0]), str(tls[1]))
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
        self.url = f"https://{HOST}:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class _Files(http.server.SimpleHTTPRequestHandler):
    """The files of a folder, served quietly."""

    def log_message(self, *args: Any) -> None:
        """Quiet."""


class Issuer:
    """An OIDC issuer: its key set (RS256) as a static file, and the tokens it signs."""

    def __init__(self, tls: tuple[Path, Path]) -> None:
        from cryptography.hazmat.primitives.asymmetric import rsa
        from jwt.algorithms import RSAAlgorithm

        self._key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        jwk = json.loads(RSAAlgorithm.to_jwk(self._key.public_key()))
        root = tls[0].parent / "issuer"
        (root / ISSUER_PATH).parent.mkdir(parents=True, exist_ok=True)
        keys = [{**jwk, "kid": KEY_ID, "use": "sig", "alg": "RS256"}]
        (root / ISSUER_PATH).write_text(json.dumps({"keys": keys}))
        self._server = _Server(functools.partial(_Files, directory=str(root)), tls)
        self.url = self._server.url
        self.jwks_url = self.url + "/" + ISSUER_PATH

    def token(self, actor: str, groups: tuple[str, ...] = ()) -> str:
        import jwt

        now = int(time.time())
        claims = {
            "iss": self.url,
            "sub": actor,
            "groups": list(groups),
            "iat": now,
            "exp": now + 3600,
        }
        return jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": KEY_ID})

    def close(self) -> None:
        self._server.close()


@dataclass(frozen=True)
class Delivery:
    event_id: str
    body: bytes
    signed: bool
    status: int

    @property
    def event(self) -> dict[str, Any]:
        parsed: dict[str, Any] = json.loads(self.body)
        return parsed


def verify(secret: str, headers: Mapping[str, str], body: bytes) -> bool:
    """The Standard Webhooks check, written from the specification."""
    key = base64.b64decode(secret.removeprefix("whsec_"))
    signed = f"{headers['webhook-id']}.{headers['webhook-timestamp']}.".encode() + body
    expected = base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()
    return any(
        hmac.compare_digest(part.partition(",")[2], expected)
        for part in headers.get("webhook-signature", "").split()
        if part.startswith("v1,")
    )


class Receiver:
    """A webhook receiver: every POST recorded, its signature checked; `refuse`
    says which deliveries to answer 500 (the first attempt at an event, say)."""

    def __init__(
        self,
        secret: str,
        tls: tuple[Path, Path],
        refuse: Callable[[dict[str, Any], int], bool] = lambda event, attempt: False,
    ) -> None:
        self.secret = secret
        self.deliveries: list[Delivery] = []
        self._lock = threading.Lock()
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = {k.lower(): v for k, v in self.headers.items()}
                signed = "webhook-id" in headers and verify(receiver.secret, headers, body)
                with receiver._lock:
                    event_id = headers.get("webhook-id", "")
                    attempt = sum(1 for d in receiver.deliveries if d.event_id == event_id)
                    try:
                        event = json.loads(body)
                    except ValueError:
                        event = {}
                    status = 500 if refuse(event, attempt) else 204
                    receiver.deliveries.append(Delivery(event_id, body, signed, status))
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                """Quiet."""

        self._server = _Server(Handler, tls)
        self.url = self._server.url + "/hooks"

    def delivered(self) -> list[dict[str, Any]]:
        """Each event answered 2xx, once (the first time), in arrival order."""
        seen: dict[str, dict[str, Any]] = {}
        with self._lock:
            for delivery in self.deliveries:
                if delivery.status < 300 and delivery.event_id not in seen:
                    seen[delivery.event_id] = delivery.event
        return list(seen.values())

    def unsigned(self) -> list[Delivery]:
        with self._lock:
            return [d for d in self.deliveries if not d.signed]

    def close(self) -> None:
        self._server.close()


class MakeRun:
    """`make run`, as a user runs it (tests/support/processes.py), configured as
    the stack is (jwt, the same issuer and origin, webhooks to its own
    receiver), on a free port."""

    def __init__(self, project: Path, environment: Mapping[str, str], log: Path) -> None:
        from tests.support import processes

        self.port = processes.free_port()
        self._log = log.open("w")
        self.process = subprocess.Popen(
            ["make", "--no-print-directory", "run", f"PORT={self.port}", f"HOST={HOST}"],
            cwd=project,
            env=processes.command_env(log.parent, **environment),
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            preexec_fn=processes.ctrl_c_stops,
        )
        try:
            processes.wait_listening(self.port, self.process)
        except AssertionError as exc:
            raise RuntimeError(f"make run did not start ({exc}): see {log}") from None

    def request(
        self, method: str, path: str, headers: Mapping[str, str], body: Optional[bytes]
    ) -> tuple[int, dict[str, str], bytes]:
        import http.client

        connection = http.client.HTTPConnection(HOST, self.port, timeout=30)
        try:
            connection.request(method, path, body=body, headers=dict(headers))
            answer = connection.getresponse()
            return answer.status, {k.lower(): v for k, v in answer.getheaders()}, answer.read()
        finally:
            connection.close()

    def stop(self) -> None:
        """The process group make leads: make, and the server it started."""
        from tests.support import processes

        processes.stop(self.process)
        self._log.close()
