"""Reranker models: the ``rerank`` role. Each scores (query, document) pairs, higher is better:

- ``bundled:ragkit-reranker`` (the default): the cross-encoder ragkit trains and ships (ragkit/rerank/bundled.py),
  run by ONNX Runtime;
- a local CrossEncoder folder (sentence-transformers, torch);
- a GGUF file run in-process by llama.cpp: a cross-encoder converted with its classification head (pooling
  type "rank", as bge-reranker-v2-m3) scores a pair in one pass; any other model (Qwen3-Reranker, an instruct
  model) is asked whether the document answers the query and scores the probability of "yes" against "no";
- a server's rerank API, ``{base}/rerank`` in the Cohere/Jina shape (llama-server ``--reranking``,
  text-embeddings-inference, infinity, vLLM, hosted APIs): ``{"results": [{"index", "relevance_score"}]}``
  or TEI's ``[{"index", "score"}]``.

A reranker that cannot be loaded or fails raises ``RerankUnavailable``: the structure features' order stands
and the plan says why.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any, Protocol

from ragkit.errors import RagkitError
from ragkit.extras import missing
from ragkit.gguf import load_llama, read_metadata
from ragkit.httpjson import Endpoint, InputTooLarge
from ragkit.modelspec import ModelSpec, parse_spec
from ragkit.rerank import bundled

POOLING_RANK = 4  # llama.cpp's LLAMA_POOLING_TYPE_RANK
N_CTX = 1024  # tokens per (query, document) pair
JUDGE = (
    'Judge whether the Document answers the Query. The answer can only be "yes" or "no".\n\n'
    "Query: {query}\nDocument: {document}"
)


class RerankUnavailable(Exception):
    """A reranker could not be loaded or failed to score (the features' order stands)."""


class Reranker(Protocol):
    name: str

    def score(self, query: str, documents: list[str]) -> list[float]: ...


class FolderReranker:
    """A sentence-transformers CrossEncoder folder."""

    kind = "folder"

    def __init__(self, spec: ModelSpec):
        folder = Path(spec.name)
        if not folder.is_dir():
            raise RerankUnavailable(f"cross-encoder folder not found: {spec.raw}")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        try:
            from sentence_transformers import CrossEncoder
        except ImportError as exc:  # asked for without its extra: an error, not a degraded ranking
            raise missing("torch", f"the cross-encoder folder {folder.name}") from exc
        try:
            self.model = CrossEncoder(str(folder), device="cpu", local_files_only=True)
        except Exception as exc:  # a broken folder fails in many ways
            raise RerankUnavailable(f"cannot load cross-encoder {spec.raw}: {type(exc).__name__}: {exc}") from exc
        self.name = folder.name

    def score(self, query: str, documents: list[str]) -> list[float]:
        return [float(s) for s in self.model.predict([(query, d) for d in documents], show_progress_bar=False)]


class GgufReranker:
    """A GGUF reranker in-process: rank pooling when the file has a classification head, else yes/no."""

    kind = "gguf"

    def __init__(self, spec: ModelSpec):
        path = Path(spec.name)
        self.name = path.stem
        try:
            meta = read_metadata(path)
            arch = meta.get("general.architecture", "")
            self.mode = "rank" if meta.get(f"{arch}.pooling_type") == POOLING_RANK else "yes/no"
            params = {"embedding": True, "pooling_type": POOLING_RANK} if self.mode == "rank" else {}
            self.llm = load_llama(path, n_ctx=N_CTX, n_batch=N_CTX, n_ubatch=N_CTX, **params)
        except RagkitError as exc:
            raise RerankUnavailable(exc.message) from exc
        if self.mode == "yes/no":
            self.yes, self.no = self._first_token("yes"), self._first_token("no")
            self.template = self.llm.metadata.get("tokenizer.chat_template")

    def _first_token(self, word: str) -> int:
        return self.llm.tokenize(word.encode(), add_bos=False, special=False)[0]

    def _tokens(self, text: str, bos: bool) -> list[int]:
        return self.llm.tokenize(text.encode("utf-8"), add_bos=bos, special=False)

    def pair_tokens(self, query: str, document: str) -> list[int]:
        """Rank mode: ``[BOS] query [EOS][SEP] document [EOS]`` (llama.cpp's rerank layout), cut to the context."""
        q = self._tokens(query, bos=False)[: N_CTX // 4]
        room = N_CTX - len(q) - 4
        d = self._tokens(document, bos=False)[:room]
        sep = self.llm.token_eos() if self.llm._model.token_sep() == -1 else self.llm._model.token_sep()
        return [self.llm.token_bos(), *q, self.llm.token_eos(), sep, *d, self.llm.token_eos()]

    def judge_prompt(self, query: str, document: str) -> list[int]:
        """Yes/no mode: the question as one user turn (through the model's chat template when it has one)."""
        text = JUDGE.format(query=query, document=document[:4000])
        if self.template:
            from llama_cpp.llama_chat_format import Jinja2ChatFormatter

            eos = self.llm.detokenize([self.llm.token_eos()], special=True).decode("utf-8", "replace")
            bos = self.llm.detokenize([self.llm.token_bos()], special=True).decode("utf-8", "replace")
            turn = Jinja2ChatFormatter(self.template, eos_token=eos, bos_token=bos)(
                messages=[{"role": "user", "content": text}]
            )
            tokens = self.llm.tokenize(turn.prompt.encode("utf-8"), add_bos=not turn.added_special, special=True)
        else:
            tokens = self._tokens(text + "\nAnswer:", bos=True)
        return tokens[-(N_CTX - 8) :]

    def score(self, query: str, documents: list[str]) -> list[float]:
        try:
            return [self._rank(query, d) if self.mode == "rank" else self._yes(query, d) for d in documents]
        except (ValueError, RuntimeError) as exc:
            raise RerankUnavailable(f"{self.name} failed to score: {exc}") from exc

    def _rank(self, query: str, document: str) -> float:
        import llama_cpp

        batch = self.llm._batch
        batch.reset()
        batch.add_sequence(self.pair_tokens(query, document), 0, True)
        self.llm._ctx.kv_cache_clear()
        self.llm._ctx.decode(batch)
        return float(llama_cpp.llama_get_embeddings_seq(self.llm._ctx.ctx, 0)[0])

    def _yes(self, query: str, document: str) -> float:
        import numpy as np

        self.llm.reset()
        self.llm.eval(self.judge_prompt(query, document))
        logits = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self.llm.n_vocab(),))  # the last token's
        yes, no = float(logits[self.yes]), float(logits[self.no])
        top = max(yes, no)
        return math.exp(yes - top) / (math.exp(yes - top) + math.exp(no - top))


class HttpReranker:
    """A server's rerank API (``POST {base}/rerank``)."""

    kind = "http"

    def __init__(self, spec: ModelSpec, batch_size: int = 64, timeout: float = 60.0):
        self.spec, self.name, self.batch_size = spec, spec.name, batch_size
        try:
            self.endpoint = Endpoint(spec.url, spec.api_key(), timeout=timeout)
        except RagkitError as exc:
            raise RerankUnavailable(exc.message) from exc

    def score(self, query: str, documents: list[str]) -> list[float]:
        out: list[float] = []
        try:
            for i in range(0, len(documents), self.batch_size):
                out.extend(self._scores(query, documents[i : i + self.batch_size]))
        except RagkitError as exc:
            raise RerankUnavailable(exc.message) from exc
        return out

    def _scores(self, query: str, documents: list[str]) -> list[float]:
        body = {
            "model": self.spec.name,
            "query": query,
            "documents": documents,
            "top_n": len(documents),
            "return_documents": False,
        }
        try:
            answer = self.endpoint.post("/rerank", body)
        except InputTooLarge:
            if len(documents) == 1:
                raise
            self.batch_size = max(1, len(documents) // 2)
            half = len(documents) // 2
            return self._scores(query, documents[:half]) + self._scores(query, documents[half:])
        return parse_rerank(answer, len(documents), f"{self.spec.url}/rerank")


def parse_rerank(answer: Any, n: int, where: str) -> list[float]:
    """Scores in document order from a rerank answer: Cohere/Jina ``{"results": [{"index",
    "relevance_score"}]}`` (also under ``data``) or TEI's ``[{"index", "score"}]``."""
    rows = answer.get("results", answer.get("data")) if isinstance(answer, dict) else answer
    scores: dict[int, float] = {}
    for row in rows if isinstance(rows, list) else []:
        if isinstance(row, dict) and "index" in row:
            value = row.get("relevance_score", row.get("score"))
            if isinstance(value, (int, float)) and math.isfinite(value):
                scores[int(row["index"])] = float(value)
    if sorted(scores) != list(range(n)):
        raise RerankUnavailable(f"{where} scored {len(scores)} of {n} documents: {str(answer)[:200]}")
    return [scores[i] for i in range(n)]


_CACHE: dict[str, Reranker] = {}


def load_reranker(spec: str, keys: dict[str, str] | None = None) -> Reranker:
    """The reranker for ``spec`` (loaded once per process); ``RerankUnavailable`` when it cannot be."""
    if spec not in _CACHE:
        try:
            parsed = parse_spec(spec, keys)
        except RagkitError as exc:
            raise RerankUnavailable(exc.message) from exc
        kinds = {"folder": FolderReranker, "gguf": GgufReranker, "http": HttpReranker, "bundled": _shipped}
        if parsed.kind not in kinds:
            raise RerankUnavailable(
                f"no reranker {spec!r}: give {bundled.SPEC}, a folder, a .gguf file or a server URL"
            )
        _CACHE[spec] = kinds[parsed.kind](parsed)
    return _CACHE[spec]


def _shipped(spec: ModelSpec) -> Reranker:
    """``bundled:ragkit-reranker``: the cross-encoder ragkit trains and ships (ragkit/rerank/bundled.py)."""
    if spec.name != bundled.NAME:
        raise RerankUnavailable(f"no bundled reranker {spec.raw!r}: ragkit ships {bundled.SPEC}")
    try:
        model = bundled.shipped()
    except Exception as exc:  # onnxruntime or tokenizers missing, a damaged file
        raise RerankUnavailable(f"cannot load {bundled.SPEC}: {type(exc).__name__}: {exc}") from exc
    if model is None:
        raise RerankUnavailable(
            f"{bundled.SPEC} is not shipped (it lost to the first stage: its card in {bundled.FOLDER}); give a "
            "CrossEncoder folder, a .gguf reranker or a server, or train it with scripts/train_reranker.py"
        )
    return model
