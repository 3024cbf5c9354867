"""Library entry points the CLI calls: index(), open_index(), query(), evaluate(), stats()."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ragkit.config import DEFAULT_HOME, IndexConfig, QueryConfig, resolve_index_dir  # noqa: F401 (re-exported)
from ragkit.embed import Embedder
from ragkit.events import Reporter
from ragkit.records import QueryResult


def _default_embedder_factory(cfg: IndexConfig) -> Embedder:
    from ragkit.embed import load_embedder

    return load_embedder(cfg.embed_model, cfg.embed_batch_size, cfg.encoder)


def index(
    paths: list[str | Path],
    index_dir: str | Path | None = None,
    cfg: IndexConfig | None = None,
    *,
    full: bool = False,
    reporter: Reporter | None = None,
    embedder_factory: Callable[[IndexConfig], Embedder] | None = None,
    version_of: str | None = None,
    generator_factory=None,
    confirm: Callable[[str], bool] | None = None,
    wait: bool = False,
):
    """Index ``paths`` into ``index_dir`` (incrementally unless ``full``).

    ``confirm(message)`` approves LLM extraction after its time estimate; ``generator_factory`` loads the GGUF model;
    ``wait``: wait for another run on the same index instead of raising ``IndexBusy``.
    """
    from dataclasses import replace

    from ragkit.embed import normalize_spec
    from ragkit.ingest.pipeline import run_index

    cfg = cfg or IndexConfig()
    return run_index(
        [Path(p) for p in paths],
        resolve_index_dir(index_dir),
        replace(cfg, embed_model=normalize_spec(cfg.embed_model)),
        embedder_factory or _default_embedder_factory,
        full=full,
        reporter=reporter,
        version_of=version_of,
        generator_factory=generator_factory,
        confirm=confirm,
        wait=wait,
    )


def open_index(index_dir: str | Path | None = None, embedder: Embedder | None = None, embed_model: str | None = None):
    """Open the committed state of an index for querying (model loads on first use)."""
    from ragkit.store.reader import IndexReader

    return IndexReader(resolve_index_dir(index_dir), embedder=embedder, embed_model=embed_model)


def retrieve(reader, text: str, cfg: QueryConfig, limit: int | None = None):
    """Chunk hits for one query (no assembly): ``(hits, plan, timings_ms)``; the query's reads of the DuckDB
    store share one connection. A reader follows the newest committed run; a query that fails because its run
    was replaced under it (files removed) is asked again of the new run."""
    from ragkit.retrieve.pipeline import retrieve as run

    reader.follow()
    try:
        with reader.one_connection():
            return run(reader, text, cfg, limit)
    except Exception:
        if not reader.follow():
            raise
    with reader.one_connection():
        return run(reader, text, cfg, limit)


def query(reader, text: str, cfg: QueryConfig | None = None) -> QueryResult:
    """Retrieve, assemble passages and time every stage."""
    from ragkit.assemble import assemble, pack_context

    cfg = cfg or QueryConfig()
    t0 = time.perf_counter()
    hits, plan, timings = retrieve(reader, text, cfg)
    items = plan.pop("context_items", [])
    t = time.perf_counter()
    passages = assemble(hits, cfg.k, cfg.budget)
    context = pack_context(passages, cfg.context_budget) if cfg.context_budget else None
    timings["assemble"] = (time.perf_counter() - t) * 1000
    timings["total"] = (time.perf_counter() - t0) * 1000
    return QueryResult(
        query=text,
        strategy=plan["strategy"],
        plan=plan,
        passages=passages,
        hits=hits,
        timings_ms={k: round(v, 2) for k, v in timings.items()},
        context=context,
        context_items=items,
        run=reader.manifest["last_run"]["id"],
    )


def answer(result: QueryResult, cfg: QueryConfig, on_text=None):
    """A cited answer to ``result.query`` from its passages (``ragkit.answer.Answer``).

    ``ModelUnavailable`` when llama-cpp-python or the model file is missing, ``GenerationFailed`` when the
    model fails while writing; the result and its passages are untouched either way.
    """
    from ragkit.answer import answer as write
    from ragkit.answer import map_reduce
    from ragkit.errors import GenerationFailed
    from ragkit.generate import load_generator

    generator = load_generator(cfg.model, n_ctx=cfg.answer_context)
    reports = [i["report"] for i in result.context_items if i.get("type") == "community"]
    try:
        if result.strategy == "global" and reports:  # map-reduce over the community reports
            return map_reduce(
                generator, result.query, result.passages, reports, cfg.max_tokens, cfg.temperature, on_text
            )
        return write(generator, result.query, result.passages, cfg.max_tokens, cfg.temperature, on_text)
    except (ValueError, RuntimeError, OSError) as exc:
        raise GenerationFailed(
            f"the model failed while answering: {exc}",
            hint="The passages above are complete; try a shorter --budget or -k.",
        ) from exc


def answer_into(result: QueryResult, cfg: QueryConfig, on_text=None):
    """Write the cited answer into ``result.answer`` (or why there is none into ``result.answer_error``);
    returns the error instead of raising it, so that the passages are shown either way."""
    from ragkit.errors import RagkitError

    if not result.passages:
        result.answer_error = "no passages to answer from"
        return None
    try:
        result.answer = answer(result, cfg, on_text=on_text)
    except RagkitError as exc:
        result.answer_error = str(exc)
        return exc
    return None


def stats(reader) -> dict[str, Any]:
    """What an index holds, and what it costs on disk per component against its source bytes."""
    from ragkit.store import remote, sizes

    with reader.duck() as store:
        counts = store.counts()
        doc_types = store.doc_types()
        collections = store.collections()
        last = store.last_run()
    size = sizes.index_bytes(reader.index_dir)
    source = sizes.source_bytes(reader)
    return {
        "index": remote.display(reader.index_dir),
        **counts,
        "doc_types": doc_types,
        "collections": collections,
        "size_bytes": size,
        "source_bytes": source,
        "size_ratio": round(size / source, 2) if source else None,
        "bytes": sizes.component_bytes(reader),
        "embedder": reader.manifest["embedder"],
        "last_run": last
        and {k: last[k] for k in ("id", "finished_at", "lance_version")}
        | {k: last["summary"].get(k) for k in ("new", "changed", "unchanged", "removed", "skipped")},
    }


def evaluate(dataset: str | Path, strategies: list[str], **kwargs):
    from ragkit.evaluate import run_eval

    return run_eval(Path(dataset), strategies, **kwargs)
