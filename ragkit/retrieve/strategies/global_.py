"""global: GraphRAG-style global search over community reports.

Communities (their vector: the mean of their members' entity vectors, derived
from the chunk vectors when first needed, ragkit/store/knowledge/vectors.py; their report
built from their relations when shown) are ranked by cosine similarity to the
query; the best ``GLOBAL_COMMUNITIES`` within the scope are returned as
context items with their reports, and the chunks that mention their entities
most become the hits (fused with the dense ranking so the chunks most about
the question come first). No community → hybrid.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragkit.records import Hit
from ragkit.retrieve.fusion import weighted_rrf
from ragkit.retrieve.strategies import hybrid

if TYPE_CHECKING:  # a strategy is called with a context; it needs none at import
    from ragkit.retrieve.context import SearchContext

GLOBAL_COMMUNITIES = 5


def search(ctx: SearchContext) -> list[Hit]:
    chosen = ctx.knowledge_search("communities", GLOBAL_COMMUNITIES) if not ctx.never else []
    if not chosen:
        ctx.notes["fallback"] = "no community report in scope: hybrid"
        return hybrid.search(ctx)
    fetch = ctx.limit * ctx.cfg.overfetch
    with ctx.timed("communities"):
        counts = ctx.reader.knowledge_rows().community_chunks([c["id"] for c in chosen], fetch)
    members = ctx.hits_for(counts)
    ctx.context_items.extend(
        {
            "type": "community",
            "id": c["id"],
            "level": c["level"],
            "title": c["title"],
            "report": c["report"],
            "size": c["size"],
            "collection": c["collection"],
            "similarity": round(c["similarity"], 4),
        }
        for c in chosen
    )
    dense = ctx.dense(fetch)
    with ctx.timed("fusion"):
        fused = weighted_rrf(
            {"communities": members, "dense": dense}, {"communities": 0.5, "dense": 0.5}, k=ctx.cfg.rrf_k
        )
    return fused[: ctx.limit]
