"""Fusion of rankings: weighted reciprocal rank fusion, the score-normalised convex combination of dense and BM25
(hybrid's default), and a graph ranking's scores added to that."""

from __future__ import annotations

from ragkit.records import Hit


def _merge(fused: dict[str, Hit], name: str, hits: list[Hit]) -> list[tuple[int, Hit, Hit]]:
    """Each of ``hits`` into ``fused`` (a copy per chunk, score 0 when new), recording its 1-based rank and raw
    score in list ``name``; (rank, hit, copy) for each."""
    out = []
    for rank, hit in enumerate(hits, start=1):
        cur = fused.get(hit.chunk_id)
        if cur is None:
            cur = fused[hit.chunk_id] = Hit(**{**hit.__dict__, "ranks": {}, "scores": {}, "score": 0.0})
        cur.ranks[name] = rank
        cur.scores[name] = hit.score
        out.append((rank, hit, cur))
    return out


def _ordered(fused: dict[str, Hit]) -> list[Hit]:
    return sorted(fused.values(), key=lambda h: (-h.score, h.chunk_id))


def weighted_rrf(ranked: dict[str, list[Hit]], weights: dict[str, float], k: int = 60) -> list[Hit]:
    """score(d) = Σ_lists w_list / (k + rank_list(d)); ranks are 1-based.

    The returned hits are copies carrying every list's rank and raw score.
    """
    fused: dict[str, Hit] = {}
    for name, hits in ranked.items():
        w = weights.get(name, 1.0)
        for rank, _, cur in _merge(fused, name, hits):
            cur.score += w / (k + rank)
    return _ordered(fused)


def with_retrievers(fused: list[Hit], original: list[Hit]) -> list[Hit]:
    """``fused`` (a fusion of the query's hits, ``original``, with those of more queries) with each hit's
    scores and ranks by the original query's own retrievers (dense, BM25, a graph's) beside the fused lists': what
    the reranker, the retry's check and the answer scorer read (a hit only the other queries found has none)."""
    own = {h.chunk_id: h for h in original}
    for h in fused:
        first = own.get(h.chunk_id)
        if first is not None:
            h.scores, h.ranks = {**first.scores, **h.scores}, {**first.ranks, **h.ranks}
    return fused


NORM_DEPTH = 100  # a list's scores are min-max normalised over its top this many (the same whatever the fetch)


def convex(dense: list[Hit], lexical: list[Hit], alpha: float, query_vector) -> list[Hit]:
    """Score-normalised convex combination: alpha × dense + (1 - alpha) × BM25, each min-max normalised over the
    top ``NORM_DEPTH`` of its list and clipped at 0. A chunk only BM25 found gets its dense score from its own
    vector (with exact dense search it lies below the list and counts 0; with an approximate vector index it may
    have been missed); one only dense search found gets 0 from BM25 (it scored below the list).

    Measured (nDCG@10, hybrid as queries run it: reranking, title links, retry): scifact-train 0.736 vs weighted
    RRF's 0.723, hotpotqa-100 0.913 vs 0.897, rust-book-queries 0.941 vs 0.928; the reranker's text relevance is
    the fused score, and a score keeps how far apart two chunks are where a rank does not. On the bare lists
    (no reranking, scripts/bench_quality.py fusion) RRF ranks better: 0.721 vs 0.705 on scifact-train.
    Hits are copies carrying each list's rank and raw score; ``score`` is the combination."""
    import numpy as np

    q = np.asarray(query_vector, dtype=np.float32)
    q = q / (np.linalg.norm(q) or 1.0)

    def scale(hits: list[Hit]) -> tuple[float, float]:
        top = [h.score for h in hits[:NORM_DEPTH]]
        low, high = (min(top), max(top)) if top else (0.0, 1.0)
        return low, (high - low) or 1.0

    (d_low, d_span), (b_low, b_span) = scale(dense), scale(lexical)
    fused: dict[str, Hit] = {}
    _merge(fused, "dense", dense)
    _merge(fused, "lexical", lexical)
    for h in fused.values():
        cosine = (
            h.scores["dense"]
            if "dense" in h.scores
            else (float(np.dot(np.asarray(h.vector, dtype=np.float32), q)) if h.vector is not None else d_low)
        )
        d = max(0.0, (cosine - d_low) / d_span)
        b = max(0.0, (h.scores["lexical"] - b_low) / b_span) if "lexical" in h.scores else 0.0
        h.score = alpha * d + (1 - alpha) * b
    return _ordered(fused)


def with_graph(text: list[Hit], graph: list[Hit], name: str, weight: float) -> list[Hit]:
    """A graph ranking's scores (PPR mass, …: non-negative, divided by the list's highest) added with ``weight`` to
    the text scores of ``convex`` (weighted 1 - ``weight``). Not min-max: the last of a short graph list would
    count as nothing."""
    top = max((h.score for h in graph), default=0.0) or 1.0
    fused = {
        h.chunk_id: Hit(
            **{**h.__dict__, "ranks": dict(h.ranks), "scores": dict(h.scores), "score": (1 - weight) * h.score}
        )
        for h in text
    }
    for _, hit, cur in _merge(fused, name, graph):
        cur.score += weight * max(0.0, hit.score / top)
    return _ordered(fused)
