"""``ragkit serve --mcp``: the index as MCP tools over stdio (the official ``mcp`` SDK's ``MCPServer``).

Tools: ``search`` (passages with their source, section, lines and pages), ``get_section`` (a section's own
text), ``answer`` (a cited answer from the local GGUF model) and ``stats``. One warm process per client
session; stdout carries the protocol, so nothing else is printed there.
"""

from __future__ import annotations

from typing import Any

from ragkit import __version__, api
from ragkit.config import load_config, override
from ragkit.errors import RagkitError
from ragkit.render import result_dict
from ragkit.serve.served import Served

INSTRUCTIONS = (
    "Local retrieval over an indexed folder of documents. Call `search` with a question to get the "
    "best passages (each with its file, section breadcrumb and line span); `get_section` reads a "
    "whole section by id; `answer` writes a short cited answer from the passages."
)


def _passage(p: dict[str, Any]) -> dict[str, Any]:
    return {
        "rank": p["rank"],
        "score": p["score"],
        "source": p["document"]["path"],
        "title": p["document"]["title"],
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
    import functools

    from mcp.server.mcpserver.exceptions import ToolError

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except RagkitError as exc:
            raise ToolError(
                f"{exc.message} (ragkit error {exc.exit_code}" + (f"; hint: {exc.hint})" if exc.hint else ")")
            ) from exc

    return wrapper


def build(served: Served):
    from mcp.server.mcpserver import MCPServer

    server = MCPServer(name="ragkit", version=__version__, instructions=INSTRUCTIONS)

    def run_query(
        text: str,
        k: int,
        strategy: str,
        filters: dict[str, str] | None,
        answer: bool,
        rerank_model: str | None = None,
        model: str | None = None,
        answer_mode: str | None = None,
    ):
        _, cfg = load_config(index_dir=served.index_dir)
        cfg = override(
            cfg,
            k=k,
            strategy=strategy,
            filters={**cfg.filters, **(filters or {})},
            answer=answer,
            rerank="cross" if rerank_model else None,
            rerank_model=rerank_model,
            model=model,
            answer_mode=answer_mode,
        )
        with served.lock:
            reader = served.reader()
            result = api.query(reader, text, cfg)
            if answer:
                api.answer_into(result, cfg, reader=reader)
        return result_dict(result)

    @server.tool()
    @_reported
    def search(
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
        out = run_query(query, k, strategy, filters, answer=False, rerank_model=rerank_model)
        return {"query": query, "strategy": out["strategy"], "passages": [_passage(p) for p in out["passages"]]}

    @server.tool()
    @_reported
    def get_section(section_id: str) -> dict:
        """A section's place (document, breadcrumb, line span) and its own text, by the id a passage names."""
        return served.find("section", section_id)

    @server.tool()
    @_reported
    def answer(question: str, k: int = 6, strategy: str = "auto", mode: str = "auto", model: str | None = None) -> dict:
        """An answer to `question` from the best passages, with the passages. `mode`: "extract" quotes the
        sentences that answer, with their lines and pages; "generate" has the generate model write it, every
        sentence checked against what it cites; "auto" (default) quotes unless a model other than the bundled
        one is configured. When the passages do not answer, it says so (`abstained`). `model`: a generate
        model spec (a .gguf file or http://host:port/v1#model)."""
        out = run_query(question, k, strategy, None, answer=True, model=model, answer_mode=mode)
        found = out.get("answer") or {}
        keys = ("mode", "abstained", "quotes", "sentences", "grounded", "replaced", "note", "citations")
        return {
            "question": question,
            "answer": found.get("text"),
            "answer_error": out.get("answer_error"),
            **{key: found.get(key) for key in keys},
            "passages": [_passage(p) for p in out["passages"]],
        }

    @server.tool()
    @_reported
    def stats() -> dict:
        """What the index holds: documents, sections, chunks, entities, doc types, size on disk."""
        with served.lock:
            return api.stats(served.reader())

    return server


def serve_mcp(index: str | None) -> None:
    served = Served(index)
    served.reader()  # a missing index fails before the session starts
    served.warm()
    build(served).run("stdio")
