"""One query's retrieval, stage by stage: plan and route (router.py), the strategy's candidates (strategies/)
fused with those of expanded queries, sub-queries and related terms, the corrective retry (corrective.py),
then reranking (ragkit/rerank/). ``ragkit.api.retrieve`` calls it inside the reader's connection."""

from __future__ import annotations

import time

from ragkit.config import QueryConfig
from ragkit.errors import BadQuery


def retrieve(reader, text: str, cfg: QueryConfig, limit: int | None = None):
    """Chunk hits for one query: plan and route, run the strategy (with expansions, sub-queries, related
    terms), the corrective retry, reranking; ``(hits, plan, timings_ms)``."""
    from ragkit.legal import has_legal_ref
    from ragkit.rerank.features import DEFAULT_WEIGHTS, FeatureContext, rerank
    from ragkit.retrieve.context import SearchContext
    from ragkit.retrieve.filters import NO_MATCH, build_where
    from ragkit.retrieve.fusion import NORM_DEPTH
    from ragkit.retrieve.query_syntax import ParsedQuery
    from ragkit.retrieve.references import QueryReferences, inject, resolve_query_refs
    from ragkit.retrieve.router import plan_and_route
    from ragkit.retrieve.strategies import STRATEGIES
    from ragkit.store.lance import in_list

    if cfg.strategy not in STRATEGIES and cfg.strategy != "auto":
        raise BadQuery(f"unknown strategy {cfg.strategy!r}", hint=f"Choose auto or one of: {', '.join(STRATEGIES)}")
    if not 0.0 <= cfg.alpha <= 1.0 or (cfg.foreign_alpha is not None and not 0.0 <= cfg.foreign_alpha <= 1.0):
        raise BadQuery(f"--alpha and foreign_alpha must be within 0..1, not {cfg.alpha} / {cfg.foreign_alpha}")
    if cfg.fusion not in ("convex", "rrf"):
        raise BadQuery(f"unknown fusion {cfg.fusion!r}", hint="Choose convex or rrf")
    if cfg.k < 1:
        raise BadQuery(f"-k must be at least 1, not {cfg.k}")
    if cfg.tree_mode not in ("collapsed", "tree"):
        raise BadQuery(f"unknown tree mode {cfg.tree_mode!r}", hint="Choose collapsed or tree")
    if cfg.planner not in ("rules", "llm"):
        raise BadQuery(f"unknown planner {cfg.planner!r}", hint="Choose rules or llm")
    if cfg.rerank not in ("none", "features", "cross"):
        raise BadQuery(f"unknown reranker {cfg.rerank!r}", hint="Choose none, features or cross")
    if cfg.mode not in DEFAULT_WEIGHTS:
        raise BadQuery(f"unknown mode {cfg.mode!r}", hint="Choose precision, balanced or recall")
    t = time.perf_counter()
    if not text or not text.strip():
        raise BadQuery("empty query", hint='Ask something, e.g. ragkit query "how are overtime hours limited?"')
    qplan, cfg = plan_and_route(reader, text, cfg)
    parsed = ParsedQuery(
        raw=text,
        text=qplan.text,
        must_include=qplan.constraints.must_include,
        must_exclude=qplan.constraints.must_exclude,
    )
    where = build_where(parsed, cfg.filters, reader.doc_ids_for)
    if not cfg.all_versions and where != NO_MATCH:
        old = reader.superseded_documents()
        if old:
            where = f"NOT ({in_list('document_id', old)})" + (f" AND ({where})" if where else "")
    refs = (
        resolve_query_refs(parsed.text, reader.resolver)
        if cfg.syntax and has_legal_ref(parsed.text)
        else QueryReferences()
    )
    ctx = SearchContext(
        reader=reader,
        query=parsed,
        where=where,
        limit=limit or max(cfg.k * 3, 30),
        cfg=cfg,
        scope=reader.scope_for(cfg.filters),
    )
    ctx.timings_ms["plan"] = (time.perf_counter() - t) * 1000
    hits = _candidates(ctx, qplan, where != NO_MATCH)
    retry = None
    if cfg.retry and where != NO_MATCH:
        hits, ctx, retry = _corrective(reader, ctx, qplan, hits)
        cfg = ctx.cfg
    weights = {**DEFAULT_WEIGHTS[cfg.mode], **cfg.weights.get(cfg.mode, {})}
    used, reason = cfg.rerank, None
    if cfg.rerank != "none" and hits:
        t = time.perf_counter()
        if where != NO_MATCH:
            hits = inject(hits, refs, reader, where)
        fctx = FeatureContext(
            parsed.text,
            reader.graph,
            refs.sections,
            refs.documents,
            {cfg.filters["doc_type"]} if "doc_type" in cfg.filters else set(qplan.doc_type_routing),
        )
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
    qd = qplan.to_dict()
    plan = {
        "strategy": cfg.strategy,
        "reason": qplan.reason,
        "original": qplan.original,
        "planner": qplan.planner,
        "rewritten": qplan.rewritten,
        "query_text": parsed.text,
        "language": qplan.language,
        "retrieval_strategy": cfg.mode,
        "doc_type_routing": qplan.doc_type_routing,
        "expanded_queries": qplan.expanded_queries,
        "expansions": qplan.expanded_queries,  # its name before the planner (schema ragkit.query/1 keeps it)
        "boost_sections": qplan.boost_sections,
        "identifiers": qplan.identifiers,
        "entities": qplan.entities,
        "corrections": qplan.corrections,
        "related_terms": qplan.related_terms or [],
        "sub_queries": qplan.sub_queries,
        "constraints": {**qd["constraints"], "filters": dict(cfg.filters)},
        "planner_notes": qplan.notes,
        "retry": retry,
        "fusion": (
            {"method": "weighted_rrf", "k": cfg.rrf_k}
            if cfg.fusion == "rrf"
            else {"method": "convex", "normalised_over": NORM_DEPTH}
        )
        | {"alpha": cfg.alpha, "overfetch": cfg.overfetch}
        if cfg.strategy == "hybrid"
        else None,
        "references": refs.found,
        **ctx.notes,
        "rerank": {"requested": cfg.rerank, "used": used, "mode": cfg.mode, "reason": reason},
        "weights": weights if cfg.rerank != "none" else {},
        "all_versions": cfg.all_versions,
    }
    plan["context_items"] = ctx.context_items
    return hits, plan, ctx.timings_ms


def _candidates(ctx, qplan, searchable: bool):
    """The strategy's hits, fused with those of the expanded queries and (with ``decompose``) sub-queries."""
    from ragkit.retrieve.strategies import STRATEGIES

    cfg = ctx.cfg
    hits = STRATEGIES[cfg.strategy](ctx)
    if cfg.links and searchable:
        from ragkit.retrieve.links import with_links

        hits = with_links(ctx, hits)
    if qplan.expanded_queries and cfg.strategy in ("naive", "lexical", "hybrid") and searchable:
        hits = _with_queries(ctx, hits, qplan.expanded_queries, STRATEGIES[cfg.strategy], "expansion", 0.5)
    if cfg.expand and searchable:
        hits = _with_related_terms(ctx, qplan, hits)
    if qplan.sub_queries and cfg.decompose and searchable:
        hits = _with_queries(ctx, hits, qplan.sub_queries, STRATEGIES[cfg.strategy], "sub_query", SUB_QUERY_SHARE)
    return hits


def _with_related_terms(ctx, qplan, hits):
    """Fuse a BM25 run of the query plus related vocabulary words (ragkit/retrieve/expansion.py)."""
    from ragkit.retrieve import expansion
    from ragkit.retrieve.strategies import STRATEGIES

    if qplan.related_terms is None:
        vec = ctx.query_vector()
        with ctx.timed("expansion"):
            terms = expansion.related_terms(ctx.reader, vec, ctx.query.text)
        qplan.related_terms = [{"term": t, "similarity": s} for t, s in terms]
    if not qplan.related_terms:
        return hits
    query = ctx.query.text + " " + " ".join(t["term"] for t in qplan.related_terms)
    return _with_queries(ctx, hits, [query], STRATEGIES["lexical"], "related", expansion.SHARE)


def _corrective(reader, ctx, qplan, hits):
    """One retry with another strategy in recall mode when the first candidates look poor."""
    from dataclasses import replace as dc_replace

    from ragkit.retrieve import corrective

    check = corrective.assess(hits, ctx.query.text)
    reason = corrective.retry_reason(check)
    record = {"check": check, "retried": False, "reason": reason}
    if reason is None:
        return hits, ctx, record
    alt = corrective.fallback_strategy(ctx.cfg.strategy, bool(reader.facts()["entities"]))
    t = time.perf_counter()
    # same query text and prefilter: the dense and BM25 lists already found are reused
    ctx2 = dc_replace(
        ctx, cfg=dc_replace(ctx.cfg, strategy=alt, mode="recall"), timings_ms={}, notes={}, context_items=[]
    )
    hits2 = _candidates(ctx2, qplan, True)
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

    from ragkit.retrieve.filters import NO_MATCH
    from ragkit.retrieve.fusion import weighted_rrf

    lists, weights = {"original": hits}, {"original": 1.0}
    vectors = [None] * len(queries)
    if ctx.cfg.strategy != "lexical" and ctx.where != NO_MATCH:  # one encoder run for all of them
        with ctx.timed(f"{kind}_embed_queries"):
            vectors = list(ctx.reader.embedder.encode_queries(queries))
    for i, q in enumerate(queries):
        sub = dc_replace(
            ctx,
            query=dc_replace(ctx.query, text=q),
            timings_ms={},
            notes={},
            context_items=[],
            _qvec=vectors[i],
            _found={},
        )
        lists[f"{kind}{i}"] = strategy(sub)
        weights[f"{kind}{i}"] = share / len(queries)
        for stage, ms in sub.timings_ms.items():
            ctx.timings_ms[f"{kind}_{stage}"] = ctx.timings_ms.get(f"{kind}_{stage}", 0.0) + ms
    with ctx.timed("fusion"):
        return weighted_rrf(lists, weights, k=ctx.cfg.rrf_k)[: ctx.limit]
