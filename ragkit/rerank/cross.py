"""The reranker stage after the structure features: the ``rerank`` model (ragkit/rerank/models.py: the shipped
cross-encoder by default, or a CrossEncoder folder, a GGUF file, a server's rerank API) re-scores the first hits.

When loading or scoring fails, the ranking from the structure features stands and the plan says why (never an
error).
"""

from __future__ import annotations

from ragkit.records import Hit
from ragkit.rerank.bundled import SPEC
from ragkit.rerank.models import RerankUnavailable, load_reranker

TOP_N = 50  # hits a configured model re-scores
SHIPPED_TOP_N = 10  # hits the shipped reranker re-scores (its budget: 150 ms on two cores)

__all__ = ["TOP_N", "RerankUnavailable", "cross_rerank"]


def cross_rerank(
    query: str, hits: list[Hit], spec: str | None, top_n: int | None = None, keys: dict[str, str] | None = None
) -> list[Hit]:
    """Re-order the first ``top_n`` hits by the reranker's score (``spec`` None: the shipped reranker, its
    first ``SHIPPED_TOP_N``; a configured one its first ``TOP_N``); hits a cited reference brought keep their
    place ahead of them. Raises ``RerankUnavailable``."""
    spec = spec or SPEC
    model = load_reranker(spec, keys)
    top_n = top_n or (SHIPPED_TOP_N if spec == SPEC else TOP_N)
    pinned = [h for h in hits[:top_n] if h.features.get("reference_match", 0.0) > 0]
    rest = [h for h in hits if not any(h is p for p in pinned)]
    head, tail = rest[: top_n - len(pinned)], rest[top_n - len(pinned) :]
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
    top = max(h.score for h in head)
    for i, h in enumerate(pinned):  # cited sections stay first
        h.score = top + len(pinned) - i
    for h in tail:  # keep the tail below the re-scored head
        h.score = floor - 1.0 - (1.0 / (1.0 + max(h.score, 0.0)))
    return pinned + head + tail
