"""Corrective retry (seed 004): check the first results, retry once with a broader plan when they look poor.

The check is cheap and model-free: ``coverage`` is the share of the query's
content words found in the top three candidates (5-letter prefixes count, a
cheap stemmer), ``agreement`` the share of the top ten that both the dense and
the lexical list retrieved (when the strategy fused both), ``top_score`` and
``gap`` (top minus fifth) the fused scores. A retry happens when nothing came
back or coverage is below ``MIN_COVERAGE``; it runs another strategy in
recall mode, and its candidates are kept only when their coverage is higher.
"""

from __future__ import annotations

from ragkit.records import Hit
from ragkit.rerank.features import _match
from ragkit.text import content_words

MIN_COVERAGE = 0.34
TOP = 3


def assess(hits: list[Hit], query: str) -> dict[str, float]:
    words = content_words(query)
    top_words = set()
    for h in hits[:TOP]:
        top_words |= set(content_words(f"{h.header} {h.text}"))
    coverage = sum(_match(w, top_words) for w in words) / len(words) if words else 1.0
    both = [h for h in hits[:10] if "dense" in h.ranks and "lexical" in h.ranks]
    fused = [h for h in hits[:10] if h.ranks]
    return {
        "coverage": round(coverage, 3),
        "agreement": round(len(both) / len(fused), 3) if fused else 0.0,
        "top_score": round(hits[0].score, 4) if hits else 0.0,
        "gap": round(hits[0].score - hits[min(4, len(hits) - 1)].score, 4) if hits else 0.0,
        "candidates": len(hits),
    }


def retry_reason(check: dict[str, float]) -> str | None:
    if not check["candidates"]:
        return "no candidates"
    if check["coverage"] < MIN_COVERAGE:
        return f"top results cover {check['coverage']:.0%} of the query's words"
    return None


def fallback_strategy(strategy: str, has_entities: bool) -> str:
    """The strategy of the retry: after dense search alone, hybrid (BM25 brings the query's words the check
    found missing, and the dense list is reused); after a search with BM25, a graph walk when the index has
    entities; after a graph strategy, hybrid."""
    if strategy == "naive":
        return "hybrid"
    if strategy in ("hybrid", "lexical"):
        return "hippo" if has_entities else ("hybrid" if strategy != "hybrid" else "lexical")
    return "hybrid"
