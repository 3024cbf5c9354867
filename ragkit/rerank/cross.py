"""The reranker stage after the structure features: the ``rerank`` model (ragkit/rerank/models.py: a
CrossEncoder folder, a GGUF file, or a server's rerank API) re-scores the first ``TOP_N`` hits.

When none is configured, or loading or scoring fails, the ranking from the structure features stands and the
plan says why (never an error).
"""

from __future__ import annotations

from ragkit.records import Hit
from ragkit.rerank.models import RerankUnavailable, load_reranker

TOP_N = 50

__all__ = ["TOP_N", "RerankUnavailable", "cross_rerank"]


def cross_rerank(
    query: str, hits: list[Hit], spec: str | None, top_n: int = TOP_N, keys: dict[str, str] | None = None
) -> list[Hit]:
    """Re-order the first ``top_n`` hits by the reranker's score; raises ``RerankUnavailable``."""
    if not spec:
        raise RerankUnavailable(
            'no rerank model configured (--rerank-model SPEC, or rerank = "SPEC" under [models] in ragkit.toml)'
        )
    model = load_reranker(spec, keys)
    head, tail = hits[:top_n], hits[top_n:]
    if not head:
        return hits
    try:
        scores = model.score(query, [f"{h.header}\n{h.text}" for h in head])
    except RerankUnavailable:
        raise
    except Exception as exc:
        raise RerankUnavailable(f"{model.name} failed to score: {type(exc).__name__}: {exc}") from exc
    for h, s in zip(head, scores):
        h.features["cross_encoder"] = float(s)
        h.score = float(s)
    head.sort(key=lambda h: -h.score)
    floor = min(h.score for h in head)
    for h in tail:  # keep the tail below the re-scored head
        h.score = floor - 1.0 - (1.0 / (1.0 + max(h.score, 0.0)))
    return head + tail
