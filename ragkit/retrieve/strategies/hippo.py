"""hippo: HippoRAG-style personalized PageRank over the entity–chunk graph.

Seeds are the query's entities found in the graph (names, acronyms, dates and
any 1–4-gram that is an entity key), weighted by specificity (IDF over
chunks). Chunks are ranked by PPR mass and fused with the dense and BM25
rankings (weighted RRF: ``ppr_weight`` for PPR, the rest split by ``alpha``).
Without a seed entity it falls back to hybrid.
"""

from ragkit.extract.entities import query_entities
from ragkit.records import Hit
from ragkit.retrieve.context import SearchContext
from ragkit.retrieve.filters import NO_MATCH
from ragkit.retrieve.fusion import weighted_rrf
from ragkit.retrieve.strategies import hybrid
from ragkit.store.lance import in_list


def search(ctx: SearchContext) -> list[Hit]:
    with ctx.timed("entities"):
        graph = ctx.reader.entity_graph
        keys = [k for k, _ in query_entities(ctx.query.text)]
        seeds = graph.seeds(keys)
        # a longer matched name covers its own words ("tim brown" makes "brown" redundant)
        seeds = {k: w for k, w in seeds.items() if not any(k != o and f" {k} " in f" {o} " for o in seeds)}
    ctx.notes["seed_entities"] = sorted(seeds, key=lambda k: -seeds[k])[:10]
    if not seeds or ctx.where == NO_MATCH:
        ctx.notes["fallback"] = "no query entity in the graph: hybrid"
        return hybrid.search(ctx)
    fetch = ctx.limit * ctx.cfg.overfetch
    with ctx.timed("ppr"):
        ranked = graph.ppr(seeds, damping=ctx.cfg.damping, top=fetch)
    ids = [cid for cid, _ in ranked]
    rows = ctx.reader.chunks.rows(in_list("id", ids) + (f" AND ({ctx.where})" if ctx.where else ""),
                                  limit=len(ids)) if ids else []
    by_id = {h.chunk_id: h for h in ctx.reader.to_hits(rows, "lexical")}
    ppr_hits = []
    for cid, score in ranked:
        if cid in by_id:
            by_id[cid].score = score
            ppr_hits.append(by_id[cid])
    dense = ctx.dense(fetch)
    lexical = ctx.lexical(fetch)
    rest = 1 - ctx.cfg.ppr_weight  # shared by dense and BM25 as in hybrid (alpha)
    with ctx.timed("fusion"):
        fused = weighted_rrf({"ppr": ppr_hits, "dense": dense, "lexical": lexical},
                             {"ppr": ctx.cfg.ppr_weight, "dense": rest * ctx.cfg.alpha,
                              "lexical": rest * (1 - ctx.cfg.alpha)}, k=ctx.cfg.rrf_k)
    return fused[: ctx.limit]
