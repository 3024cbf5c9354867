"""Static embedders distilled by ragkit from a model it already runs: one vector per token of the model's
vocabulary, a text's vector the normalised mean of its tokens' vectors (model2vec's idea, MinishLab; neither its
code nor torch, transformers or model2vec at run time). They embed thousands of texts a second where
multilingual-e5-small embeds a dozen chunks, so a large corpus gets a first tier of vectors at once.

Distillation (``distill``, once per machine, base model and width, like the ONNX export):

- every token of the base model's tokenizer, special tokens left out (their rows stay zero), runs alone
  through the base model's full-precision ONNX graph between the tokenizer's own special tokens
  (``<s> tok </s>``, ``[CLS] tok [SEP]``), ``BATCH`` tokens per run (all of one length: no padding); its
  vector is the model's pooled output, normalised: the base model's own vector of the token as a text;
- PCA (numpy, an eigendecomposition of the covariance) centres the vectors (the direction every token shares
  says nothing about a text) and keeps the ``dims`` directions of most variance;
- each row is weighted by SIF, ``SIF / (SIF + p)`` with ``p`` the token's probability, so that frequent pieces
  ("▁der", ",", "the") count little in a text's mean and rare ones fully. ``p`` comes from the vocabulary's own
  unigram log-probabilities when it has them (SentencePiece Unigram: multilingual-e5-small), else from Zipf's
  law by rank (WordPiece vocabularies are in frequency order: model2vec's estimate for every vocabulary);
- stored as ``vectors.npy`` (float16) and ``meta.json`` in ``$RAGKIT_CACHE/static/<base fingerprint>-<dims>-v
  <METHOD>/``, written into a temporary folder and renamed, under a lock. A folder that does not load as its
  meta says is distilled again; ``METHOD`` changes with the method, so an older folder is never read.

An index built with a static embedder records its own name (``multilingual-e5-small-static256``) and a
fingerprint derived from the base model's, the method, the width and the prompts: the base model's queries are
refused on it (``EmbedderMismatch``) and its queries on the base model's indexes. Its token counts are the base
model's, so both chunk a corpus the same way.

Measured on two cores shared with other jobs (scripts/bench_cost.py static): multilingual-e5-small's 126,484
tokens distil in 5–10 minutes into 62 MB (all-MiniLM-L6-v2's 29,523 in 46 s, 15 MB); the static embedder encodes
1,200–1,900 of the German laws' chunks a second (e5's full-precision graph 2.6–4 in the same runs), and the laws
index in 3.5 instead of 190 s. Its German questions (strategy auto, top-1 / top-3): 0.250 / 0.417 and
0.281 / 0.344 held out, against e5's 0.444 / 0.583 and 0.406 / 0.656 and BM25 alone's 0.139 / 0.417 and
0.250 / 0.312; hotpotqa-100 (auto, recall@2 / @5) with the MiniLM's: 0.785 / 0.925 against 0.830 / 0.930.
A first tier, not a replacement.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import time
from collections.abc import Callable
from itertools import chain
from pathlib import Path

import numpy as np

from ragkit.cache import cache_root, folder_lock
from ragkit.embed.export import _transformer_dir
from ragkit.embed.models import (
    BUNDLED,
    MULTILINGUAL,
    Embedder,
    fingerprint,
    max_seq_length,
    model_name,
    prompts,
    resolve_model_dir,
)
from ragkit.embed.onnx_encoder import OnnxEmbedder
from ragkit.errors import BadInput, ModelUnavailable
from ragkit.modelspec import parse_spec

# The choices below were measured on the German questions over the shared laws (36, and 32 held out: top-1 /
# top-3 passages of strategy auto, of which multilingual-e5-small itself finds 16 / 21 and 13 / 21, BM25 alone
# 4 / 14 and 8 / 10) and on hotpotqa-100 (recall@2 of naive, the vectors alone), with multilingual-e5-small and
# all-MiniLM-L6-v2 as bases (scripts/bench_cost.py static):
METHOD = 1  # raise when distill() writes other vectors: a new folder, a new fingerprint
# 384 (e5's own width: PCA only centres and turns) found the same questions as 256 (9 / 15 and 9 / 11) at 1.5×
# the size; hotpotqa auto 0.775 / 0.930 vs 0.785 / 0.925 (recall@2 / @5)
DIMS = 256
# model2vec's a. 1e-3: 9 / 18 and 10 / 11 (noise at this size) but hotpotqa naive recall@2 0.635 vs 0.680;
# 1e-5: 8 / 14 and 9 / 12; no weighting: 7 / 14 and 8 / 10. Zipf by rank instead of e5's own unigram
# probabilities: the same figures
SIF = 1e-4
# e5's "passage: " / "query: " before texts: 9 / 16 and 9 / 11 (a constant offset of every text's mean); the
# tokens distilled after "passage:" (5 positions a run instead of 3): 9 / 14 and 8 / 10. Neither pays.
PROMPTED = False
BATCH = 1024  # tokens per run of the base model while distilling
TEXTS_PER_STEP = 256  # texts gathered and summed at a time while encoding (bounds the float32 token rows)
SUFFIX = "-static"  # bundled:NAME-static: the static embedder of the bundled model NAME
BASES = (BUNDLED, MULTILINGUAL)


def base_of(spec: str) -> str | None:
    """The base model of a static embedder's spec (``bundled:NAME-static``, ``static:BASE``); None for any
    other spec."""
    if spec.startswith("bundled:") and spec.endswith(SUFFIX) and spec.removesuffix(SUFFIX) in BASES:
        return spec.removesuffix(SUFFIX)
    if spec.startswith("static:"):
        return parse_spec(spec).name
    return None


def static_fingerprint(base_fingerprint: str, dims: int, prompted: bool, limit: int | None = None) -> str:
    """A static embedder's identity: its base model's, the method's version, its width and prompts."""
    key = f"{base_fingerprint}|static|v{METHOD}|{dims}|prompted={prompted}|limit={limit}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def static_folder(base_fingerprint: str, dims: int, limit: int | None = None) -> Path:
    tail = f"-n{limit}" if limit else ""
    return cache_root() / "static" / f"{base_fingerprint}-{dims}-v{METHOD}{tail}"


def _tokenizer(model_dir: Path):
    from tokenizers import Tokenizer

    path = _transformer_dir(model_dir) / "tokenizer.json"
    if not path.is_file():
        raise ModelUnavailable(f"{model_dir} has no tokenizer.json", hint="A static embedder needs a fast tokenizer.")
    tok = Tokenizer.from_file(str(path))
    tok.no_padding()
    tok.no_truncation()
    return tok


def vocabulary(model_dir: Path, tok) -> tuple[np.ndarray, np.ndarray, str]:
    """The ids of the tokens a static embedder distils (every token but the special ones: added special tokens,
    the template's, the unknown token, SentencePiece's control pieces and BERT's ``[unusedN]``) and every
    token's probability (see the module docstring; 0 for the special ones) and where the probabilities come from
    ("unigram" or "zipf"); ``tok``: the model's tokenizer."""
    spec = json.loads((_transformer_dir(model_dir) / "tokenizer.json").read_text())
    vocab, n = spec["model"]["vocab"], tok.get_vocab_size()
    special = {i for i, t in tok.get_added_tokens_decoder().items() if t.special}
    special |= set(tok.encode("a").ids) - set(tok.encode("a", add_special_tokens=False).ids)
    unk = spec["model"].get("unk_id")
    if unk is None and spec["model"].get("unk_token") is not None:
        unk = tok.token_to_id(spec["model"]["unk_token"])
    special |= {unk} if unk is not None else set()
    if isinstance(vocab, list):  # Unigram: [piece, log-probability]; control pieces score 0
        scores = np.array([s for _, s in vocab], dtype=np.float64)
        special |= {i for i, s in enumerate(scores) if s == 0.0}
        p = np.exp(np.minimum(scores, 0.0))
    else:  # WordPiece, BPE: piece → id, in frequency order (Zipf: p ∝ 1 / (rank + 2))
        pieces = dict(vocab)
        special |= {i for piece, i in pieces.items() if piece.startswith("[unused") and piece.endswith("]")}
        p = np.zeros(n)
        ranked = [i for i in range(n) if i not in special]
        p[ranked] = 1.0 / np.arange(2, len(ranked) + 2)
    p[[i for i in special if 0 <= i < n]] = 0.0
    ids = np.array([i for i in range(n) if i not in special], dtype=np.int64)
    return ids, p / p.sum(), "unigram" if isinstance(vocab, list) else "zipf"


def _template(tok) -> tuple[list[int], list[int]]:
    """The special tokens the tokenizer puts before and after a text's own (``<s>`` / ``</s>``)."""
    full, own = tok.encode("a").ids, tok.encode("a", add_special_tokens=False).ids
    at = next(i for i in range(len(full)) if full[i : i + len(own)] == own)
    return full[:at], full[at + len(own) :]


def token_vectors(base: OnnxEmbedder, ids: np.ndarray, progress: Callable[[int], None] | None = None) -> np.ndarray:
    """The base model's unit vector of each token of ``ids`` as a text of its own (float32, one row each)."""
    before, after = _template(base._tokenizer)
    out = np.zeros((len(ids), base.dimension), dtype=np.float32)
    for start in range(0, len(ids), BATCH):
        part = ids[start : start + BATCH, None]
        rows = np.hstack([np.tile(before, (len(part), 1)), part, np.tile(after, (len(part), 1))]).astype(np.int64)
        v = base.pool_ids(rows)
        out[start : start + len(part)] = v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-12)
        if progress:
            progress(len(part))
    return out


def reduce(vectors: np.ndarray, dims: int) -> np.ndarray:
    """The vectors centred and projected on their ``dims`` principal directions (PCA; each direction's sign
    fixed so that its largest coordinate is positive: the same vectors give the same table)."""
    if not 0 < dims <= min(vectors.shape):
        raise BadInput(f"a static embedder of {dims} dimensions from {len(vectors)} vectors of {vectors.shape[1]}")
    x = (vectors - vectors.mean(axis=0, dtype=np.float64)).astype(np.float32)
    values, axes = np.linalg.eigh((x.T @ x).astype(np.float64))
    axes = axes[:, np.argsort(values)[::-1][:dims]]
    axes *= np.where(axes[np.abs(axes).argmax(axis=0), np.arange(dims)] < 0, -1.0, 1.0)
    return x @ axes.astype(np.float32)


def sif(p: np.ndarray, a: float = SIF) -> np.ndarray:
    """Each token's weight: a / (a + p), 1 for a token never seen, near 0 for the commonest."""
    return a / (a + p)


def distill(
    base_spec: str, dims: int = DIMS, limit: int | None = None, progress: Callable[[int], None] | None = None
) -> Path:
    """The folder of ``base_spec``'s static embedder of ``dims`` dimensions, distilled if this machine has not
    yet (or its folder does not load); ``limit``: only the first tokens of the vocabulary (tests); ``progress``
    is called with the number of tokens after each run of the base model."""
    model_dir = resolve_model_dir(base_spec)
    folder = static_folder(fingerprint(model_dir), dims, limit)
    if _loads(folder):
        return folder
    try:
        with folder_lock(folder.with_name(folder.name + ".lock")):
            if not _loads(folder):
                part = folder.with_name(folder.name + ".part")  # (one process at a time: the lock)
                shutil.rmtree(part, ignore_errors=True)
                try:
                    _distill_into(part, base_spec, model_dir, dims, limit, progress)
                    shutil.rmtree(folder, ignore_errors=True)  # a folder that does not load
                    part.rename(folder)
                finally:
                    shutil.rmtree(part, ignore_errors=True)
    except OSError as exc:
        raise ModelUnavailable(
            f"cannot write the static embedder {folder}: {exc}",
            hint="Check that the cache folder ($RAGKIT_CACHE or ~/.cache/ragkit) is writable.",
        ) from exc
    if not _loads(folder):
        raise ModelUnavailable(f"the static embedder {folder} does not load after distillation")
    return folder


def _distill_into(
    part: Path, base_spec: str, model_dir: Path, dims: int, limit: int | None, progress: Callable[[int], None] | None
) -> None:
    t = time.perf_counter()
    base = OnnxEmbedder(base_spec, quantized=False)
    ids, p, source = vocabulary(model_dir, base._tokenizer)
    ids = ids[:limit] if limit else ids
    table = np.zeros((len(p), dims), dtype=np.float16)
    table[ids] = (reduce(token_vectors(base, ids, progress), dims) * sif(p[ids])[:, None]).astype(np.float16)
    part.mkdir(parents=True)
    np.save(part / "vectors.npy", table)
    meta = {
        "base": base_spec,
        "base_name": base.name,
        "base_fingerprint": base.fingerprint,
        "method": METHOD,
        "dims": dims,
        "tokens": len(p),
        "distilled": len(ids),
        "limit": limit,
        "sif": SIF,
        "weights": source,
        "seconds": round(time.perf_counter() - t, 2),
    }
    (part / "meta.json").write_text(json.dumps(meta, indent=1))


def _loads(folder: Path) -> dict | None:
    """The folder's meta when its vectors load as it says (shape, float16), else None."""
    try:
        meta = json.loads((folder / "meta.json").read_text())
        table = np.load(folder / "vectors.npy", mmap_mode="r")
        ok = meta["method"] == METHOD and table.dtype == np.float16 and table.shape == (meta["tokens"], meta["dims"])
    except (OSError, ValueError, EOFError, KeyError, TypeError):
        return None
    return meta if ok else None


class StaticEmbedder(Embedder):
    """The ``Embedder`` of a static embedder spec (``bundled:NAME-static``, ``static:BASE``): the base model's
    tokenizer, the distilled table (memory-mapped), the mean of a text's token rows, normalised."""

    encoder = "static"

    def __init__(self, spec: str, dims: int = DIMS, prompted: bool = PROMPTED, limit: int | None = None):
        base = base_of(spec)
        if base is None:
            raise BadInput(f"{spec!r} names no static embedder", hint="bundled:NAME-static or static:BASE")
        self.spec, self.base_spec = spec, base
        model_dir = resolve_model_dir(base)
        self.folder = distill(base, dims, limit)
        self.meta = _loads(self.folder) or {}
        self._table = np.load(self.folder / "vectors.npy", mmap_mode="r")
        self.dimension = int(self._table.shape[1])
        self.name = f"{model_name(base, model_dir)}{SUFFIX}{self.dimension}"
        self.fingerprint = static_fingerprint(fingerprint(model_dir), self.dimension, prompted, limit)
        self.max_tokens = max_seq_length(model_dir)  # the base model's: both chunk a corpus alike
        self._tokenizer = _tokenizer(model_dir)
        self._query_prompt, self._document_prompt = prompts(base) if prompted else ("", "")

    def count_tokens(self, texts: list[str]) -> list[int]:
        if not texts:
            return []
        return [len(e.ids) for e in self._tokenizer.encode_batch(texts, add_special_tokens=False)]

    def _vectors(self, texts: list[str], prompt: str, progress: Callable[[int], None] | None = None) -> np.ndarray:
        """Unit vectors of ``prompt`` + each text: its token rows summed (``np.add.reduceat``), normalised in
        place; a text without a known token gets the first principal direction."""
        out = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for start in range(0, len(texts), TEXTS_PER_STEP):
            step = [prompt + t for t in texts[start : start + TEXTS_PER_STEP]]
            encs = self._tokenizer.encode_batch(step, add_special_tokens=False)
            sizes = np.fromiter((len(e.ids) for e in encs), dtype=np.int64, count=len(encs))
            ids = np.fromiter(chain.from_iterable(e.ids for e in encs), dtype=np.int64, count=int(sizes.sum()))
            if ids.size:
                some = np.flatnonzero(sizes)
                starts = (np.cumsum(sizes) - sizes)[some]
                out[start + some] = np.add.reduceat(self._table[ids].astype(np.float32), starts, axis=0)
            if progress:
                progress(len(encs))
        norms = np.linalg.norm(out, axis=1)
        out[norms == 0, 0], norms[norms == 0] = 1.0, 1.0
        out /= norms[:, None]
        return out

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        return self._vectors(texts, self._document_prompt, progress)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self._vectors(texts, self._query_prompt)
