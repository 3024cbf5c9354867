"""A deterministic fake embedder for fast unit tests (hashed bag of words)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator

import numpy as np


def _bucket(word: str, dim: int) -> int:
    return int.from_bytes(hashlib.blake2b(word.encode(), digest_size=4).digest(), "little") % dim


class FakeEmbedder:
    """Hashed bag of words; ``synonyms`` maps a word to another whose vector it takes (a known "meaning")."""

    def __init__(
        self,
        dim: int = 64,
        name: str = "fake",
        fingerprint: str = "fake-0001",
        max_tokens: int = 256,
        synonyms: dict[str, str] | None = None,
    ):
        self.name, self.dimension, self.fingerprint, self.max_tokens = name, dim, fingerprint, max_tokens
        self.synonyms = synonyms or {}
        self.encoded = 0  # texts embedded so far (tests check incremental work)

    def count_tokens(self, texts: list[str]) -> list[int]:
        return [len(re.findall(r"\w+|[^\w\s]", t)) for t in texts]

    def _vec(self, text: str) -> np.ndarray:
        v = np.zeros(self.dimension, dtype=np.float32)
        for w in re.findall(r"\w+", text.lower()):
            v[_bucket(self.synonyms.get(w, w), self.dimension)] += 1.0
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

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return np.array([self._vec(t) for t in texts], dtype=np.float32)


class FakeGenerator:
    """A deterministic stand-in for ragkit.generate.Generator (tokens are words).

    ``answers``: the output of every call (str), outputs by a substring of the prompt's last text after
    "Text:" (dict, else ``default``), or a function of the prompt. ``stream`` yields ``pieces`` when given,
    else the output in one piece; ``error`` is raised by every call. ``prompts`` records each prompt.
    """

    name = "fake.gguf"
    chat = None  # no chat template: prompts are completed as they are

    def __init__(
        self,
        answers: str | dict | Callable[[str], str] = "",
        default: str = "not json at all",
        pieces: list[str] | None = None,
        error: Exception | None = None,
        n_ctx: int = 2048,
    ):
        self.answers, self.default, self.pieces, self.error, self.n_ctx = answers, default, pieces, error, n_ctx
        self.prompts: list[str] = []
        self.temperature: float | None = None

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def prompt_tokens(self, prompt: str) -> int:
        return self.count_tokens(prompt)

    def complete(
        self, prompt: str, max_tokens: int = 256, stop=None, temperature: float = 0.0, repeat_penalty: float = 1.0
    ) -> str:
        self.prompts.append(prompt)
        self.temperature = temperature
        if self.error:
            raise self.error
        if callable(self.answers):
            return self.answers(prompt)
        if isinstance(self.answers, str):
            return self.answers
        tail = prompt.rsplit("Text:", 1)[-1]
        return next((out for key, out in self.answers.items() if key in tail), self.default)

    def stream(
        self, prompt: str, max_tokens: int = 512, stop=None, temperature: float = 0.3, repeat_penalty: float = 1.0
    ) -> Iterator[str]:
        out = self.complete(prompt, max_tokens, stop, temperature, repeat_penalty)
        yield from self.pieces if self.pieces is not None else [out]
