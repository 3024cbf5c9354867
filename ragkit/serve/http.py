"""The HTTP server: FastAPI on uvicorn, one warm index.

    POST /v1/query            {"query", "k", "strategy", "filters", "answer", "explain"} → ragkit.query/1
    GET  /v1/stats            what ``ragkit stats --json`` prints
    GET  /v1/documents/{id}   a document's fields and text, chunk by chunk with lines (and pages)
    GET  /v1/sections/{id}    a section's place and its own text
    GET  /healthz             {"status": "ok", "index", "run"}
    GET  /docs                OpenAPI documentation

Errors are JSON, ``{"error": {"code", "type", "message", "hint"}}``, with the CLI's exit code as ``code``.
Queries run one at a time (a reader's caches and its DuckDB connection are not shared between threads); the
reader is reopened when a new indexing run has been committed, so a server never answers from a stale run.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel, Field

from ragkit import __version__, api
from ragkit.config import QueryConfig, load_config, override
from ragkit.errors import BadQuery, IndexBusy, IndexNotFound, RagkitError, UnknownId
from ragkit.render import result_dict
from ragkit.serve import PORT_FILE
from ragkit.serve.served import Served
from ragkit.store import remote

STATUS = {UnknownId: 404, IndexNotFound: 404, IndexBusy: 409, BadQuery: 400}


def status_of(exc: RagkitError) -> int:
    for cls, status in STATUS.items():
        if isinstance(exc, cls):
            return status
    return 400 if exc.exit_code in (2, 6, 8) else 500


def error_body(exc: RagkitError) -> dict[str, Any]:
    return {"error": {"code": exc.exit_code, "type": type(exc).__name__, "message": exc.message, "hint": exc.hint}}


def dumps(obj: Any) -> bytes:
    """JSON as ``ragkit query --json`` writes it (a client printing it again gives the same bytes)."""
    return json.dumps(obj, ensure_ascii=False, default=str).encode()


class QueryRequest(BaseModel):
    query: str = Field(description="The question.")
    k: int | None = Field(None, description="Number of passages (default 10, or ragkit.toml's).")
    strategy: str | None = Field(
        None, description="auto (default) | naive | lexical | hybrid | local | global | light | hippo | hierarchical"
    )
    filters: dict[str, str] = Field(
        default_factory=dict, description="doc_type, collection, path, date_from, date_to, metadata keys"
    )
    answer: bool = Field(False, description="Also answer from the passages (answer_mode: auto | extract | generate).")
    answer_mode: str | None = Field(None, description="auto (default) | extract (quotes) | generate (checked).")
    rerank_model: str | None = Field(None, description="A rerank model spec (turns --rerank cross on).")
    model: str | None = Field(None, description="The generate model spec for the answer.")
    explain: bool = Field(False, description="Include every passage's rerank features.")
    config: dict[str, Any] | None = Field(
        None, description="A whole QueryConfig (what `ragkit query` sends); the fields above are ignored then."
    )


def create_app(served: Served):
    app = FastAPI(
        title="ragkit",
        version=__version__,
        description=f"Retrieval over the index {served.index_dir} (schema ragkit.query/1).",
    )

    @app.exception_handler(RagkitError)
    def ragkit_error(request: Request, exc: RagkitError):
        return JSONResponse(error_body(exc), status_code=status_of(exc))

    @app.exception_handler(RequestValidationError)
    def bad_request(request: Request, exc: RequestValidationError):
        problems = "; ".join(f"{'.'.join(map(str, e['loc'][1:])) or 'body'}: {e['msg']}" for e in exc.errors())
        return JSONResponse(error_body(BadQuery(f"bad request: {problems}")), status_code=422)

    def answer_json(obj: Any) -> Response:
        return Response(dumps(obj), media_type="application/json")

    @app.get("/healthz")
    def healthz():
        reader = served.reader()
        return {"status": "ok", "index": remote.display(served.index_dir), "run": reader.manifest["last_run"]["id"]}

    @app.post("/v1/query")
    def query(req: QueryRequest):
        if req.config is not None:
            try:
                cfg = QueryConfig(**req.config)
            except TypeError as exc:  # (a value out of its choices is BadQuery already)
                raise BadQuery(f"config: {exc}") from exc
        else:
            _, cfg = load_config(index_dir=served.index_dir)
            cfg = override(
                cfg,
                k=req.k,
                strategy=req.strategy,
                filters={**cfg.filters, **req.filters},
                answer=req.answer or None,
                answer_mode=req.answer_mode,
                rerank="cross" if req.rerank_model else None,
                rerank_model=req.rerank_model,
                model=req.model,
            )
        failed = None
        with served.lock:
            reader = served.reader()
            result = api.query(reader, req.query, cfg)
            if cfg.answer:
                failed = api.answer_into(result, cfg, reader=reader)
        response = answer_json(result_dict(result, req.explain))
        if failed is not None:  # the passages are there; the client exits as `ragkit query` would
            response.headers["X-Ragkit-Answer-Error"] = json.dumps(error_body(failed)["error"])
        return response

    @app.get("/v1/stats")
    def stats():
        with served.lock:
            return answer_json(api.stats(served.reader()))

    @app.get("/v1/documents/{document_id}")
    def document(document_id: str):
        return answer_json(served.find("document", document_id))

    @app.get("/v1/sections/{section_id}")
    def section(section_id: str):
        return answer_json(served.find("section", section_id))

    return app


def serve(index: str | None, host: str = "127.0.0.1", port: int = 8765, on_ready=None) -> None:
    """Serve until interrupted; ``server.json`` in the index folder says where, while it runs."""
    import uvicorn

    served = Served(index)
    served.reader()  # a missing index fails here, before anything listens
    served.warm()
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY on connections only then (without it every response waited
    # for the client's delayed ACK between its header and body writes: 44 ms per request)
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.bind((host, port))
    sock.listen(2048)  # connections wait in the backlog from now on, before uvicorn's loop starts
    bound = sock.getsockname()[1]
    config = uvicorn.Config(create_app(served), log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    port_file = served.index_dir / PORT_FILE
    info = {"pid": os.getpid(), "host": host, "port": bound, "url": f"http://{host}:{bound}", "started": time.time()}
    _write_port_file(port_file, info)
    if on_ready:
        on_ready(info)
    try:
        server.run(sockets=[sock])
    finally:
        try:
            if json.loads(port_file.read_text()).get("pid") == os.getpid():
                port_file.unlink()
        except (OSError, ValueError):
            pass


def _write_port_file(path: Path, info: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(info))
    os.replace(tmp, path)
