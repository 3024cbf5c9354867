"""The HTTP server: FastAPI on uvicorn, one index, answered by worker processes (workers.py).

    POST /v1/query                       {"query", "k", "strategy", "filters", "answer", "explain", …} → ragkit.query/1
                                         (the request's shape: schema.py; outside it 422)
                                         ("stream": true: JSON lines {"text"} as the answer is written, then it)
    GET  /v1/stats                       what ``ragkit stats --json`` prints (a token: its collections' counts)
    GET  /v1/documents                   the documents matching ?collection=&doc_type=&path=&…&limit=&offset=
    GET  /v1/documents/{id or path}      a document's fields and text, chunk by chunk with lines (and pages)
    GET  /v1/documents/{id}/text         ?start=&end=: the chunks covering those lines
    GET  /v1/documents/{id}/outline      its sections in reading order
    GET  /v1/documents/{id}/pages/{n}.png a PDF's page as a picture (?mark=: the quoted text marked on it)
    GET  /v1/sections/{id}               a section's place and its own text
    POST /v1/feedback                    {"query_id", "rank", "good" | "grade"}: feedback on a passage or the answer
    GET  /                               the search page (web.py; its files under /web/)
    POST /mcp                            MCP over streamable HTTP (stateless, JSON responses): the same tools as
                                         ``ragkit serve --mcp`` (mcp_tools.py)
    GET  /healthz                        {"status": "ok", "index" (its name, never its path), "run", "workers", "auth"}
    GET  /docs                           OpenAPI documentation

Errors are JSON, ``{"error": {"code", "type", "message", "hint"}}``, with the CLI's exit code as ``code`` (HTTP
400, 401, 403, 404, 409, 413, 422, 429). Every request passes the ``Guard`` first (guard.py: body size, token,
rate); with tokens, a request reads its token's collections only (ops.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import socket
import time
from pathlib import Path
from typing import Annotated, Any

from fastapi import FastAPI, Query, Request
from fastapi import Path as PathParam
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, model_validator

from ragkit import __version__, library
from ragkit.config import resolve_index_dir
from ragkit.errors import BadQuery, RagkitError
from ragkit.serve import EARLY, PORT_FILE, mcp_tools, web
from ragkit.serve.access import Access, Caller, Limits, check_bind, load_tokens
from ragkit.serve.guard import CALLER, Guard, error_body, status_of
from ragkit.serve.schema import QUERY_RESPONSES, QueryRequest, for_index, whole
from ragkit.serve.workers import WorkerPool
from ragkit.store import remote
from ragkit.store.browse import LIST_LIMIT, MAX_OFFSET
from ragkit.store.manifest import read_manifest

log = logging.getLogger("ragkit.serve")


class FeedbackRequest(BaseModel):
    """Feedback on a passage (rank) or on the answer (no rank): grade or good, at least one of them."""

    model_config = ConfigDict(
        strict=True,  # a rating of 0 or "no" is no boolean: refused, as the schema says
        json_schema_extra={
            "anyOf": [
                {"required": ["grade"], "properties": {"grade": {"type": "integer"}}},
                {"required": ["good"], "properties": {"good": {"type": "boolean"}}},
            ]
        },
    )

    query_id: str = Field(min_length=1, description="The query_id of the result.")
    rank: whole(1) | None = Field(None, description="The passage's rank; none: the answer.")
    grade: whole(0, 3) | None = Field(None, description="0 (wrong) … 3 (exactly right); or give good.")
    good: bool | None = Field(None, description="true: good (3), false: bad (0).")

    @model_validator(mode="after")
    def _rated(self) -> FeedbackRequest:
        if self.grade is None and self.good is None:
            raise ValueError('say "grade" (0–3) or "good" (true/false)')
        return self


def create_app(pool: WorkerPool, index_dir: Path, access: Access | None, limits: Limits, host: str = "127.0.0.1"):
    """The FastAPI app: routes answered by ``pool``, MCP at /mcp, everything behind the Guard."""
    tools = mcp_tools.build(pool.run, Caller(limits=limits))
    mcp_app = tools.streamable_http_app(
        streamable_http_path="/mcp",
        json_response=True,
        stateless_http=True,
        max_request_body_size=limits.body_bytes,
        transport_security=mcp_tools.security(host, protected=access is not None),
        host=host,
    )

    @contextlib.asynccontextmanager
    async def lifespan(app):
        async with tools.session_manager.run():
            yield

    app = FastAPI(
        title="ragkit",
        version=__version__,
        description=f"Retrieval over the index {remote.name_of(index_dir)} (schema ragkit.query/1).",
        lifespan=lifespan,
    )
    app.router.routes.extend(mcp_app.routes)

    def openapi() -> dict[str, Any]:  # the schema as this index takes it, made once
        first = app.openapi_schema is None
        schema = FastAPI.openapi(app)
        return for_index(schema, index_dir) if first else schema

    app.openapi = openapi  # type: ignore[method-assign]
    _errors(app)
    _routes(app, pool, index_dir, access, limits)
    return Guard(app, access, limits)


def _errors(app: FastAPI) -> None:
    """Every error as ``{"error": {"code", "type", "message", "hint"}}``."""

    @app.exception_handler(RagkitError)
    def ragkit_error(request: Request, exc: RagkitError):
        return JSONResponse(error_body(exc), status_code=status_of(exc))

    @app.exception_handler(RequestValidationError)
    def bad_request(request: Request, exc: RequestValidationError):
        problems = "; ".join(f"{'.'.join(map(str, e['loc'][1:])) or 'body'}: {e['msg']}" for e in exc.errors())
        return JSONResponse(error_body(BadQuery(f"bad request: {problems}")), status_code=422)


def _routes(app: FastAPI, pool: WorkerPool, index_dir: Path, access: Access | None, limits: Limits) -> None:
    """The routes of the module's table, each an operation of a worker (health answers at once)."""

    def caller(request: Request) -> Caller:
        return request.scope.get(CALLER) or Caller(limits=limits)

    async def run(request: Request, op: str, args: dict[str, Any]) -> Response:
        return answer_json(await pool.run(op, args, caller(request)))

    @app.get("/healthz")
    def healthz():
        remote.refresh(index_dir, 1.0)
        run_id = read_manifest(index_dir).run_id
        return {
            "status": "ok",
            "index": remote.name_of(index_dir),
            "run": run_id,
            "workers": pool.size,
            "auth": bool(access),
        }

    @app.post("/v1/query", responses=QUERY_RESPONSES)
    async def query(req: QueryRequest, request: Request):
        args = {**req.args(), "encode": True}
        if req.stream:
            return StreamingResponse(streamed(pool, args, caller(request)), media_type="application/x-ndjson")
        out = await pool.run("query", args, caller(request), request.is_disconnected)
        response = Response(out["result"], media_type="application/json")
        if out["answer_error"] is not None:  # the passages are there; the client exits as `ragkit query` would
            response.headers["X-Ragkit-Answer-Error"] = json.dumps(out["answer_error"])
        return response

    @app.get("/v1/stats")
    async def stats(request: Request):
        return await run(request, "stats", {})

    @app.get("/v1/documents")
    async def documents(
        request: Request,
        limit: Annotated[int, Query(ge=1, le=LIST_LIMIT)] = 50,
        offset: Annotated[int, Query(ge=0, le=MAX_OFFSET)] = 0,
    ):
        filters = {k: v for k, v in request.query_params.items() if k not in ("limit", "offset")}
        return await run(request, "documents", {"filters": filters, "limit": limit, "offset": offset})

    @app.get("/v1/documents/{key:path}/text")
    async def document_text(
        request: Request,
        key: str,
        start: Annotated[int, Query(ge=1, description="The first line (1-based).")] = 1,
        end: Annotated[
            int | None, Query(ge=1, description="The last line (inclusive; none: to the end; before start: none).")
        ] = None,
    ):
        return await run(request, "document", {"key": key, "start": start, "end": end})

    @app.get("/v1/documents/{key:path}/outline")
    async def outline(request: Request, key: str):
        return await run(request, "outline", {"key": key})

    @app.get("/v1/documents/{key:path}/pages/{number}.png")
    async def page(
        request: Request,
        key: str,
        number: Annotated[int, PathParam(ge=1, description="The page (1-based).")],
        mark: str = "",
        query_id: str | None = None,
        rank: int | None = None,
    ):
        args = {"key": key, "number": number, "mark": mark[:2000], "query_id": query_id, "rank": rank}
        data = await pool.run("page", args, caller(request))
        return Response(data, media_type="image/png", headers={"Cache-Control": "private, max-age=3600"})

    @app.get("/v1/documents/{key:path}")
    async def document(request: Request, key: str, query_id: str | None = None, rank: int | None = None):
        return await run(request, "document", {"key": key, "query_id": query_id, "rank": rank})

    @app.post("/v1/feedback")
    async def feedback(req: FeedbackRequest, request: Request):
        args = {k: v for k, v in req.model_dump().items() if v is not None}
        return await run(request, "feedback", {**args, "source": "http"})

    @app.get("/v1/sections/{section_id}")
    async def section(request: Request, section_id: str, query_id: str | None = None, rank: int | None = None):
        return await run(request, "section", {"id": section_id, "query_id": query_id, "rank": rank})

    @app.get("/", include_in_schema=False)
    @app.get("/web/app.js", include_in_schema=False)
    @app.get("/web/app.css", include_in_schema=False)
    def search_page(request: Request):
        data, media = web.page(request.url.path)
        return Response(data, media_type=media, headers=web.HEADERS)


async def streamed(pool: WorkerPool, args: dict[str, Any], who: Caller):
    """A query's JSON lines: the answer's text as it is written, then the result (or the error); when the
    client hangs up, the response stops and the worker's model with it."""
    lines: asyncio.Queue = asyncio.Queue()

    async def produce() -> None:
        try:
            out = await pool.run("query", args, who, on_text=lambda piece: lines.put_nowait(_line(piece)))
            lines.put_nowait(out["result"])
            if out["answer_error"] is not None:
                lines.put_nowait(dumps({"answer_error": out["answer_error"]}))
        except RagkitError as exc:
            lines.put_nowait(dumps(error_body(exc)))
        lines.put_nowait(None)

    task = asyncio.ensure_future(produce())
    try:
        while (line := await lines.get()) is not None:
            yield line + b"\n"
    finally:
        if not task.done():
            task.cancel()  # the client is gone: WorkerPool.run tells the worker to stop


def _line(piece: str) -> bytes:
    """A streamed piece as its JSON line: the passages sent early as they are, answer text as ``{"text"}``."""
    return piece[len(EARLY) :].encode() if piece.startswith(EARLY) else dumps({"text": piece})


def answer_json(obj: Any) -> Response:
    return Response(dumps(obj), media_type="application/json")


def dumps(obj: Any) -> bytes:
    """JSON as ``ragkit query --json`` writes it (a client printing it again gives the same bytes)."""
    return json.dumps(obj, ensure_ascii=False, default=str).encode()


def serve(
    index: str | None,
    host: str = "127.0.0.1",
    port: int = 8765,
    on_ready=None,
    tokens: str | Path | None = None,
    workers: int = 2,
) -> None:
    """Serve until interrupted; ``server.json`` in the index folder says where, while it runs. ``tokens``: the
    tokens file (required beyond loopback); ``workers``: reader processes answering side by side."""
    import uvicorn

    access = load_tokens(tokens) if tokens else None
    check_bind(host, access)
    limits = access.limits if access else Limits()
    index_dir = resolve_index_dir(index)
    pool = WorkerPool(index, workers)
    pool.start()  # a missing index fails here, before anything listens
    port_file = index_dir / PORT_FILE
    try:
        # IPPROTO_TCP named: asyncio sets TCP_NODELAY on connections only then (without it every response waited
        # for the client's delayed ACK between its header and body writes: 44 ms per request)
        family = socket.AF_INET6 if ":" in host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.bind((host, port))
        sock.listen(2048)  # connections wait in the backlog from now on, before uvicorn's loop starts
        bound = sock.getsockname()[1]
        app = create_app(pool, index_dir, access, limits, host)
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", access_log=False))
        url = f"http://[{host}]:{bound}" if ":" in host else f"http://{host}:{bound}"
        info = {"pid": os.getpid(), "host": host, "port": bound, "url": url, "started": time.time()}
        info |= {"auth": access is not None, "workers": pool.pids()}
        _write_port_file(port_file, info)
        if on_ready:
            on_ready(info)
        server.run(sockets=[sock])
    finally:
        pool.close()
        with contextlib.suppress(RagkitError):
            library.flush_log(index_dir)  # an index on object storage: the queries of this server go up now
        try:
            if json.loads(port_file.read_text()).get("pid") == os.getpid():
                port_file.unlink()
        except (OSError, ValueError):
            pass


def _write_port_file(path: Path, info: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(info))
    os.replace(tmp, path)
