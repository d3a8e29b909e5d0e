"""What the rehearsal runs beside the stack, on 127.0.0.1: TLS, the issuer, webhook
receivers, and `make run` for the answers to compare with.

The template accepts only https URLs for the issuer's keys (JwksUrl) and the
webhook (WebhookUrl), so both are served over TLS with a certificate made for
127.0.0.1, which the functions and `make run` trust through SSL_CERT_FILE.
"""

from __future__ import annotations

import datetime
import functools
import http.server
import ipaddress
import json
import ssl
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, Optional

from tests.support import receiver, tokens
from tests.support.receiver import verify

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


def _over_tls(server: http.server.HTTPServer, tls: tuple[Path, Path]) -> str:
    """`server` answering over TLS, with the certificate made above; its URL."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(str(tls[0]), str(tls[1]))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    return f"https://{HOST}:{server.server_address[1]}"


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
        files = functools.partial(_Files, directory=str(root))
        self._server = http.server.ThreadingHTTPServer((HOST, 0), files)
        self.url = _over_tls(self._server, tls)
        self.jwks_url = self.url + "/" + ISSUER_PATH
        threading.Thread(target=self._server.serve_forever, daemon=True).start()

    def token(self, actor: str, groups: tuple[str, ...] = ()) -> str:
        """Signed RS256, valid for an hour: the whole mutation sweep, on a busy machine."""
        import jwt

        claims = tokens.claims(actor, groups, iss=self.url, exp=int(time.time()) + 3600)
        return jwt.encode(claims, self._key, algorithm="RS256", headers={"kid": KEY_ID})

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Receiver(receiver.Receiver):
    """The tests' webhook receiver (tests/support/receiver.py: every request
    recorded), over TLS and started; `refuse` says which deliveries to answer
    500 (the first attempt at an event, say), the others are answered 204."""

    def __init__(
        self,
        secret: str,
        tls: tuple[Path, Path],
        refuse: Callable[[dict[str, Any], int], bool] = lambda event, attempt: False,
    ) -> None:
        super().__init__(secret)
        self._refuse = refuse
        self.url = _over_tls(self.server, tls) + "/hooks"
        self.__enter__()

    def status(self, headers: dict[str, str], body: bytes, path: str) -> int:
        event_id = headers.get("webhook-id", "")
        attempt = sum(1 for got in self.received if got.headers.get("webhook-id") == event_id)
        try:
            event = json.loads(body)
        except ValueError:
            event = {}
        return 500 if self._refuse(event, attempt) else 204

    def delivered(self) -> list[dict[str, Any]]:
        """Each event answered 2xx, once (the first time), in arrival order."""
        seen: dict[str, dict[str, Any]] = {}
        with self.lock:
            for got in self.received:
                if got.status < 300:
                    seen.setdefault(got.headers.get("webhook-id", ""), got.event)
        return list(seen.values())

    def unsigned(self) -> list[receiver.Received]:
        with self.lock:
            return [
                got
                for got in self.received
                if "webhook-id" not in got.headers or not verify(self.secret, got.headers, got.body)
            ]

    def close(self) -> None:
        self.__exit__()


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
