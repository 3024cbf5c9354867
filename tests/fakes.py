"""A deterministic fake embedder for fast unit tests (hashed bag of words)."""

from __future__ import annotations

import hashlib
import re

import numpy as np


def _bucket(word: str, dim: int) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little") % dim


class FakeEmbedder:
    def __init__(self, dim: int = 64, name: str = "fake", fingerprint: str = "fake-0001", max_tokens: int = 256):
        self.name, self.dimension, self.fingerprint, self.max_tokens = name, dim, fingerprint, max_tokens
        self.encoded = 0  # texts embedded so far (tests check incremental work)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(re.findall(r"\w+|[^\w\s]", t)) for t in texts]

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dimension, dtype=np.float32)
        for w in re.findall(r"\w+", text.lower()):
            v[_bucket(w, self.dimension)] += 1.0
        n = np.linalg.norm(v)
        return v / n if n else v + 1.0 / np.sqrt(self.dimension)

    def encode(self, texts, progress=None):
        self.encoded += len(texts)
        out = np.stack([self._vec(t) for t in texts]) if texts else np.zeros((0, self.dimension), np.float32)
        if progress:
            progress(len(texts))
        return out

    def encode_query(self, text: str) -> np.ndarray:
        return self._vec(text)


class FakeGenerator:
    """A deterministic stand-in for the GGUF model: canned outputs by substring of the prompt's last text."""

    name = "fake.gguf"

    def __init__(self, answers: dict[str, str], default: str = "not json at all"):
        self.answers, self.default, self.prompts = answers, default, []

    def complete(self, prompt: str, max_tokens: int = 256, stop=None, temperature: float = 0.0) -> str:
        self.prompts.append(prompt)
        tail = prompt.rsplit("Text:", 1)[-1]
        return next((out for key, out in self.answers.items() if key in tail), self.default)
