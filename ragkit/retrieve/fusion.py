"""Weighted reciprocal rank fusion."""

from __future__ import annotations

from ragkit.records import Hit


def weighted_rrf(ranked: dict[str, list[Hit]], weights: dict[str, float], k: int = 60) -> list[Hit]:
    """score(d) = Σ_lists w_list / (k + rank_list(d)); ranks are 1-based.

    The returned hits are copies carrying every list's rank and raw score.
    """
    fused: dict[str, Hit] = {}
    for name, hits in ranked.items():
        w = weights.get(name, 1.0)
        for rank, hit in enumerate(hits, start=1):
            cur = fused.get(hit.chunk_id)
            if cur is None:
                cur = fused[hit.chunk_id] = Hit(**{**hit.__dict__, "ranks": {}, "scores": {}, "score": 0.0})
            cur.ranks[name] = rank
            cur.scores[name] = hit.score
            cur.score += w / (k + rank)
    return sorted(fused.values(), key=lambda h: (-h.score, h.chunk_id))
