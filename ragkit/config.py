"""IndexConfig / QueryConfig, resolved from defaults, ragkit.toml and flags.

Precedence: explicit flags > ``ragkit.toml`` in the working directory
(tables ``[index]`` and ``[query]``) > the defaults below.
"""

from __future__ import annotations

import tomllib
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ragkit.errors import BadQuery, RagkitError

DEFAULT_HOME = Path("indexes")


def resolve_index_dir(index: str | Path | None) -> Path:
    """``None`` → ./indexes/default; a bare name → ./indexes/NAME; a URI (``s3://bucket/prefix``) → its local
    mirror (ragkit/store/remote.py); anything else is a directory."""
    if index is None:
        return DEFAULT_HOME / "default"
    s = str(index)
    from ragkit.store import remote

    if remote.is_uri(s):
        return remote.mirror_for(s)
    if "/" not in s and "\\" not in s and s not in (".", ".."):
        return DEFAULT_HOME / s
    return Path(s).expanduser()


def parse_filters(items: list[str]) -> dict[str, str]:
    """``--filter KEY=VALUE`` options as a dict."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise BadQuery(f"bad filter {item!r}", hint="Write filters as KEY=VALUE, e.g. --filter doc_type=policy")
        key, value = key.strip(), value.strip()
        if key in ("date_from", "date_to"):
            import datetime as dt

            try:
                dt.date.fromisoformat(value)
            except ValueError:
                raise BadQuery(
                    f"bad date in --filter {key}={value}",
                    hint="Dates are YYYY-MM-DD, e.g. --filter date_from=2024-01-31",
                ) from None
        out[key] = value
    return out


DEFAULT_INCLUDE = ["*.md", "*.markdown", "*.txt", "*.text", "*.rst", "*.html", "*.htm", "*.jsonl", "*.pdf", "*.docx"]


@dataclass
class IndexConfig:
    include: list[str] = field(default_factory=lambda: list(DEFAULT_INCLUDE))
    exclude: list[str] = field(default_factory=list)
    include_hidden: bool = False
    max_file_size_mb: float = 50.0  # larger files are skipped with a warning
    engine: str = "local"  # local | ray: where files are parsed, chunked and embedded (ragkit/ingest/ray_engine.py)
    ray_address: str = ""  # --engine ray: a cluster to join ("auto", "ray://host:10001"); empty: a local Ray
    ray_workers: int = 0  # --engine ray: actors (and CPUs of a local Ray); 0: every CPU
    # auto: an index's first run picks by its documents' language: English → bundled:all-MiniLM-L6-v2, German,
    # Swedish → bundled:multilingual-e5-small (ragkit/embed: model_for); or a sentence-transformers folder
    embed_model: str = "auto"
    embed_batch_size: int = 32  # encoder = "torch": texts per batch (the ONNX encoders take one at a time)
    # auto: onnx-int8 (2.5× torch, the same retrieval quality with MiniLM), onnx for multilingual-e5-small
    # (its int8 vectors lose German questions: ragkit/embed FULL_PRECISION) | onnx-int8 | onnx | torch
    encoder: str = "auto"
    chunk_tokens: int = 240  # upper bound per chunk, header included
    chunk_min_tokens: int = 60  # pieces smaller than this are merged with a neighbour
    doc_type: str | None = None  # used when front matter names none
    collection: str = "default"
    fts_language: str = "auto"  # BM25 stemming/stop words: auto (the documents' language), English, German, …
    fts_stem: bool = True
    fts_remove_stop_words: bool = True
    vector_index_min_rows: int = 100_000  # below this, exact (flat) vector search
    extract: str = "rules"  # entities and relations: rules | llm | none
    summaries: str = "extractive"  # community reports and summary-tree nodes: extractive | llm
    tree: bool = True  # RAPTOR-lite summary tree (section and document nodes) for --strategy hierarchical
    expand: bool = False  # embed the vocabulary for --expand after each run (else on the first --expand query)
    llm_model: str | None = None  # GGUF file for --extract llm / --summaries llm (None: the bundled model)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class QueryConfig:
    strategy: str = "auto"  # auto: the router picks per query
    k: int = 10
    alpha: float = 0.5  # dense weight in the fusion (convex or weighted RRF); lexical gets 1 - alpha
    # dense weight at most for a query in a language the embedding model was not trained on (the bundled MiniLM:
    # English only); None: alpha; --alpha on the command line sets both. German questions over the laws with
    # compounds, top-3: 11 of 36 and 11 of 32 held out, against 11 and 9 at 0.5 (README "Retrieval quality")
    foreign_alpha: float | None = 0.3
    # the index's embedding model's own dense weight for its documents' language instead of alpha where it has one
    # (ragkit/embed: MODEL_ALPHA, multilingual-e5-small on German or Swedish 0.8); --alpha on the command line or
    # alpha in ragkit.toml turns it off
    model_alpha: bool = True
    rrf_k: int = 60
    fusion: str = "convex"  # hybrid: convex (score-normalised combination) | rrf (weighted reciprocal rank fusion)
    damping: float = 0.85  # personalized PageRank (hippo)
    max_hops: int = 2  # local: relation hops around the query entities
    vector_seeds: int = 3  # hippo/local: nearest entity vectors (derived) added to the query's seeds
    passage_share: float = 0.0  # hippo: share of the PPR reset mass on the top dense chunks (HippoRAG 2)
    ppr_weight: float = 0.25  # hippo: PPR list weight in the fusion; dense and BM25 share the rest (alpha)
    entity_weight: float = 0.6  # light: entity side vs relation side in the fusion of their chunk rankings
    overfetch: int = 4
    tree_mode: str = "collapsed"  # hierarchical: collapsed (nodes and chunks in one ranking) | tree (levels, discount)
    tree_nodes: int = 5  # hierarchical: nodes kept per level (tree), twice this over all levels (collapsed)
    tree_children: int = 3  # hierarchical: best children a node expands to
    tree_discount: float = 0.8  # hierarchical (tree mode): a child's score = its node's similarity × this
    budget: int = 1024  # tokens per assembled passage
    syntax: bool = True  # honour "phrase" and -term in the query text
    rerank: str = "features"  # none | features | cross (features, then a cross-encoder)
    cross_encoder: str | None = None  # local CrossEncoder folder for --rerank cross
    mode: str = "balanced"  # precision | balanced | recall: rerank weights
    weights: dict[str, dict[str, float]] = field(default_factory=dict)  # [rerank.<mode>] overrides
    all_versions: bool = False  # include superseded documents
    context_budget: int | None = None  # pack passages into a context block of this many tokens
    filters: dict[str, str] = field(default_factory=dict)
    decompose: bool = False  # also retrieve sub-queries of comparisons (measured: hurts on hotpotqa-100)
    retry: bool = True  # corrective retry: one broader retrieval when the first results look poor
    links: bool = True  # documents the query or the first passage names by title join the candidates (links.py)
    expand: bool = False  # add related index words (nearest to the query vector) in a BM25 query fused at 0.3
    spelling: bool = True  # correct words unknown to the index to a frequent index word one edit away
    planner: str = "rules"  # rules | llm (a GGUF model rewrites and decomposes; rules stay the fallback)
    model: str | None = None  # GGUF file for --planner llm and --answer (None: the bundled model)
    answer: bool = False  # write a cited answer with the GGUF model
    max_tokens: int = 512  # answer budget
    temperature: float = 0.3  # answer sampling temperature
    answer_context: int = 4096  # the model's context window for answers (prompt + answer)
    planner_rules: str | None = None  # a copy of ragkit/retrieve/planner_rules.toml to use instead


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise RagkitError(f"{path}: invalid TOML ({exc})") from exc


def _apply(cfg, table: dict[str, Any], source: str):
    known = {f.name for f in fields(cfg)}
    unknown = set(table) - known
    if unknown:
        raise RagkitError(
            f"{source}: unknown setting(s) {', '.join(sorted(unknown))}",
            hint=f"Known: {', '.join(sorted(known))}",
        )
    return replace(cfg, **table)


def _rerank_weights(table: dict[str, Any], source: str) -> dict[str, dict[str, float]]:
    from ragkit.rerank.features import DEFAULT_WEIGHTS, FEATURES

    out = {}
    for mode, weights in table.items():
        if mode not in DEFAULT_WEIGHTS or not isinstance(weights, dict):
            raise RagkitError(f"{source}: unknown mode {mode!r}", hint="Modes: precision, balanced, recall")
        unknown = set(weights) - set(FEATURES)
        if unknown:
            raise RagkitError(
                f"{source}.{mode}: unknown feature(s) {', '.join(sorted(unknown))}",
                hint=f"Features: {', '.join(FEATURES)}",
            )
        out[mode] = {k: float(v) for k, v in weights.items()}
    return out


def load_config(cwd: Path | None = None, index_dir: Path | None = None) -> tuple[IndexConfig, QueryConfig]:
    """Defaults overlaid with ``ragkit.toml`` from the index directory, then from ``cwd``."""
    icfg, qcfg = IndexConfig(), QueryConfig()
    for folder in (index_dir, cwd or Path.cwd()):
        if folder is not None:
            icfg, qcfg = _overlay(icfg, qcfg, Path(folder) / "ragkit.toml")
    return icfg, qcfg


def _overlay(icfg: IndexConfig, qcfg: QueryConfig, path: Path) -> tuple[IndexConfig, QueryConfig]:
    if path.is_file():
        data = _load_toml(path)
        icfg = _apply(icfg, data.get("index", {}), f"{path} [index]")
        query = data.get("query", {})
        if "alpha" in query:  # a configured alpha, like --alpha, holds for every model (unless told otherwise)
            query = {"model_alpha": False, **query}
        qcfg = _apply(qcfg, query, f"{path} [query]")
        if "rerank" in data:
            merged = dict(qcfg.weights)
            for mode, w in _rerank_weights(data["rerank"], f"{path} [rerank]").items():
                merged[mode] = {**merged.get(mode, {}), **w}
            qcfg = replace(qcfg, weights=merged)
    return icfg, qcfg


def override(cfg, **flags):
    """Return ``cfg`` with every flag that is not None applied."""
    return replace(cfg, **{k: v for k, v in flags.items() if v is not None})
