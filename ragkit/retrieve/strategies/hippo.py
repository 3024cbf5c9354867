"""hippo: HippoRAG-style personalized PageRank over the entity–chunk graph.

Seeds are the query's entities found in the graph (names, acronyms, dates and
any 1–4-gram that is an entity key), weighted by specificity (IDF over
chunks). Chunks are ranked by PPR mass and fused with the dense and BM25
rankings (weighted RRF: ``ppr_weight`` for PPR, the rest split by ``alpha``).
Without a seed entity it falls back to hybrid.
"""

from ragkit.records import Hit
from ragkit.retrieve.context import SearchContext
from ragkit.retrieve.filters import NO_MATCH
from ragkit.retrieve.strategies import hybrid


def search(ctx: SearchContext) -> list[Hit]:
    seeds = ctx.entity_seeds()
    if not seeds or ctx.where == NO_MATCH:
        ctx.notes["fallback"] = "no query entity in the graph: hybrid"
        return hybrid.search(ctx)
    fetch = ctx.limit * ctx.cfg.overfetch
    with ctx.timed("ppr"):
        ranked = ctx.reader.entity_graph.ppr(seeds, damping=ctx.cfg.damping, top=fetch)
    return ctx.fuse_with_text("ppr", ctx.hits_for(ranked), fetch, ctx.cfg.ppr_weight)
