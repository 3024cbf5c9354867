"""global: GraphRAG-style global search over community summaries.

Community summaries (title + top entities, embedded at index time) are ranked
by cosine similarity to the query; the best ``GLOBAL_COMMUNITIES`` are
returned as context items with their reports, and the chunks that mention
their entities most become the hits (fused with the dense ranking so the
chunks most about the question come first). No community → hybrid.
"""

import numpy as np

from ragkit.records import Hit
from ragkit.retrieve.context import SearchContext
from ragkit.retrieve.filters import NO_MATCH
from ragkit.retrieve.fusion import weighted_rrf
from ragkit.retrieve.strategies import hybrid

GLOBAL_COMMUNITIES = 5


def search(ctx: SearchContext) -> list[Hit]:
    rows, mat = ctx.reader.communities
    if not rows or ctx.where == NO_MATCH:
        ctx.notes["fallback"] = "no community summaries in this index: hybrid"
        return hybrid.search(ctx)
    with ctx.timed("load_model"):
        embedder = ctx.reader.embedder
    with ctx.timed("embed_query"):
        q = embedder.encode_query(ctx.query.text)
    with ctx.timed("communities"):
        sims = mat @ q / ((np.linalg.norm(mat, axis=1) * (np.linalg.norm(q) or 1.0)) + 1e-9)
        best = np.argsort(-sims)[:GLOBAL_COMMUNITIES]
        chosen = [rows[i] | {"similarity": round(float(sims[i]), 4)} for i in best]
        fetch = ctx.limit * ctx.cfg.overfetch
        with ctx.reader.duck() as store:
            counts = store.community_chunks([c["id"] for c in chosen], fetch)
    members = ctx.hits_for(counts)
    ctx.context_items.extend({"type": "community", **c} for c in chosen)
    dense = ctx.dense(fetch)
    with ctx.timed("fusion"):
        fused = weighted_rrf({"communities": members, "dense": dense}, {"communities": 0.5, "dense": 0.5},
                             k=ctx.cfg.rrf_k)
    return fused[: ctx.limit]
