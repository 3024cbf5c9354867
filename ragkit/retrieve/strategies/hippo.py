"""hippo: HippoRAG-style personalized PageRank over the entity–chunk graph.

Seeds are the query's entities found in the graph (names, acronyms, aliases,
dates and any 1–4-gram that is an entity key) plus the entities whose (derived)
vectors are nearest the query's, weighted by specificity (IDF over chunks). Mention edges
are IDF-weighted too, so a walk leaving a chunk prefers its specific entities
(the bridge name) over common ones (a year). ``passage_share`` > 0 also
restarts the walk at the top dense chunks, as HippoRAG 2 does (measured: no
gain on hotpotqa-100, so off by default). Chunks are ranked by PPR mass and
fused with the dense and BM25 rankings (``SearchContext.fuse_with_text``: the PPR mass, divided by the
highest, added with ``graph_weight`` to the convex fusion of dense and BM25). Without a seed entity it falls back to hybrid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragkit.records import Hit
from ragkit.retrieve.strategies import hybrid
from ragkit.retrieve.strategy_settings import HippoSettings as Settings

if TYPE_CHECKING:  # a strategy is called with a context; it needs none at import
    from ragkit.retrieve.context import SearchContext

PASSAGE_SEEDS = 20  # top dense chunks that also seed the walk (with passage_share of the reset mass)


def search(ctx: SearchContext) -> list[Hit]:
    s = ctx.cfg.of(Settings)
    seeds = ctx.entity_seeds(vector_seeds=s.vector_seeds)
    if not seeds or ctx.never:
        ctx.notes["fallback"] = "no query entity in the graph: hybrid"
        return hybrid.search(ctx)
    fetch = ctx.limit * ctx.cfg.overfetch
    dense = ctx.dense(fetch)
    passages = {h.chunk_id: max(h.score, 0.0) for h in dense[:PASSAGE_SEEDS]} if s.passage_share else {}
    with ctx.timed("ppr"):
        ranked = ctx.reader.entity_graph.ppr(
            seeds, damping=s.damping, top=fetch, chunk_seeds=passages, chunk_share=s.passage_share
        )
    return ctx.fuse_with_text("ppr", ctx.hits_for(ranked), fetch, s.graph_weight)
