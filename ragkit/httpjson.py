"""JSON over HTTP to a model server (``http://host:port/v1``): keep-alive connections, timeouts, bounded retries
with backoff, server-sent events for streamed answers, and one typed error with a hint for every way a server
can fail (down, slow, a refused key, a wrong path, an answer that is not JSON).

Only the standard library: a one-shot query that asks a server pays no import.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from ragkit.errors import ModelUnavailable
from ragkit.modelspec import redact

RETRY_STATUS = {429, 500, 502, 503, 504}
BACKOFF = (0.25, 1.0)  # seconds before each retry


class InputTooLarge(ModelUnavailable):
    """The server refused a request as too large (a batch or a text over its limit): split or cut it."""


class Endpoint:
    """One model server. ``post`` and ``stream`` raise ``ModelUnavailable`` (or ``InputTooLarge``)."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 60.0, retries: int = 2):
        self.base_url = base_url.rstrip("/")
        parts = urlsplit(self.base_url)
        self.https = parts.scheme == "https"
        self.host, self.port = parts.hostname or "", parts.port or (443 if self.https else 80)
        self.prefix = parts.path.rstrip("/")
        self.timeout, self.retries = timeout, retries
        self.headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if api_key:
            self.headers["Authorization"] = f"Bearer {api_key}"
        self._local = threading.local()

    def _connection(self, fresh: bool = False) -> http.client.HTTPConnection:
        con = getattr(self._local, "con", None)
        if con is None or fresh:
            if con is not None:
                con.close()
            cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
            con = cls(self.host, self.port, timeout=self.timeout)
            self._local.con = con
        return con

    def post(self, path: str, body: dict[str, Any]) -> Any:
        """POST ``body`` to ``path`` (under the base URL) and return the JSON answer."""
        data = json.dumps(body).encode()
        for attempt in range(self.retries + 1):
            try:
                con = self._connection(fresh=attempt > 0)
                con.request("POST", self.prefix + path, body=data, headers=self.headers)
                resp = con.getresponse()
                raw = resp.read()
            except TimeoutError as exc:
                failure: ModelUnavailable = self._slow(path, exc)
            except (OSError, http.client.HTTPException) as exc:
                failure = self._unreachable(path, exc)
            else:
                if resp.status == 200:
                    return self._json(path, raw)
                failure = self._refused(path, resp.status, raw)
                if resp.status not in RETRY_STATUS:
                    raise failure
            if attempt < self.retries:
                time.sleep(BACKOFF[min(attempt, len(BACKOFF) - 1)])
        raise failure

    def stream(self, path: str, body: dict[str, Any]) -> Iterator[dict[str, Any]]:
        """POST a streamed request and yield each server-sent event's JSON until ``[DONE]``; a connection of
        its own, closed when the caller stops reading (a client that disconnects stops the generation)."""
        cls = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
        con = cls(self.host, self.port, timeout=self.timeout)
        try:
            try:
                con.request(
                    "POST",
                    self.prefix + path,
                    body=json.dumps(body).encode(),
                    headers={**self.headers, "Accept": "text/event-stream"},
                )
                resp = con.getresponse()
            except TimeoutError as exc:
                raise self._slow(path, exc) from None
            except (OSError, http.client.HTTPException) as exc:
                raise self._unreachable(path, exc) from None
            if resp.status != 200:
                raise self._refused(path, resp.status, resp.read())
            yield from self._events(path, resp)
        finally:
            con.close()

    def _events(self, path: str, resp: http.client.HTTPResponse) -> Iterator[dict[str, Any]]:
        try:
            for line in resp:
                line = line.strip()
                if not line.startswith(b"data:"):
                    continue
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    return
                yield self._json(path, payload)
        except TimeoutError as exc:
            raise self._slow(path, exc) from None
        except (OSError, http.client.HTTPException) as exc:
            raise self._unreachable(path, exc) from None

    # ------------------------------------------------------------ failures

    def _json(self, path: str, raw: bytes) -> Any:
        try:
            return json.loads(raw)
        except ValueError:
            text = raw[:160].decode("utf-8", "replace").replace("\n", " ")
            raise ModelUnavailable(
                f"{self.base_url}{path} answered with something that is not JSON: {redact(text)!r}",
                hint="Is the URL the server's OpenAI-compatible base (…/v1)? An HTML page is often a proxy's error.",
            ) from None

    def _unreachable(self, path: str, exc: Exception) -> ModelUnavailable:
        return ModelUnavailable(
            f"cannot reach the model server {self.base_url}{path}: {type(exc).__name__}: {exc}",
            hint="Is the server running and the URL right (http://host:port/v1#model)?",
        )

    def _slow(self, path: str, exc: Exception) -> ModelUnavailable:
        return ModelUnavailable(
            f"the model server {self.base_url}{path} did not answer within {self.timeout:g} s",
            hint="The server may be overloaded or still loading its model; try again.",
        )

    def _refused(self, path: str, status: int, raw: bytes) -> ModelUnavailable:
        text = redact(raw[:300].decode("utf-8", "replace").replace("\n", " "))
        message = f"the model server {self.base_url}{path} answered HTTP {status}: {text}"
        if status == 413 or (status in (400, 422, 500) and _too_large(text)):
            return InputTooLarge(message)
        hints = {
            401: "The server refused the API key: check the variable [models.keys] names in ragkit.toml.",
            403: "The server refused the API key: check the variable [models.keys] names in ragkit.toml.",
            404: "Does the server serve this API, and this model? (`ragkit models` probes every configured model.)",
        }
        return ModelUnavailable(message, hint=hints.get(status, "See the server's log."))


def _too_large(text: str) -> bool:
    low = text.lower()
    return any(w in low for w in ("too large", "too long", "too many", "exceed", "maximum context", "batch size"))
