"""One query's retrieval, phase by phase (``retrieve``):

1. ``plan``: plan and route (router.py: the planner's rewrite, expansions and constraints, the strategy and
   its weights), the prefilter (filters.py), the legal references the query cites (references.py);
2. ``candidates``: the strategy's hits (strategies/) fused with those of title links (links.py), expanded
   queries, related terms and sub-queries; then the corrective retry (corrective.py) when they look poor;
3. ``rerank_hits``: structure features, then the rerank model (ragkit/rerank/);
4. the ``Plan`` record says what happened (the ``plan`` of ragkit.query/1).

Passage assembly follows in ``Index.query`` (ragkit/library/asking.py), which calls this inside the reader's connection."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

from ragkit.errors import BadQuery
from ragkit.legal import has_legal_ref
from ragkit.reader import IndexReader
from ragkit.records import Hit, Plan
from ragkit.rerank import bundled
from ragkit.rerank.bundled import SPEC
from ragkit.rerank.cross import RerankUnavailable, cross_rerank
from ragkit.rerank.features import DEFAULT_WEIGHTS, FeatureContext, rerank
from ragkit.rerank.ranker import scope_of
from ragkit.retrieve import corrective, expansion
from ragkit.retrieve.config import QueryConfig
from ragkit.retrieve.context import SearchContext
from ragkit.retrieve.filters import build_where
from ragkit.retrieve.fusion import NORM_DEPTH, weighted_rrf, with_retrievers
from ragkit.retrieve.links import with_links
from ragkit.retrieve.planner import QueryPlan
from ragkit.retrieve.query_syntax import ParsedQuery
from ragkit.retrieve.references import QueryReferences, inject, resolve_query_refs
from ragkit.retrieve.router import plan_and_route
from ragkit.retrieve.strategies import STRATEGIES
from ragkit.store.expr import in_values


@dataclass
class Prepared:
    """A planned query: the planner's plan, the config it runs with (strategy, alpha and mode resolved), the
    legal references it cites, and the context its strategy searches in."""

    qplan: QueryPlan
    cfg: QueryConfig
    refs: QueryReferences
    ctx: SearchContext
    scope: str  # whose learned ranker and answer thresholds it uses, and where its feedback goes (scope_of)

    @property
    def searchable(self) -> bool:
        """False when the filters exclude every document."""
        return not self.ctx.never


def retrieve(reader: IndexReader, text: str, cfg: QueryConfig, limit: int | None = None):
    """Chunk hits for one query, phase by phase: plan → candidates (fused) → corrective retry → rerank;
    ``(hits, plan, timings_ms)``."""
    t = time.perf_counter()
    q = plan(reader, text, cfg, limit)
    q.ctx.timings_ms["plan"] = (time.perf_counter() - t) * 1000
    hits = candidates(q.ctx, q.qplan, q.searchable)
    retry = None
    if q.cfg.retry and q.searchable:
        hits, q.ctx, retry = _corrective(reader, q.ctx, q.qplan, hits)
        q.cfg = q.ctx.cfg
    hits, rerank_note = rerank_hits(reader, q, hits)
    return hits, _plan_record(q, retry, rerank_note), q.ctx.timings_ms


def plan(reader: IndexReader, text: str, cfg: QueryConfig, limit: int | None = None) -> Prepared:
    """Plan and route the query (router.py), lift its operators into a prefilter (filters.py; superseded
    versions left out unless asked for), resolve the legal references it cites (references.py)."""
    if not text or not text.strip():
        raise BadQuery("empty query", hint='Ask something, e.g. ragkit query "how are overtime hours limited?"')
    qplan, cfg = plan_and_route(reader, text, cfg)
    parsed = ParsedQuery(
        raw=text,
        text=qplan.text,
        must_include=qplan.constraints.must_include,
        must_exclude=qplan.constraints.must_exclude,
    )
    prefilter = build_where(parsed, cfg.filters, reader.scopes.doc_ids_for, cfg.readable)
    if not cfg.all_versions and not prefilter.never:
        old = reader.scopes.superseded
        if old:
            prefilter = prefilter.before(in_values("document_id", old).negated())
    scope = reader.scopes.scope_for(cfg.filters, cfg.readable)
    refs = (
        resolve_query_refs(parsed.text, reader.resolver, scope.documents if cfg.readable is not None else None)
        if cfg.syntax and has_legal_ref(parsed.text)
        else QueryReferences()
    )
    ctx = SearchContext(
        reader=reader,
        query=parsed,
        prefilter=prefilter,
        limit=limit or max(cfg.k * 3, 30),
        cfg=cfg,
        scope=scope,
        language=qplan.language,
    )
    return Prepared(qplan, cfg, refs, ctx, scope_of(cfg.readable, cfg.filters))


def rerank_hits(reader: IndexReader, q: Prepared, hits: list[Hit]) -> tuple[list[Hit], dict[str, Any]]:
    """The cited sections injected, the structure features (ragkit/rerank/features.py), then the
    rerank model when asked for (falling back to the features' order, with the reason, when it fails)."""
    cfg, ctx = q.cfg, q.ctx
    weights = {**DEFAULT_WEIGHTS[cfg.mode], **cfg.weights.get(cfg.mode, {})}
    note = {
        "requested": cfg.rerank,
        "used": cfg.rerank,
        "mode": cfg.mode,
        "reason": None,
        "weights": weights if cfg.rerank != "none" else {},
    }
    if cfg.rerank == "none" or not hits:
        return hits, note
    with ctx.timed("rerank"):
        if q.searchable:
            hits = inject(hits, q.refs, reader, ctx.where)
        doc_types = {cfg.filters["doc_type"]} if "doc_type" in cfg.filters else set(q.qplan.doc_type_routing)
        fctx = FeatureContext(ctx.query.text, reader.graph, q.refs.sections, q.refs.documents, doc_types)
        hits = rerank(hits, fctx, weights)
        ranker = reader.rankers.for_scope(q.scope) if cfg.learned else None
        if ranker is not None:
            hits = ranker.rerank(hits, ctx.query.text, q.qplan.language)
            note["learned"] = {"scope": ranker.scope, "version": ranker.version, "fitted": ranker.meta.get("fitted")}
    note["used"] = "cross" if cross_wanted(cfg, q.qplan.language) else "features"
    if note["used"] == "cross":
        with ctx.timed("cross_encoder"):
            try:
                hits = cross_rerank(ctx.query.text, hits, cfg.rerank_model, cfg.rerank_top, keys=cfg.api_keys)
                note["model"] = cfg.rerank_model or SPEC
            except RerankUnavailable as exc:
                note["used"], note["reason"] = "features", str(exc)
    return hits, note


def cross_wanted(cfg, language: str | None, by_default: frozenset[str] | None = None) -> bool:
    """Whether the rerank model re-scores the first hits: asked for (``cross``), or ``auto`` with a model
    configured or in a language the shipped reranker is on by default for (``by_default``, else
    ``bundled.default_languages()``: its card, where the held-out guard of scripts/bench_reranker.py decides, for
    answers as for plain queries; none when it is not shipped)."""
    if cfg.rerank == "cross":
        return True
    if cfg.rerank != "auto":
        return False
    if cfg.rerank_model:
        return True
    languages = bundled.default_languages() if by_default is None else by_default
    return bool(language) and language in languages


def _plan_record(q: Prepared, retry: dict | None, rerank_note: dict[str, Any]) -> Plan:
    """What the query did, as the result's ``Plan`` (the ``plan`` object of ragkit.query/1)."""
    cfg, qplan = q.cfg, q.qplan
    fusion = None
    if cfg.strategy == "hybrid":
        fusion = (
            {"method": "weighted_rrf", "k": cfg.rrf_k}
            if cfg.fusion == "rrf"
            else {"method": "convex", "normalised_over": NORM_DEPTH}
        ) | {"alpha": cfg.alpha, "overfetch": cfg.overfetch}
    weights = rerank_note.pop("weights")
    return Plan(
        strategy=cfg.strategy,
        reason=qplan.reason,
        original=qplan.original,
        planner=qplan.planner,
        rewritten=qplan.rewritten,
        query_text=q.ctx.query.text,
        language=qplan.language,
        retrieval_strategy=cfg.mode,
        doc_type_routing=qplan.doc_type_routing,
        expanded_queries=qplan.expanded_queries,
        boost_sections=qplan.boost_sections,
        identifiers=qplan.identifiers,
        entities=qplan.entities,
        corrections=qplan.corrections,
        related_terms=qplan.related_terms or [],
        sub_queries=qplan.sub_queries,
        constraints={**asdict(qplan.constraints), "filters": dict(cfg.filters)},
        planner_notes=qplan.notes,
        retry=retry,
        fusion=fusion,
        references=q.refs.found,
        notes=q.ctx.notes,
        rerank=rerank_note,
        weights=weights,
        all_versions=cfg.all_versions,
        context_items=q.ctx.context_items,
        query_vector=q.ctx.made_vector,
        scope=q.scope,
    )


def candidates(ctx: SearchContext, qplan: QueryPlan, searchable: bool) -> list[Hit]:
    """The strategy's hits, fused with those of the expanded queries and (with ``decompose``) sub-queries."""
    cfg = ctx.cfg
    hits = STRATEGIES[cfg.strategy].search(ctx)
    if cfg.links and searchable:
        hits = with_links(ctx, hits)
    if qplan.expanded_queries and cfg.strategy in ("naive", "lexical", "hybrid") and searchable:
        hits = _with_queries(ctx, hits, qplan.expanded_queries, STRATEGIES[cfg.strategy].search, "expansion", 0.5)
    if cfg.expand and searchable and cfg.readable is None:  # (the vocabulary spans every collection)
        hits = _with_related_terms(ctx, qplan, hits)
    if qplan.sub_queries and cfg.decompose and searchable:
        hits = _with_queries(
            ctx, hits, qplan.sub_queries, STRATEGIES[cfg.strategy].search, "sub_query", SUB_QUERY_SHARE
        )
    return hits


def _with_related_terms(ctx, qplan, hits):
    """Fuse a BM25 run of the query plus related vocabulary words (ragkit/retrieve/expansion.py)."""
    if qplan.related_terms is None:
        vec = ctx.query_vector()
        with ctx.timed("expansion"):
            terms = expansion.related_terms(ctx.reader, vec, ctx.query.text)
        qplan.related_terms = [{"term": t, "similarity": s} for t, s in terms]
    if not qplan.related_terms:
        return hits
    query = ctx.query.text + " " + " ".join(t["term"] for t in qplan.related_terms)
    return _with_queries(ctx, hits, [query], STRATEGIES["lexical"].search, "related", expansion.SHARE)


def _corrective(reader: IndexReader, ctx: SearchContext, qplan: QueryPlan, hits: list[Hit]):
    """One retry with another strategy in recall mode when the first candidates look poor."""
    from dataclasses import replace as dc_replace

    check = corrective.assess(hits, ctx.query.text)
    reason = corrective.retry_reason(check)
    record = {"check": check, "retried": False, "reason": reason}
    if reason is None:
        return hits, ctx, record
    alt = corrective.fallback_strategy(ctx.cfg.strategy, bool(reader.facts["entities"]))
    t = time.perf_counter()
    # same query text and prefilter: the dense and BM25 lists already found are reused
    ctx2 = dc_replace(
        ctx, cfg=dc_replace(ctx.cfg, strategy=alt, mode="recall"), timings_ms={}, notes={}, context_items=[]
    )
    hits2 = candidates(ctx2, qplan, True)
    check2 = corrective.assess(hits2, ctx.query.text)
    ctx.timings_ms["retry"] = (time.perf_counter() - t) * 1000
    record.update(
        {
            "retried": True,
            "strategy": alt,
            "mode": "recall",
            "retry_check": check2,
            "kept": "retry" if check2["coverage"] > check["coverage"] else "first",
        }
    )
    if record["kept"] == "retry":
        ctx2.timings_ms = {**ctx.timings_ms, **{f"retry_{k}": v for k, v in ctx2.timings_ms.items()}}
        return hits2, ctx2, record
    return hits, ctx, record


SUB_QUERY_SHARE = 0.3  # fusion weight the sub-queries share (the original query counts 1)


def _with_queries(ctx, hits, queries: list[str], strategy, kind: str, share: float):
    """Retrieve more queries (expansions, sub-queries) with the same strategy and fuse them with the
    original's hits: the original counts 1, the extra queries share ``share``."""
    from dataclasses import replace as dc_replace

    lists, weights = {"original": hits}, {"original": 1.0}
    vectors = [None] * len(queries)
    if ctx.cfg.strategy != "lexical" and not ctx.never:  # one encoder run for all of them
        with ctx.timed(f"{kind}_embed_queries"):
            vectors = list(ctx.query_embedder().encode_queries(queries))
    for i, q in enumerate(queries):
        sub = dc_replace(
            ctx,
            query=dc_replace(ctx.query, text=q),
            timings_ms={},
            notes={},
            context_items=[],
            _qvec=vectors[i],
            _found={},
            _lean={},
        )
        lists[f"{kind}{i}"] = strategy(sub)
        weights[f"{kind}{i}"] = share / len(queries)
        for stage, ms in sub.timings_ms.items():
            ctx.timings_ms[f"{kind}_{stage}"] = ctx.timings_ms.get(f"{kind}_{stage}", 0.0) + ms
    with ctx.timed("fusion"):
        return with_retrievers(weighted_rrf(lists, weights, k=ctx.cfg.rrf_k)[: ctx.limit], hits)
