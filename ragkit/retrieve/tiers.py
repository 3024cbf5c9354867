"""Dense search over a progressive index being filled (ragkit/ingest/fill.py): the chunks filled so far are
searched with the full model, the rest with the fast one, and the two lists become one.

Two models' cosines are not comparable (a static model's run low, e5's high and narrow), so each hit is
placed by how far it stands above the typical chunk in its own model's space: its cosine's z-score against the
cosines of the same query to a fixed sample of that tier's chunks (``SAMPLE``). That holds however the fill
has gone (evenly through the index, or one folder first), and the merged list's scores (z / ``Z_SCALE``) are
read by fusion and reranking as one model's similarities are.
"""

from __future__ import annotations

from typing import Any

import numpy as np

MAX_OVERFETCH = 20  # at most this many times the hits wanted are fetched from one tier
SAMPLE = 256  # chunks of each tier whose cosines to the query set its typical level
Z_SCALE = 10.0  # a hit's score is its z-score over this


def zscores(cosines: np.ndarray, sample: np.ndarray, query: np.ndarray) -> np.ndarray:
    """``cosines`` as z-scores against the query's cosines to the ``sample`` rows (unit vectors)."""
    base = sample @ (query / (np.linalg.norm(query) or 1.0)) if len(sample) else np.zeros(1)
    return (np.asarray(cosines) - float(base.mean())) / max(float(base.std()), 1e-6)


def merge(
    fast: list[dict[str, Any]], fast_z: np.ndarray, full: list[dict[str, Any]], full_z: np.ndarray, limit: int
) -> list[dict[str, Any]]:
    """Both tiers' rows as one list, best z-score first, with ``_distance`` = 1 − z / ``Z_SCALE``."""
    placed = sorted(zip([*fast_z, *full_z], [*fast, *full]), key=lambda p: -p[0])
    return [{**row, "_distance": 1.0 - float(z) / Z_SCALE} for z, row in placed[:limit]]
