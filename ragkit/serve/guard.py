"""The door of ``ragkit serve`` (an ASGI middleware in front of every route, MCP's included): the request body's
size, the bearer token, the token's rate and its requests in flight, before anything else runs.

- body: over ``limits.body_bytes`` (by ``Content-Length``, or counted as a streamed body arrives) → 413;
- token (when the server has tokens): none or an unknown one → 401; the request then carries its ``Caller``
  (``scope["ragkit.caller"]``), which the routes hand to the operations;
- per token: more than ``rate_per_minute`` requests in the last minute, or ``in_flight`` at once → 429.

Errors have the server's JSON shape ``{"error": {"code", "type", "message", "hint"}}``. ``OPEN`` paths (health,
the API documentation) need no token and tell nothing about the documents.
"""

from __future__ import annotations

import json
import re
import time
from collections import defaultdict, deque
from typing import Any

from ragkit.errors import (
    AccessDenied,
    BadQuery,
    Forbidden,
    IndexBusy,
    IndexNotFound,
    OverLimit,
    RagkitError,
    RateLimited,
    UnknownId,
)
from ragkit.serve.access import Access, Caller, Limits

OPEN = ("/healthz", "/docs", "/docs/oauth2-redirect", "/openapi.json", "/", "/web/app.js", "/web/app.css")
CALLER = "ragkit.caller"
DRAIN_BYTES = 64 << 20  # a body over the limit is read (and dropped) up to this size before the 413
STATUS = {  # subclasses before their parents
    UnknownId: 404,
    IndexNotFound: 404,
    IndexBusy: 409,
    BadQuery: 400,
    Forbidden: 403,
    AccessDenied: 401,
    RateLimited: 429,
    OverLimit: 413,
}


def status_of(exc: RagkitError) -> int:
    """The HTTP status of a ragkit error."""
    for cls, status in STATUS.items():
        if isinstance(exc, cls):
            return status
    return 400 if exc.exit_code in (2, 6, 8) else 500


_URI = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"`]+", re.I)
_ABSOLUTE = re.compile(r"(?<![\w/.:{}-])/(?!v1/)(?:[^\s/'\"`:;,(){}]+/)+[^\s/'\"`:;,(){}]*")


def private(text: str | None) -> str | None:
    """``text`` with every absolute path and URI cut to its last part: a server never tells who asks where its
    index, its cache or its models live (``/srv/idx/store.1.duckdb`` → ``store.1.duckdb``)."""
    if not text:
        return text

    def last(m: re.Match) -> str:
        tail = m.group(0).rstrip("/").rsplit("/", 1)[-1]
        return tail or "…"

    return _ABSOLUTE.sub(last, _URI.sub(last, text))


def error_fields(exc: RagkitError) -> dict[str, Any]:
    """A ragkit error as the ``error`` object of the JSON error shape, paths cut (``private``)."""
    return {
        "code": exc.exit_code,
        "type": type(exc).__name__,
        "message": private(exc.message),
        "hint": private(exc.hint),
    }


def error_body(exc: RagkitError) -> dict[str, Any]:
    return {"error": error_fields(exc)}


class Guard:
    """ASGI middleware: body size, token, rate and in-flight limits (see the module)."""

    def __init__(self, app, access: Access | None, limits: Limits):
        self.app, self.access, self.limits = app, access, limits
        self.recent: dict[str, deque[float]] = defaultdict(deque)  # token name → its requests' times, last minute
        self.running: dict[str, int] = defaultdict(int)  # token name → its requests in flight

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        name = None
        try:
            receive = await self._body(scope, receive)
            caller = self._caller(scope)
            scope[CALLER] = caller
            if caller.name is not None:
                self._admit(caller.name)
                name = caller.name
        except RagkitError as exc:
            await _refuse(send, exc)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            if name is not None:
                self.running[name] -= 1

    async def _body(self, scope, receive):
        """The request's body read whole (within the limit) and handed on as it came. A body over the limit is
        read on (up to ``DRAIN_BYTES``, kept nowhere) so that the client, still sending, gets the 413."""
        limit = self.limits.body_bytes
        declared = dict(scope.get("headers") or []).get(b"content-length")
        messages, size, over = [], 0, declared is not None and declared.isdigit() and int(declared) > limit
        while True:
            message = await receive()
            if message["type"] != "http.request":
                messages.append(message)
                break
            size += len(message.get("body", b""))
            over = over or size > limit
            if not over:
                messages.append(message)
            if not message.get("more_body") or size > DRAIN_BYTES:
                break
        if over:
            raise OverLimit(
                f"the request body has {int(declared) if declared else size} bytes, over this server's {limit}"
            )

        async def replay():
            return messages.pop(0) if messages else await receive()

        return replay

    def _caller(self, scope) -> Caller:
        if self.access is None:
            return Caller(limits=self.limits)
        if scope.get("path", "") in OPEN:
            return Caller(name=None, readable=(), limits=self.limits)  # (reads nothing)
        headers = dict(scope.get("headers") or [])
        token = self.access.authenticate(headers.get(b"authorization", b"").decode("latin-1"))
        return Caller(token.name, token.readable, self.limits, token.pseudonym)

    def _admit(self, name: str) -> None:
        now = time.monotonic()
        recent = self.recent[name]
        while recent and recent[0] <= now - 60:
            recent.popleft()
        if len(recent) >= self.limits.rate_per_minute:
            wait = max(1, int(recent[0] + 60 - now) + 1)
            exc = RateLimited(
                f"token {name!r}: over its {self.limits.rate_per_minute} requests a minute",
                hint=f"Ask again in {wait} s.",
            )
            exc.retry_after = wait
            raise exc
        if self.running[name] >= self.limits.in_flight:
            raise RateLimited(f"token {name!r}: {self.running[name]} requests are running, its limit")
        recent.append(now)
        self.running[name] += 1


async def _refuse(send, exc: RagkitError) -> None:
    status = status_of(exc)
    headers = [(b"content-type", b"application/json")]
    if status == 401:
        headers.append((b"www-authenticate", b"Bearer"))
    if status == 429:
        headers.append((b"retry-after", str(getattr(exc, "retry_after", 1)).encode()))
    body = json.dumps(error_body(exc)).encode()
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
