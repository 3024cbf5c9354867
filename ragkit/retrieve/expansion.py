"""Query expansion with related words from the index's own vocabulary (seed 002).

The vocabulary words worth adding to a query (four or more letters, in at
least 3 chunks, not stop words) are embedded on the first expanded query, or
right after the run with ``expand = true`` under ``[index]``, and cached in
``cache/terms.npz`` (ragkit/store/terms.py; only new words after a re-index). At
query time the words nearest to the query vector are candidates; a word is
kept when it reaches ``MIN_SIMILARITY``, is not a query word or a variant of
one (same first five letters: the stemmer already joins those), and at most
``MAX_TERMS`` are kept. The expanded query (original + related words) is
retrieved with BM25 only, since the dense side already matches meanings, and
fused by RRF at ``SHARE`` of the original's weight.
"""

from __future__ import annotations

import re

MAX_TERMS = 3
MIN_SIMILARITY = 0.45
CANDIDATES = 30
SHARE = 0.3
_WORD = re.compile(r"[a-zà-öø-ÿß]{3,}")


def _stem(word: str) -> str:
    return word[:5]


def related_terms(
    reader, query_vector, text: str, max_terms: int = MAX_TERMS, min_similarity: float = MIN_SIMILARITY
) -> list[tuple[str, float]]:
    """Up to ``max_terms`` (word, similarity) from the index vocabulary, nearest to the query first."""
    words = set(_WORD.findall(text.lower()))
    stems = {_stem(w) for w in words if len(w) >= 5}
    out = []
    for row in reader.knowledge.search("terms", query_vector, CANDIDATES):
        term, sim = row["term"], float(row["similarity"])
        if sim < min_similarity:
            break
        if term in words or _stem(term) in stems or any(_stem(term) == _stem(t) for t, _ in out):
            continue
        out.append((term, round(sim, 4)))
        if len(out) == max_terms:
            break
    return out
