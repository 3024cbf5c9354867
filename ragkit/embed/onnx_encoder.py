"""The ONNX Runtime encoder: the model's tokenizer (``tokenizers``) and its exported graph, no torch.

Texts are encoded one at a time: padding a batch to its longest text cost more than batching saved (int8 on two
cores: 98 texts/s one by one, 62 in batches of 16; scripts/README.md, "Index cost"). A list's texts run on
``SIDE_BY_SIDE`` sessions at once, each on its share of the cores (two sessions of one thread beat one of two
threads on 200 Swedish chunks: multilingual-e5-small 1.12×, MiniLM int8 1.15×, the same vectors). For queries the
thread pool does not spin between runs (spinning workers took a core from the graph work that follows a query:
hippo's PageRank 12 → 45 ms), which costs a 20-token query 4.6 instead of 3.3 ms. Pooling (mean, CLS or max, as the
model's ``1_Pooling`` says) and normalisation run in numpy.
"""

from __future__ import annotations

import json
import os
import queue
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from ragkit.embed.export import _transformer_dir, graph_path, word_embeddings
from ragkit.embed.models import BUNDLED, Embedder, fingerprint, max_seq_length, model_name, prompts, resolve_model_dir
from ragkit.errors import ModelUnavailable

PROGRESS_EVERY = 32  # texts between progress updates
SIDE_BY_SIDE = 2  # sessions encoding a list's texts at once, each on its share of the cores (module docstring)


def _cores() -> int:
    """The cores encoding may use: OMP_NUM_THREADS (Ray sets it to a worker's CPUs), else all."""
    return int(os.environ.get("OMP_NUM_THREADS") or 0) or os.cpu_count() or 1


def _pooling(model_dir: Path) -> tuple[str, int | None]:
    """The model's pooling (mean, CLS or max, from ``1_Pooling``) and its vectors' width when it says."""
    path = model_dir / "1_Pooling" / "config.json"
    if path.is_file():
        cfg = json.loads(path.read_text())
        width = cfg.get("word_embedding_dimension")
        for mode in ("cls_token", "max_tokens"):
            if cfg.get(f"pooling_mode_{mode}"):
                return mode, width
        return "mean_tokens", width
    return "mean_tokens", None


def _cut(enc, limit: int) -> tuple[list[int], list[int], list[int]]:
    """An encoding's ids, attention mask and type ids cut to ``limit`` tokens as the tokenizer's own truncation
    does: the text's first tokens, then its closing special tokens ([SEP], </s>)."""
    rows = (enc.ids, enc.attention_mask, enc.type_ids)
    if len(enc.ids) <= limit:
        return rows
    tail = 0
    while tail < len(enc.special_tokens_mask) and enc.special_tokens_mask[-1 - tail]:
        tail += 1
    return tuple(r[: limit - tail] + (r[-tail:] if tail else []) for r in rows)


def _unit(v: np.ndarray) -> np.ndarray:
    return (v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)).astype(np.float32)


class OnnxEmbedder(Embedder):
    def __init__(self, spec: str = BUNDLED, quantized: bool = False, graph: Path | None = None):
        """``spec``'s model run by its int8 or full-precision graph (``graph``: this one instead)."""
        self.spec = spec
        self.model_dir = resolve_model_dir(spec)
        self.name = model_name(spec, self.model_dir)
        self.fingerprint = fingerprint(self.model_dir)
        self.max_tokens = max_seq_length(self.model_dir)
        self.quantized = quantized
        self.encoder = "onnx-int8" if quantized else "onnx"
        self.path = graph or graph_path(self.model_dir, self.fingerprint, quantized)
        from tokenizers import Tokenizer

        tok_file = _transformer_dir(self.model_dir) / "tokenizer.json"
        if not tok_file.is_file():
            raise ModelUnavailable(f"{self.model_dir} has no tokenizer.json", hint='Index with encoder = "torch".')
        # one tokenizer for counting (whole texts) and encoding (cut to max_tokens in _vectors): a tokenizer of
        # multilingual-e5-small's vocabulary holds 130 MB
        self._tokenizer = Tokenizer.from_file(str(tok_file))
        self._tokenizer.no_padding()
        self._tokenizer.no_truncation()
        self._pooling, width = _pooling(self.model_dir)
        self._query_prompt, self._document_prompt = prompts(spec)
        self._sessions: dict[str, object] = {}  # created on first use: an indexing run never needs "query"
        self._rows = None  # a large vocabulary's word embeddings (memory-mapped) when the graph starts after them
        self.dimension = width or int(self.encode_query("dimension").shape[0])

    def _session(self, kind: str):
        """ "query": the pool sleeps between runs; "batch": it spins (runs follow each other); "side0",
        "side1", …: the sessions that encode a list side by side, each on its share of the cores."""
        if kind not in self._sessions:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            # a query on one thread when int8 (2.1 ms; 2.6 on two), on every core when full precision (4.2 / 6.2)
            cores = _cores()
            if kind == "query":
                opts.intra_op_num_threads = 1 if self.quantized else cores
            else:
                opts.intra_op_num_threads = max(cores // SIDE_BY_SIDE, 1) if kind.startswith("side") else cores
            opts.inter_op_num_threads = 1
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0" if kind == "query" else "1")
            opts.log_severity_level = 3
            # the layout optimisations of ORT_ENABLE_ALL are for convolutions (NCHWc); a transformer's graph comes
            # out the same without them (the same vectors, to the bit) and loads in 51 instead of 81 ms, which a
            # one-shot query pays
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_EXTENDED
            try:
                self._sessions[kind] = ort.InferenceSession(str(self.path), opts, providers=["CPUExecutionProvider"])
            except Exception as exc:  # a damaged cache file
                raise ModelUnavailable(
                    f"cannot load {self.path}: {exc}", hint=f"Delete {self.path.parent} to export it again."
                ) from exc
        return self._sessions[kind]

    def count_tokens(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts, add_special_tokens=False)]

    def _vectors(self, session, texts: list[str]) -> np.ndarray:
        """Unit vectors of ``texts`` in one run (padded to the longest; pooling skips the padding)."""
        encs = [_cut(e, self.max_tokens) for e in self._tokenizer.encode_batch(texts)]
        width = max(len(ids) for ids, _, _ in encs)
        feed = {
            name: np.zeros((len(encs), width), dtype=np.int64)
            for name in ("input_ids", "attention_mask", "token_type_ids")
        }
        for row, (ids, mask, types) in enumerate(encs):
            n = len(ids)
            feed["input_ids"][row, :n], feed["attention_mask"][row, :n] = ids, mask
            feed["token_type_ids"][row, :n] = types
        return _unit(self._pooled(session, feed))

    def _pooled(self, session, feed: dict[str, np.ndarray]) -> np.ndarray:
        """The graph's last hidden state for ``feed`` (input ids, attention mask, type ids), pooled as the model
        says (not normalised)."""
        wanted = {i.name for i in session.get_inputs()}
        if "inputs_embeds" in wanted:  # a large vocabulary: its rows from the memory-mapped weights (export.py)
            if self._rows is None:
                self._rows = word_embeddings(_transformer_dir(self.model_dir))
                if self._rows is None:
                    raise ModelUnavailable(f"{self.model_dir}: the word embeddings of {self.path} are missing")
            feed["inputs_embeds"] = self._rows[feed["input_ids"]].astype(np.float32)
        hidden = session.run(None, {k: v for k, v in feed.items() if k in wanted})[0]
        mask = feed["attention_mask"][:, :, None].astype(np.float32)
        if self._pooling == "cls_token":
            return hidden[:, 0]
        if self._pooling == "max_tokens":
            return np.where(mask > 0, hidden, -np.inf).max(axis=1)
        return (hidden * mask).sum(axis=1) / np.maximum(mask.sum(axis=1), 1e-9)

    def pool_ids(self, ids: np.ndarray) -> np.ndarray:
        """The pooled (not normalised) vectors of rows of token ids, special tokens included, all rows of one
        length (no padding), in one run: a static embedder's distillation (ragkit/embed/static.py) runs every
        token of the vocabulary alone this way."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.ones_like(ids), "token_type_ids": np.zeros_like(ids)}
        return self._pooled(self._session("batch"), feed)

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Unit vectors of ``texts``, one text per run, ``SIDE_BY_SIDE`` runs at a time (the module docstring)."""
        out = np.zeros((len(texts), getattr(self, "dimension", 0) or 1), dtype=np.float32)
        sides = SIDE_BY_SIDE if _cores() >= SIDE_BY_SIDE and len(texts) > 1 else 1
        if sides == 1:
            session = self._session("batch")
            for start in range(0, len(texts), PROGRESS_EVERY):
                part = texts[start : start + PROGRESS_EVERY]
                out[start : start + len(part)] = self._one_by_one(session, part)
                if progress:
                    progress(len(part))
            return out
        idle: queue.SimpleQueue = queue.SimpleQueue()
        for n in range(sides):
            idle.put(self._session(f"side{n}"))

        def run(start: int) -> np.ndarray:
            session = idle.get()
            try:
                return self._one_by_one(session, texts[start : start + step])
            finally:
                idle.put(session)

        step = min(PROGRESS_EVERY, -(-len(texts) // sides))
        with ThreadPoolExecutor(sides, thread_name_prefix="encode") as pool:
            for start, rows in zip(range(0, len(texts), step), pool.map(run, range(0, len(texts), step))):
                out[start : start + len(rows)] = rows
                if progress:
                    progress(len(rows))
        return out

    def _one_by_one(self, session, texts: list[str]) -> np.ndarray:
        return np.concatenate([self._vectors(session, [self._document_prompt + t]) for t in texts])

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Several short queries in one run (expansions, sub-queries)."""
        return self._vectors(self._session("query"), [self._query_prompt + t for t in texts])
