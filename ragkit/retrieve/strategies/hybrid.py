"""hybrid: dense ∪ BM25, each over-fetched, fused by a score-normalised convex combination (alpha = dense weight;
``fusion = "rrf"``: weighted reciprocal rank fusion instead)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragkit.records import Hit
from ragkit.retrieve.fusion import convex, weighted_rrf

if TYPE_CHECKING:  # a strategy is called with a context; it needs none at import
    from ragkit.retrieve.context import SearchContext


def search(ctx: SearchContext) -> list[Hit]:
    fetch = ctx.limit * ctx.cfg.overfetch
    dense, lexical = ctx.text_rankings(fetch)
    with ctx.timed("fusion"):
        if ctx.cfg.fusion == "rrf":
            fused = weighted_rrf(
                {"dense": dense, "lexical": lexical},
                {"dense": ctx.cfg.alpha, "lexical": 1.0 - ctx.cfg.alpha},
                k=ctx.cfg.rrf_k,
            )
        else:
            fused = convex(dense, lexical, ctx.cfg.alpha, ctx.query_vector())
    return ctx.complete(fused[: ctx.limit])
