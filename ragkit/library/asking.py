"""Reading an index for a question (private to ``Index``, ragkit/library/engine.py): open the committed run,
retrieve, assemble the passages, keep the query in the log, and the whole question (``ask``)."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragkit.assemble import assemble, mark_scanned, pack_context
from ragkit.config import QueryConfig, resolve_index_dir
from ragkit.embed import Embedder
from ragkit.errors import BadQuery, RagkitError, UnknownId
from ragkit.ingest.scans import scanned_places
from ragkit.learn.feedback import Feedback, new_query_id, query_event
from ragkit.library.answering import answer_into
from ragkit.pages import render_page
from ragkit.reader import IndexReader
from ragkit.records import QueryResult
from ragkit.retrieve.pipeline import retrieve as run_retrieval
from ragkit.retrieve.strategies import hippo
from ragkit.store import browse
from ragkit.store.browse import scanned_pages


def open_index(
    index_dir: str | Path | None = None,
    embedder: Embedder | None = None,
    embed_model: str | None = None,
    full_embedder: Embedder | None = None,
    generator: Any = None,
) -> IndexReader:
    """The committed state of an index, for querying (the embedding model loads on first use; a progressive
    index being filled also loads its full model, unless ``full_embedder`` is given; ``generator``: what writes
    answers and the LLM planner's plans, instead of the model the settings name).

    Raises ``IndexNotFound`` when there is none, ``EmbedderMismatch`` when ``embedder``/``embed_model`` is not
    the one the index was built with."""
    reader = IndexReader(resolve_index_dir(index_dir), embedder=embedder, embed_model=embed_model)
    if full_embedder is not None:
        reader.given_full_embedder = full_embedder
    reader.given_generator = generator
    return reader


def retrieve(reader: IndexReader, text: str, cfg: QueryConfig, limit: int | None = None):
    """Chunk hits for one query, before passage assembly: ``(hits, plan, timings_ms)``.

    The query's reads of the DuckDB store share one connection. A reader follows the newest committed run; a
    query that fails because its run was replaced under it (files removed) is asked again of the new run."""
    reader.follow()
    try:
        with reader.one_connection():
            return run_retrieval(reader, text, cfg, limit)
    except Exception:
        if not reader.follow():
            raise
    with reader.one_connection():
        return run_retrieval(reader, text, cfg, limit)


def query(reader: IndexReader, text: str, cfg: QueryConfig | None = None) -> QueryResult:
    """Retrieve, assemble passages (and pack a context block when ``cfg.context_budget`` asks), timing every
    stage. The answer is separate: ``answer_into(result, cfg)``."""
    cfg = cfg or QueryConfig()
    t0 = time.perf_counter()
    hits, plan, timings = retrieve(reader, text, cfg)
    t = time.perf_counter()
    passages = assemble(hits, cfg.k, cfg.budget)
    if any(p.pages for p in passages):
        mark_scanned(passages, scanned_pages(reader))
    context = pack_context(passages, cfg.context_budget) if cfg.context_budget else None
    timings["assemble"] = (time.perf_counter() - t) * 1000
    timings["total"] = (time.perf_counter() - t0) * 1000
    return QueryResult(
        query=text,
        strategy=plan.strategy,
        plan=plan,
        passages=passages,
        hits=hits,
        timings_ms={k: round(v, 2) for k, v in timings.items()},
        context=context,
        context_items=plan.context_items,
        run=reader.manifest.run_id,
        query_id=new_query_id(),
    )


def log_query(
    reader: IndexReader, result: QueryResult, cfg: QueryConfig, token: str | None = None, source: str = "cli"
) -> bool:
    """Keep the query and the passages it showed in the index's event log, so that feedback can name them
    (``cfg.log`` off: nothing is kept). An index one may read but not write keeps nothing and says False."""
    if not cfg.log:
        return False
    filters = result.plan.constraints.get("filters", cfg.filters)  # as planned: they name the scope
    event = query_event(result, cfg.k, filters, result.plan.scope, token, source)
    try:
        Feedback(reader.index_dir).log_query(event)
    except (OSError, RagkitError):
        return False
    return True


def ask(
    reader: IndexReader,
    text: str,
    cfg: QueryConfig,
    on_text: Callable[[str], None] | None = None,
    *,
    passages_ready: Callable[[QueryResult], None] | None = None,
    token: str | None = None,
    source: str = "cli",
    generator: Any = None,
) -> tuple[QueryResult, RagkitError | None]:
    """One question through the whole pipeline: the passages (``query``), the answer when ``cfg.answer``
    (``answer_into``, streamed to ``on_text``), and the query kept in the log for feedback (``log_query``).
    ``passages_ready(result)`` runs between passages and answer (a server trims and sends the passages first).
    Returns the result and the error that kept an answer from being written (the passages stand either way)."""
    result = query(reader, text, cfg)
    if passages_ready is not None:
        passages_ready(result)
    failed = answer_into(result, cfg, on_text, reader, generator) if cfg.answer else None
    log_query(reader, result, cfg, token=token, source=source)
    return result, failed


def warm(reader: IndexReader) -> None:
    """Load the embedding model and what a first query needs (a server does this before it listens): one
    query, and for an index with entities the graph strategies' data (a first hippo query took 1.6 s more)."""
    cfg = QueryConfig(k=1, retry=False)
    query(reader, "warm up", cfg)
    if reader.facts["entities"]:
        reader.entity_graph.walk(cfg.of(hippo.Settings).damping)
        reader.knowledge.matrix("entities")


def page_image(
    reader: IndexReader, key: str, number: int, mark: str = "", readable: tuple[str, ...] | None = None
) -> bytes:
    """Page ``number`` of a readable PDF document (by id or path) as PNG, the text ``mark`` marked on it."""
    doc = browse.find_document(reader, key, readable)
    found = browse.source_of(reader, doc["id"]) if doc else None
    if doc is None or found is None:
        raise UnknownId(f"no document {key!r} in the index")
    source, content_hash = Path(found[0]), found[1] or doc["id"]
    if source.suffix.lower() != ".pdf":
        raise BadQuery(f"{doc['path']} is not a PDF: it has lines, not pages", hint="GET /v1/documents/{path}/text")
    if not source.is_file():
        raise UnknownId(f"the file of {doc['path']} is no longer where it was indexed", hint="index the folder again")
    return render_page(source, content_hash, number, mark, scanned_places)
