"""Library entry points the CLI calls: index(), open_index(), query(), evaluate(), stats()."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable

from ragkit.config import IndexConfig, QueryConfig
from ragkit.embed import Embedder
from ragkit.errors import BadQuery
from ragkit.events import Reporter
from ragkit.records import QueryResult

DEFAULT_HOME = Path("indexes")


def resolve_index_dir(index: str | Path | None) -> Path:
    """``None`` → ./indexes/default; a bare name → ./indexes/NAME; anything else is a directory."""
    if index is None:
        return DEFAULT_HOME / "default"
    s = str(index)
    if "/" not in s and "\\" not in s and s not in (".", ".."):
        return DEFAULT_HOME / s
    return Path(s).expanduser()


def _default_embedder_factory(cfg: IndexConfig) -> Embedder:
    from ragkit.embed import load_embedder

    return load_embedder(cfg.embed_model, cfg.embed_batch_size)


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
):
    """Index ``paths`` into ``index_dir`` (incrementally unless ``full``).

    ``confirm(message)`` approves LLM extraction after its time estimate; ``generator_factory`` loads the GGUF model.
    """
    from dataclasses import replace

    from ragkit.embed import normalize_spec
    from ragkit.ingest.pipeline import run_index

    cfg = cfg or IndexConfig()
    return run_index(
        [Path(p) for p in paths], resolve_index_dir(index_dir), replace(cfg, embed_model=normalize_spec(cfg.embed_model)),
        embedder_factory or _default_embedder_factory, full=full, reporter=reporter, version_of=version_of,
        generator_factory=generator_factory, confirm=confirm,
    )


def open_index(index_dir: str | Path | None = None, embedder: Embedder | None = None,
               embed_model: str | None = None):
    """Open the committed state of an index for querying (model loads on first use)."""
    from ragkit.store.reader import IndexReader

    return IndexReader(resolve_index_dir(index_dir), embedder=embedder, embed_model=embed_model)


def retrieve(reader, text: str, cfg: QueryConfig, limit: int | None = None):
    """Chunk hits for one query (no assembly): ``(hits, plan, timings_ms)``."""
    from ragkit.retrieve.context import SearchContext
    from ragkit.retrieve.filters import build_where
    from ragkit.ingest.refs import has_legal_ref
    from ragkit.rerank.features import DEFAULT_WEIGHTS, FeatureContext, rerank
    from ragkit.retrieve.filters import NO_MATCH
    from ragkit.retrieve.query_syntax import ParsedQuery, parse_query
    from ragkit.retrieve.references import QueryReferences, inject, resolve_query_refs
    from ragkit.store.lance import in_list
    from ragkit.retrieve.strategies import STRATEGIES

    if cfg.strategy not in STRATEGIES:
        raise BadQuery(f"unknown strategy {cfg.strategy!r}", hint=f"Choose one of: {', '.join(STRATEGIES)}")
    if not 0.0 <= cfg.alpha <= 1.0:
        raise BadQuery(f"--alpha must be within 0..1, not {cfg.alpha}")
    if cfg.k < 1:
        raise BadQuery(f"-k must be at least 1, not {cfg.k}")
    if cfg.rerank not in ("none", "features", "cross"):
        raise BadQuery(f"unknown reranker {cfg.rerank!r}", hint="Choose none, features or cross")
    if cfg.mode not in DEFAULT_WEIGHTS:
        raise BadQuery(f"unknown mode {cfg.mode!r}", hint="Choose precision, balanced or recall")
    t = time.perf_counter()
    parsed = parse_query(text) if cfg.syntax else ParsedQuery(raw=text, text=" ".join(text.split()))
    if not parsed.text:
        raise BadQuery("empty query")
    where = build_where(parsed, cfg.filters, reader.doc_ids_for)
    if not cfg.all_versions and where != NO_MATCH:
        old = reader.superseded_documents()
        if old:
            where = f"NOT ({in_list('document_id', old)})" + (f" AND ({where})" if where else "")
    refs = resolve_query_refs(parsed.text, reader.resolver) if cfg.syntax and has_legal_ref(parsed.text) \
        else QueryReferences()
    ctx = SearchContext(reader=reader, query=parsed, where=where,
                        limit=limit or max(cfg.k * 3, 30), cfg=cfg, scope=reader.scope_for(cfg.filters))
    ctx.timings_ms["plan"] = (time.perf_counter() - t) * 1000
    hits = STRATEGIES[cfg.strategy](ctx)
    weights = {**DEFAULT_WEIGHTS[cfg.mode], **cfg.weights.get(cfg.mode, {})}
    used, reason = cfg.rerank, None
    if cfg.rerank != "none" and hits:
        t = time.perf_counter()
        if where != NO_MATCH:
            hits = inject(hits, refs, reader, where)
        fctx = FeatureContext(parsed.text, reader.graph, refs.sections, refs.documents,
                              {cfg.filters["doc_type"]} if "doc_type" in cfg.filters else set())
        hits = rerank(hits, fctx, weights)
        ctx.timings_ms["rerank"] = (time.perf_counter() - t) * 1000
        if cfg.rerank == "cross":
            from ragkit.rerank.cross import CrossUnavailable, cross_rerank

            t = time.perf_counter()
            try:
                hits = cross_rerank(parsed.text, hits, cfg.cross_encoder)
            except CrossUnavailable as exc:
                used, reason = "features", str(exc)
            ctx.timings_ms["cross_encoder"] = (time.perf_counter() - t) * 1000
    plan = {
        "strategy": cfg.strategy,
        "reason": "chosen by --strategy" if cfg.strategy != "hybrid" else "default strategy",
        "query_text": parsed.text,
        "expansions": [],
        "constraints": {"must_include": parsed.must_include, "must_exclude": parsed.must_exclude,
                        "filters": dict(cfg.filters)},
        "fusion": {"method": "weighted_rrf", "k": cfg.rrf_k, "alpha": cfg.alpha,
                   "overfetch": cfg.overfetch} if cfg.strategy == "hybrid" else None,
        "references": refs.found,
        **ctx.notes,
        "rerank": {"requested": cfg.rerank, "used": used, "mode": cfg.mode, "reason": reason},
        "weights": weights if cfg.rerank != "none" else {},
        "all_versions": cfg.all_versions,
    }
    plan["context_items"] = ctx.context_items
    return hits, plan, ctx.timings_ms


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
    return QueryResult(query=text, strategy=cfg.strategy, plan=plan, passages=passages, hits=hits,
                       timings_ms={k: round(v, 2) for k, v in timings.items()}, context=context,
                       context_items=items)


def stats(reader) -> dict[str, Any]:
    with reader.duck() as store:
        counts = store.counts()
        doc_types = store.doc_types()
        collections = store.collections()
        last = store.last_run()
    size = sum(p.stat().st_size for p in reader.index_dir.rglob("*") if p.is_file())
    return {
        "index": str(reader.index_dir), **counts, "doc_types": doc_types, "collections": collections,
        "size_bytes": size, "embedder": reader.manifest["embedder"],
        "last_run": last and {k: last[k] for k in ("id", "finished_at", "lance_version")} | {
            k: last["summary"].get(k) for k in ("new", "changed", "unchanged", "removed", "skipped")},
    }


def evaluate(dataset: str | Path, strategies: list[str], **kwargs):
    from ragkit.evaluate import run_eval

    return run_eval(Path(dataset), strategies, **kwargs)
