"""``IndexConfig``: how a folder is indexed. It checks itself when it is built (``ragkit.validate``): a choice
outside its ``Literal`` or a number outside its range is one ``BadInput`` naming the setting."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from ragkit.errors import BadInput
from ragkit.ingest.formats import DEFAULT_INCLUDE
from ragkit.validate import between, matches, validate


@dataclass(frozen=True)
class IndexConfig:
    include: list[str] = field(default_factory=lambda: list(DEFAULT_INCLUDE))  # every format ragkit reads
    exclude: list[str] = field(default_factory=list)
    include_hidden: bool = False
    max_file_size_mb: float = field(default=50.0, metadata=between(0.0))  # larger files are skipped with a warning
    # where files are parsed, chunked and embedded: here, or on Ray (ragkit/ingest/ray_engine.py)
    engine: Literal["local", "ray"] = "local"
    ray_address: str = ""  # --engine ray: a cluster to join ("auto", "ray://host:10001"); empty: a local Ray
    ray_workers: int = field(default=0, metadata=between(0))  # --engine ray: actors (and CPUs); 0: every CPU
    # the embed role's spec. auto: an index's first run picks by its documents' language: English →
    # bundled:all-MiniLM-L6-v2, German, Swedish → bundled:multilingual-e5-small (ragkit/embed: model_for); or a
    # sentence-transformers folder, a .gguf file, a server URL (ragkit/modelspec.py)
    embed_model: str = "auto"  # (ragkit.embed.AUTO)
    embed_batch_size: int = field(default=32, metadata=between(1))  # encoder "torch": texts per batch
    # auto: onnx-int8 (2.5× torch, the same retrieval quality with MiniLM), onnx for multilingual-e5-small
    # (its int8 vectors lose German questions: ragkit/embed FULL_PRECISION); the choices are ragkit.embed.ENCODERS
    encoder: Literal["auto", "onnx-int8", "onnx", "torch"] = "auto"
    chunk_tokens: int = field(default=240, metadata=between(16))  # upper bound per chunk, header included
    chunk_min_tokens: int = field(default=60, metadata=between(0))  # smaller pieces merge with a neighbour
    doc_type: str | None = None  # used when front matter names none
    collection: str = "default"
    fts_language: str = "auto"  # BM25 stemming/stop words: auto (the documents' language), English, German, …
    fts_stem: bool = True
    fts_remove_stop_words: bool = True
    vector_index_min_rows: int = field(default=100_000, metadata=between(1))  # below this, exact vector search
    # a new index is searchable after one fast run (a static model distilled from embed_model), then the full
    # model's vectors fill in batch by batch, each batch committed (ragkit/ingest/fill.py)
    progressive: bool = False
    extract: Literal["rules", "llm", "none"] = "rules"  # entities and relations
    summaries: Literal["extractive", "llm"] = "extractive"  # community reports and summary-tree nodes
    tree: bool = True  # RAPTOR-lite summary tree (section and document nodes) for --strategy hierarchical
    expand: bool = False  # embed the vocabulary for --expand after each run (else on the first --expand query)
    model: str | None = None  # the generate role's spec for --extract llm / --summaries llm (None: bundled)
    api_keys: dict[str, str] = field(default_factory=dict)  # server host → the environment variable with its key
    # pages without a text layer (scans) and pictures read by OCR (ragkit/ingest/ocr.py); --no-ocr: not read
    ocr: bool = True
    # their language: auto (found per page among German, Swedish, English) or Tesseract's names ("deu", "swe+eng")
    ocr_lang: str = field(default="auto", metadata=matches(r"auto|(deu|swe|eng)(\+(deu|swe|eng))*"))

    def __post_init__(self) -> None:
        validate(self, BadInput)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)
