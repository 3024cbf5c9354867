"""What every remote or GGUF embedder does to a model's raw output: pool token vectors (mean) when a model or
server returns one vector per token, normalise, and check the numbers (a NaN or a changed width is an error,
never a vector in the index)."""

from __future__ import annotations

import numpy as np

from ragkit.errors import ModelUnavailable


def pooled(raw: list, where: str) -> np.ndarray:
    """One unit vector from a model's answer for one text: a vector, or one vector per token (mean-pooled)."""
    arr = np.asarray(raw, dtype=np.float32)
    if arr.ndim == 2:  # one vector per token (a GGUF without a pooling type, as llama-cpp-python serves it)
        arr = arr.mean(axis=0)
    if arr.ndim != 1 or arr.size == 0:
        raise ModelUnavailable(f"{where} returned an embedding of shape {arr.shape}", hint="Is it an embedding model?")
    if not np.isfinite(arr).all():
        raise ModelUnavailable(f"{where} returned an embedding with NaN or infinite values")
    norm = float(np.linalg.norm(arr))
    return arr / norm if norm > 0 else arr


def stacked(vectors: list[np.ndarray], dimension: int | None, where: str) -> np.ndarray:
    """The vectors as one matrix, all of ``dimension`` (when known)."""
    widths = {v.shape[0] for v in vectors}
    if len(widths) > 1 or (dimension is not None and widths and widths != {dimension}):
        raise ModelUnavailable(
            f"{where} returned vectors of width {sorted(widths)}, expected {dimension}",
            hint="The server may serve another model under this name; `ragkit models` probes it.",
        )
    return np.vstack(vectors).astype(np.float32) if vectors else np.zeros((0, dimension or 0), dtype=np.float32)
