"""Optional second stage: a sentence-transformers CrossEncoder from a local folder.

When none is configured, or loading or scoring fails, the ranking from the
structure features stands and the plan says why (never an error).
"""

from __future__ import annotations

import os
from pathlib import Path

from ragkit.records import Hit

_CACHE: dict[str, object] = {}
TOP_N = 50


class CrossUnavailable(Exception):
    pass


def load_cross_encoder(path: str | None):
    if not path:
        raise CrossUnavailable('no cross-encoder configured (set cross_encoder = "DIR" under [query] in ragkit.toml)')
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise CrossUnavailable(f"cross-encoder folder not found: {path}")
    key = str(folder.resolve())
    if key not in _CACHE:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import CrossEncoder

            _CACHE[key] = CrossEncoder(key, device="cpu", local_files_only=True)
        except Exception as exc:  # a broken folder fails in many ways
            raise CrossUnavailable(f"cannot load cross-encoder {path}: {type(exc).__name__}: {exc}") from exc
    return _CACHE[key]


def cross_rerank(query: str, hits: list[Hit], path: str | None, top_n: int = TOP_N) -> list[Hit]:
    """Re-order the first ``top_n`` hits by cross-encoder score; raises CrossUnavailable."""
    model = load_cross_encoder(path)
    head, tail = hits[:top_n], hits[top_n:]
    if not head:
        return hits
    try:
        scores = model.predict([(query, f"{h.header}\n{h.text}") for h in head], show_progress_bar=False)
    except Exception as exc:
        raise CrossUnavailable(f"cross-encoder scoring failed: {type(exc).__name__}: {exc}") from exc
    for h, s in zip(head, scores):
        h.features["cross_encoder"] = float(s)
        h.score = float(s)
    head.sort(key=lambda h: -h.score)
    floor = min(h.score for h in head)
    for h in tail:  # keep the tail below the re-scored head
        h.score = floor - 1.0 - (1.0 / (1.0 + max(h.score, 0.0)))
    return head + tail
