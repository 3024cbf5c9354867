"""The index as MCP tools (the official ``mcp`` SDK's ``MCPServer``): over stdio with ``ragkit serve --mcp``, and
over streamable HTTP at ``/mcp`` of ``ragkit serve`` (same tools, same names; over HTTP with the server's tokens
and scoping: a tool call reads its token's collections only).

Tools: ``search`` (passages with their source, section, lines and pages), ``answer`` (quoted, or written by the
generate model and checked), ``get_section`` (a section's own text), ``get_document`` (a document, or a line
range of it, by id or path), ``list_documents`` (filters, a page at a time), ``outline`` (a document's
sections) and ``stats``. Each runs an operation of ops.py: through the worker processes over HTTP, in this
process over stdio (one at a time; stdout carries the protocol, so nothing else is printed there).
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.transport_security import TransportSecuritySettings

from ragkit import __version__, library
from ragkit.errors import RagkitError
from ragkit.serve import ops
from ragkit.serve.access import Caller, is_loopback
from ragkit.serve.guard import CALLER

INSTRUCTIONS = (
    "Local retrieval over an indexed folder of documents. Call `search` with a question to get the "
    "best passages (each with its file, section breadcrumb and line span); `get_section` reads a "
    "whole section by id, `get_document` a document or a line range of it (by id or path), `outline` a "
    "document's sections; `list_documents` lists documents by filters; `answer` writes a short cited answer "
    "from the passages."
)
Runner = Callable[..., Awaitable[Any]]  # (operation, arguments, caller) → its result


def _passage(p: dict[str, Any]) -> dict[str, Any]:
    scanned = {"ocr": p["ocr"]} if "ocr" in p else {}  # read by OCR from a scan: the engine's confidence
    return scanned | {
        "rank": p["rank"],
        "score": p["score"],
        "source": p["document"]["path"],
        "title": p["document"]["title"],
        "collection": p["document"]["collection"],
        "section": p["section"],
        "section_id": p["section_id"],
        "lines": p["lines"],
        "pages": p["pages"],
        "text": p["text"],
        "document_id": p["document"]["id"],
        "chunk_ids": p["chunk_ids"],
    }


def _reported(fn):
    """Typed ragkit errors reach the client as the tool's error message (with the CLI's exit code); anything
    else is a crash the SDK reports without its text."""

    @functools.wraps(fn)
    async def wrapper(*args, **kwargs):
        try:
            return await fn(*args, **kwargs)
        except RagkitError as exc:
            raise ToolError(
                f"{exc.message} (ragkit error {exc.exit_code}" + (f"; hint: {exc.hint})" if exc.hint else ")")
            ) from exc

    return wrapper


def security(host: str, protected: bool) -> TransportSecuritySettings:
    """DNS-rebinding protection (Host and Origin checked) on loopback without tokens; off when tokens protect
    the server (a reverse proxy may send any Host)."""
    if protected or not is_loopback(host):
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    names = sorted({"127.0.0.1", "localhost", "[::1]", f"[{host}]" if ":" in host else host})
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{n}:*" for n in names],
        allowed_origins=[f"http://{n}:*" for n in names],
    )


def build(run: Runner, default: Caller) -> MCPServer:
    """The MCP server whose tools ``run`` the operations; a tool call's caller is its HTTP request's (the Guard
    put it there), else ``default`` (stdio: the index's owner)."""
    server = MCPServer(name="ragkit", version=__version__, instructions=INSTRUCTIONS)

    def caller(ctx: Context) -> Caller:
        request = ctx.request_context.request
        found = request.scope.get(CALLER) if request is not None and hasattr(request, "scope") else None
        return found or default

    _query_tools(server, run, caller)
    _reading_tools(server, run, caller)
    return server


def _query_tools(server: MCPServer, run: Runner, caller: Callable[[Context], Caller]) -> None:
    """search, answer, stats."""

    async def _query(ctx: Context, text: str, **fields) -> dict[str, Any]:
        out = await run("query", {"query": text, **fields}, caller(ctx))
        return out["result"]

    @server.tool()
    @_reported
    async def search(
        ctx: Context,
        query: str,
        k: int = 8,
        strategy: str = "auto",
        filters: dict[str, str] | None = None,
        rerank_model: str | None = None,
    ) -> dict:
        """The passages that best answer `query`, best first: text, source file, section breadcrumb, line span
        (and pages of a PDF). `strategy`: auto (default), hybrid, lexical, naive, hippo, local, global, light,
        hierarchical. `filters`: doc_type, collection, path (glob), date_from, date_to, front-matter keys.
        `rerank_model`: a rerank model spec (a folder, a .gguf file, http://host:port/v1#model)."""
        out = await _query(
            ctx, query, k=k, strategy=strategy, filters=filters or {}, rerank_model=rerank_model, source="mcp"
        )
        passages = [_passage(p) for p in out["passages"]]
        return {"query": query, "query_id": out["query_id"], "strategy": out["strategy"], "passages": passages}

    @server.tool()
    @_reported
    async def answer(
        ctx: Context, question: str, k: int = 6, strategy: str = "auto", mode: str = "auto", model: str | None = None
    ) -> dict:
        """An answer to `question` from the best passages, with the passages. `mode`: "extract" quotes the
        sentences that answer, with their lines and pages; "generate" has the generate model write it, every
        sentence checked against what it cites; "auto" (default) quotes unless a model other than the bundled
        one is configured. When the passages do not answer, it says so (`abstained`). `model`: a generate
        model spec (a .gguf file or http://host:port/v1#model)."""
        out = await run(
            "query",
            {"query": question, "k": k, "strategy": strategy, "answer": True, "answer_mode": mode, "model": model}
            | {"source": "mcp"},
            caller(ctx),
        )
        found = out["result"].get("answer") or {}
        keys = ("mode", "abstained", "confidence", "quotes", "sentences", "grounded", "replaced", "note", "citations")
        return {
            "question": question,
            "query_id": out["result"].get("query_id"),
            "answer": found.get("text"),
            "answer_error": out["result"].get("answer_error"),
            **{key: found.get(key) for key in keys},
            "passages": [_passage(p) for p in out["result"]["passages"]],
        }

    @server.tool()
    @_reported
    async def feedback(
        ctx: Context, query_id: str, rank: int | None = None, good: bool | None = None, grade: int | None = None
    ) -> dict:
        """Say whether passage `rank` of an earlier result (the `query_id` search and answer return) answered
        the question — or, without `rank`, whether its answer was right: `good` true/false, or `grade` 0 (wrong)
        … 3 (exactly right); one of them is required. ragkit learns its ranking from it."""
        args = {"query_id": query_id, "rank": rank, "good": good, "grade": grade, "source": "mcp"}
        return await run("feedback", {k: v for k, v in args.items() if v is not None}, caller(ctx))

    @server.tool()
    @_reported
    async def stats(ctx: Context) -> dict:
        """What the index holds: documents, sections, chunks, doc types, collections, size on disk (with a
        token: its collections' counts only)."""
        return await run("stats", {}, caller(ctx))


def _reading_tools(server: MCPServer, run: Runner, caller: Callable[[Context], Caller]) -> None:
    """get_section, get_document, list_documents, outline."""

    @server.tool()
    @_reported
    async def get_section(ctx: Context, section_id: str) -> dict:
        """A section's place (document, breadcrumb, line span) and its own text, by the id a passage names."""
        return await run("section", {"id": section_id}, caller(ctx))

    @server.tool()
    @_reported
    async def get_document(ctx: Context, document: str, start: int | None = None, end: int | None = None) -> dict:
        """A document by its id or path (or the end of its path, e.g. `policies/overtime.md`): its fields and
        text chunk by chunk with line spans. With `start`/`end` (1-based lines, inclusive) only the chunks that
        cover those lines."""
        return await run("document", {"key": document, "start": start, "end": end}, caller(ctx))

    @server.tool()
    @_reported
    async def list_documents(
        ctx: Context, filters: dict[str, str] | None = None, limit: int = 50, offset: int = 0
    ) -> dict:
        """The documents of the index by path, `limit` at a time from `offset`, with the total: id, path, title,
        doc_type, collection, language, line count. `filters`: doc_type, collection, path (glob), date_from,
        date_to, front-matter keys."""
        return await run("documents", {"filters": filters or {}, "limit": limit, "offset": offset}, caller(ctx))

    @server.tool()
    @_reported
    async def outline(ctx: Context, document: str) -> dict:
        """A document's sections in reading order (id, parent, heading, level, breadcrumb, line span), by its id
        or path; read one with `get_section`."""
        return await run("outline", {"key": document}, caller(ctx))


def serve_mcp(index: str | None) -> None:
    """``ragkit serve --mcp``: the tools over stdio, answered in this process."""
    state = ops.State(index)
    state.index()  # a missing index fails before the session starts
    state.warm()
    lock = threading.Lock()

    async def run(op: str, args: dict[str, Any], caller: Caller) -> Any:
        def call():
            with lock:
                return ops.run(state, op, args, caller)

        return await anyio.to_thread.run_sync(call)

    try:
        build(run, Caller()).run("stdio")
    finally:
        library.flush_log(state.index_dir)
