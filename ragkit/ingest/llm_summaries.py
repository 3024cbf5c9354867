"""``--summaries llm``: after a run's store is staged and before its commit (no model runs inside a
transaction), the GGUF model writes the summaries of the tree nodes and community reports that are still
extractive (ragkit/ingest/pipeline.py ``IndexRun.write_summaries``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from ragkit.embed import Embedder
from ragkit.events import Reporter
from ragkit.extract.communities import summarize
from ragkit.extract.summaries import llm_summarize, rewrite_with, unit
from ragkit.records import SummaryNode
from ragkit.store.duck import DuckStore


def ticking(rep: Reporter, stage: str, fn: Callable[..., str]) -> Callable[..., str]:
    """``fn`` with a progress stage that starts at its first call and ticks once per call."""
    started = []

    def run(*args) -> str:
        if not started:
            rep.start(stage)
            started.append(True)
        out = fn(*args)
        rep.advance(stage)
        return out

    return run


def write_llm_summaries(duck_path: Path, generator, embedder: Embedder, chunk_vectors, rep: Reporter) -> dict:
    """``--summaries llm``, after the commit (no model runs inside a transaction): the GGUF model writes the
    summaries of the tree nodes and community reports that are still extractive; a node's written text is
    embedded and averaged into its vector. A run killed here leaves the extractive ones, which the next run
    that commits writes."""
    with DuckStore(duck_path, read_only=True) as store:
        rows, reports = store.knowledge.pending_summaries()
    nodes, texts = [], {}
    for r in rows:
        vecs = [v for v in chunk_vectors(r["chunk_ids"]).values()]
        node = SummaryNode(
            id=r["id"],
            level=0,
            document_id="",
            section_id=None,
            parent_id=None,
            collection="",
            title=r["title"],
            text=r["text"],
            chunk_ids=r["chunk_ids"],
            method="extractive",
            line_start=0,
            line_end=0,
            vector=unit(np.mean(vecs, axis=0)) if vecs else None,
        )
        nodes.append(node)
        texts[node.id] = r["texts"]
    write_node = ticking(rep, "tree summaries", lambda node, t: llm_summarize(generator, node, t))
    rewrite_with(nodes, lambda n: texts[n.id], write_node, embedder.encode)
    write_report = ticking(rep, "summaries", lambda report: summarize(generator, report))
    written = {r["id"]: text for r in reports if (text := write_report(r["report"]))}
    rep.finish("tree summaries")
    rep.finish("summaries")
    with DuckStore(duck_path, read_only=False) as store:
        store.knowledge.write_summaries({n.id: (n.text, n.vector) for n in nodes if n.method == "llm"}, written)
    return {"tree_nodes": sum(n.method == "llm" for n in nodes), "communities": len(written)}
