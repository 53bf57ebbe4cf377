"""What every answer of ``scoi serve`` goes through: the Host and Origin checks of a server
without a token, the security headers, and the redaction of client-facing error texts.

A server without a token trusts whoever can reach it, so it must be reachable by name
from this machine only: a page on another site that makes its own name resolve to
127.0.0.1 (DNS rebinding) sends ``Host: its.name``, and a page on another origin that
posts to 127.0.0.1 sends its own ``Origin``; both are refused here, before any route.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from scoi.service.config import is_loopback

#: Sent with every answer: no framing (clickjacking), the page's own files only, no sniffing.
SECURITY_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
                               "frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
#: Methods that change state: a cross-origin one is refused by a server without a token.
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})

_URL = re.compile(r"\b[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]*[^\s'\"<>:.,;)]")
_PATH = re.compile(r"(?<![\w./~-])(?:~|\.{1,2})?/(?!api/)[^\s'\"<>,;()]*[^\s'\"<>,;():.]")


def redact(message: str) -> str:
    """``message`` without URLs and file paths (backend URLs, model files, the server's
    folders), which the server's log keeps and clients never see."""
    return _PATH.sub("<path>", _URL.sub("<url>", message))


def host_name(host: str) -> str:
    """The name part of a Host header or netloc (``[::1]:8765`` -> ``::1``)."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1:].partition("]")[0]
    return host.rpartition(":")[0] if host.count(":") == 1 else host


def local_host(host: str) -> bool:
    """Whether a Host header names this machine (127.x, ::1, localhost), with any port."""
    name = host_name(host)
    return bool(name) and is_loopback(name)


class Guard:
    """ASGI middleware: the security headers on every answer; without a token, only a
    loopback Host, and on state-changing requests an Origin (when sent) equal to it."""

    def __init__(self, app: Any, *, check_host: bool) -> None:
        self.app, self.check_host = app, check_host

    async def __call__(self, scope: dict, receive: Callable, send: Callable) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: dict) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra = [(k.lower().encode(), v.encode()) for k, v in SECURITY_HEADERS.items()
                         if k.lower().encode() not in present]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        refusal = self.refusal(scope) if self.check_host else None
        if refusal is not None:
            await send_json(send_with_headers, *refusal)
            return
        await self.app(scope, receive, send_with_headers)

    @staticmethod
    def refusal(scope: dict) -> tuple[int, dict[str, str]] | None:
        """(status, body) when the request's Host or Origin is not this machine's."""
        headers = dict(scope.get("headers") or [])
        host = headers.get(b"host", b"").decode("latin-1")
        if not local_host(host):
            return 421, {"error": f"Host {host[:80]!r} is not this server's: a server without SCOI_SERVE_TOKEN "
                                  "answers only to 127.0.0.1, localhost or [::1]"}
        origin = headers.get(b"origin")
        if scope.get("method") in UNSAFE_METHODS and origin is not None:
            text = origin.decode("latin-1")
            parts = urlsplit(text)
            if parts.scheme not in ("http", "https") or parts.netloc.lower() != host.strip().lower():
                return 403, {"error": f"Origin {text[:80]!r} is not this server's ({host[:80]}): a server "
                                      "without SCOI_SERVE_TOKEN takes changes from its own page only"}
        return None


async def send_json(send: Callable, status: int, body: dict) -> None:
    """A whole JSON answer, sent from middleware (before or instead of the app)."""
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]})
    await send({"type": "http.response.body", "body": data})
