"""Embeddings from a GGUF file run in-process by llama.cpp (``llama-cpp-python``), spec ``/path/model.gguf``:
bge-m3, Qwen3-Embedding, nomic-embed … pooled as the file says (mean, CLS or last token); a model without a
pooling type (a plain language model, such as the bundled GGUF) gives one vector per token, mean-pooled here.
Texts over the context are cut to it (counted in ``truncated``). Vectors are normalised."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from ragkit.embed.models import Embedder
from ragkit.embed.pooling import pooled, stacked
from ragkit.gguf import load_llama
from ragkit.modelspec import ModelSpec

N_CTX = 512  # tokens per text (a chunk is at most 240)


class GgufEmbedder(Embedder):
    encoder = "gguf"

    def __init__(self, spec: ModelSpec, n_ctx: int = N_CTX):
        self.spec = spec
        self.path = Path(spec.name)
        self.name = self.path.stem
        self.llm = load_llama(self.path, embedding=True, n_ctx=n_ctx, n_batch=n_ctx, n_ubatch=n_ctx)
        self.max_tokens = n_ctx
        self.truncated = 0
        self.notes: list[str] = []
        self.dimension = int(self.llm.n_embd())
        stat = self.path.stat()
        self.fingerprint = hashlib.sha256(f"{self.path.name}|{stat.st_size}|{self.dimension}".encode()).hexdigest()[:16]

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(self.llm.tokenize(t.encode("utf-8"), add_bos=False)) for t in texts]

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        vectors = []
        for text in texts:  # one text per decode: a batch of texts shares the context window
            if len(self.llm.tokenize(text.encode("utf-8"))) > self.max_tokens:
                self.truncated += 1
                self._note(f"texts over {self.max_tokens} tokens were cut to fit the context")
            raw = self.llm.embed(text, normalize=False, truncate=True)
            if raw and isinstance(raw[0], list) and raw[0] and isinstance(raw[0][0], list):
                raw = raw[0]  # one text: the list of its token vectors, or of its one pooled vector
            if isinstance(raw, list) and raw and isinstance(raw[0], list) and len(raw) > 1:
                self._note("the model has no pooling type: its token vectors are mean-pooled")
            vectors.append(pooled(raw, str(self.path)))
            if progress:
                progress(1)
        return stacked(vectors, self.dimension, str(self.path))
