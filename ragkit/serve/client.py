"""The client side of ``ragkit serve``: find the server of an index, ask it a query (stdlib ``http.client``,
nothing heavy imported). A server with tokens is asked only when ``RAGKIT_TOKEN`` holds one (sent as a bearer
token); without it the query is answered in process, as if no server ran."""

from __future__ import annotations

import http.client
import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ragkit import errors
from ragkit.serve import PORT_FILE, TOKEN_VARIABLE

HEALTH_TIMEOUT = 0.2  # seconds the server has to answer its health check before a query runs in process


def server_for(index_dir: Path) -> dict[str, Any] | None:
    """Where the server of ``index_dir`` listens, if one runs and answers ``/healthz`` in time; else None."""
    try:
        info = json.loads((index_dir / PORT_FILE).read_text())
        os.kill(int(info["pid"]), 0)  # a server killed without cleaning up leaves its file behind
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if info.get("auth") and not os.environ.get(TOKEN_VARIABLE):
        return None  # its answers need a token
    try:
        con = http.client.HTTPConnection(_address(info["host"]), int(info["port"]), timeout=HEALTH_TIMEOUT)
        con.request("GET", "/healthz")
        ok = con.getresponse().status == 200
        con.close()
    except (OSError, http.client.HTTPException):
        return None
    return info if ok else None


def remote_query(
    info: dict[str, Any], text: str, cfg, explain: bool = False
) -> tuple[dict[str, Any], Exception | None]:
    """The server's ``ragkit.query/1`` object for ``text`` under ``cfg`` (a QueryConfig), and the error that
    kept the answer from being written (as in process), if any. A server error is raised as its ragkit error."""
    body = json.dumps({"query": text, "config": asdict(cfg), "explain": explain}).encode()
    headers = {"Content-Type": "application/json"}
    if info.get("auth") and os.environ.get(TOKEN_VARIABLE):
        headers["Authorization"] = f"Bearer {os.environ[TOKEN_VARIABLE].strip()}"
    con = http.client.HTTPConnection(_address(info["host"]), int(info["port"]))  # no timeout: answers take seconds
    try:
        con.request("POST", "/v1/query", body=body, headers=headers)
        resp = con.getresponse()
        data = resp.read()
        answer_error = resp.getheader("X-Ragkit-Answer-Error")
    finally:
        con.close()
    obj = json.loads(data)
    if resp.status != 200:
        raise rebuild_error(obj.get("error") or {"message": data.decode(errors="replace")})
    failed = rebuild_error(json.loads(answer_error)) if answer_error else None
    return obj, failed


def rebuild_error(err: dict[str, Any]) -> errors.RagkitError:
    """The ragkit error a server reported (its type when known, else one with the same exit code)."""
    cls = getattr(errors, str(err.get("type")), None)
    if not (isinstance(cls, type) and issubclass(cls, errors.RagkitError)):
        cls = type("ServerError", (errors.RagkitError,), {"exit_code": int(err.get("code") or 1)})
    exc = cls(str(err.get("message", "server error")), hint=err.get("hint"))
    return exc


def _address(host: str) -> str:
    """Where to connect for a server listening on ``host`` (every address: this machine's loopback)."""
    return {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
