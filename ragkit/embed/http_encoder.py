"""Embeddings from a server's OpenAI-compatible ``/embeddings`` endpoint (Ollama, llama-server, vLLM, LM Studio,
LocalAI, TEI, infinity, hosted APIs), spec ``http://host:port/v1#model``.

Servers answer in their own ways, and the embedder meets each: one vector per token (llama-cpp-python's server
for a GGUF without a pooling type) is mean-pooled here; a batch the server refuses as too large is split; a
text over its input limit is cut (and counted, with a warning); every vector is checked (width, NaN). What it
did is kept in ``notes`` (``ragkit models`` prints them). Token counts for chunking are estimated with the
bundled WordPiece tokenizer (the server's own tokenizer is not at hand): a conservative count for most models.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

import numpy as np

from ragkit.embed.models import Embedder, bundled_model_dir
from ragkit.embed.pooling import pooled, stacked
from ragkit.errors import ModelUnavailable
from ragkit.httpjson import Endpoint, InputTooLarge
from ragkit.modelspec import ModelSpec

MIN_CHARS = 64  # a text is cut in halves while the server refuses it, down to this


class HttpEmbedder(Embedder):
    encoder = "http"

    def __init__(self, spec: ModelSpec, batch_size: int = 32, max_tokens: int = 512, timeout: float = 120.0):
        self.spec = spec
        self.name = spec.name
        self.batch_size = max(1, batch_size)
        self.max_tokens = max_tokens
        self.endpoint = Endpoint(spec.url, spec.api_key(), timeout=timeout)
        self.notes: list[str] = []
        self.truncated = 0
        self._tokenizer = None
        self.dimension: int | None = None
        self.dimension = int(self._embed(["dimension"])[0].shape[0])
        self.fingerprint = hashlib.sha256(f"{spec.raw}|{self.dimension}".encode()).hexdigest()[:16]

    def _note(self, text: str) -> None:
        if text not in self.notes:
            self.notes.append(text)

    def _request(self, texts: list[str]) -> list[np.ndarray]:
        out = self.endpoint.post("/embeddings", {"model": self.spec.name, "input": texts})
        data = out.get("data") if isinstance(out, dict) else None
        if not isinstance(data, list) or len(data) != len(texts):
            raise ModelUnavailable(
                f"{self.spec.url}/embeddings returned {len(data) if isinstance(data, list) else 'no'} embeddings for "
                f"{len(texts)} texts",
                hint="Is it an OpenAI-compatible embeddings endpoint?",
            )
        rows = sorted(data, key=lambda d: d.get("index", 0))
        if any(
            isinstance(r.get("embedding"), list) and r["embedding"] and isinstance(r["embedding"][0], list)
            for r in rows
        ):
            self._note("the server returned one vector per token: mean-pooled here")
        return [pooled(r.get("embedding"), f"{self.spec.url}/embeddings") for r in rows]

    def _embed(self, texts: list[str], cut: bool = False) -> list[np.ndarray]:
        """Vectors for ``texts``, splitting a refused batch and cutting a refused text (``cut``: this text was
        cut already, and is counted once)."""
        try:
            return self._request(texts)
        except InputTooLarge:
            if len(texts) > 1:
                self._note(f"the server refused a batch of {len(texts)}: split")
                half = len(texts) // 2
                self.batch_size = max(1, min(self.batch_size, half))
                return self._embed(texts[:half]) + self._embed(texts[half:])
            text = texts[0]
            if len(text) <= MIN_CHARS:
                raise
            self.truncated += not cut
            self._note("texts over the server's input limit were cut to fit (the rest of such a chunk is not embedded)")
            return self._embed([text[: len(text) // 2]], cut=True)

    def count_tokens(self, texts: list[str]) -> list[int]:
        if self._tokenizer is None:
            from tokenizers import Tokenizer  # the bundled model's WordPiece vocabulary, as an estimate

            self._tokenizer = Tokenizer.from_file(str(bundled_model_dir() / "tokenizer.json"))
            self._tokenizer.no_truncation()
            self._tokenizer.no_padding()
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts, add_special_tokens=False)]

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        vectors: list[np.ndarray] = []
        i = 0
        while i < len(texts):
            batch = texts[i : i + self.batch_size]
            vectors.extend(self._embed(batch))
            i += len(batch)
            if progress:
                progress(len(batch))
        return stacked(vectors, self.dimension, f"{self.spec.url}/embeddings")
