"""hybrid: dense ∪ BM25, each over-fetched, fused by weighted RRF (alpha = dense weight)."""

from ragkit.records import Hit
from ragkit.retrieve.context import SearchContext
from ragkit.retrieve.fusion import weighted_rrf


def search(ctx: SearchContext) -> list[Hit]:
    fetch = ctx.limit * ctx.cfg.overfetch
    dense = ctx.dense(fetch)
    lexical = ctx.lexical(fetch)
    with ctx.timed("fusion"):
        fused = weighted_rrf({"dense": dense, "lexical": lexical},
                             {"dense": ctx.cfg.alpha, "lexical": 1.0 - ctx.cfg.alpha}, k=ctx.cfg.rrf_k)
    return fused[: ctx.limit]
