"""Dense search over a progressive index being filled (ragkit/ingest/fill.py): the chunks filled so far are
searched with the full model, the rest with the fast one, and the two lists become one.

Their cosines are not comparable (two models), so each hit is placed by its estimated rank in the whole index:
rank r (from 1) in a list over n of the N chunks stands for rank r·N/n overall, assuming the chunks that
answer are spread like the rest. The merged list's scores fall with that estimate (``score``), so fusion and
reranking read them as they read one model's similarities.
"""

from __future__ import annotations

from typing import Any

MAX_OVERFETCH = 20  # at most this many times the hits wanted are fetched from one tier
SCALE = 50.0  # an estimated overall rank of SCALE scores 0.5


def score(overall_rank: float) -> float:
    return 1.0 / (1.0 + overall_rank / SCALE)


def merge(fast: list[dict[str, Any]], n_fast: int, full: list[dict[str, Any]], n_full: int, limit: int) -> list[dict]:
    """The two tiers' rows (each best first, over ``n_fast`` and ``n_full`` chunks) as one list, best first,
    with ``_distance`` = 1 − score of the estimated overall rank."""
    total = max(n_fast + n_full, 1)
    placed = [
        (r * total / max(n, 1), row) for rows, n in ((fast, n_fast), (full, n_full)) for r, row in enumerate(rows, 1)
    ]
    placed.sort(key=lambda p: p[0])
    out = []
    for rank, row in placed[:limit]:
        out.append({**row, "_distance": 1.0 - score(rank)})
    return out
