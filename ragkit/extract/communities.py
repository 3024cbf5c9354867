"""Communities of the entity graph (igraph Leiden), hierarchical, with extractive reports.

Level 0 clusters the entity–entity relation graph by modularity; a level-0
community larger than ``max_size`` is clustered again into level-1 children.
Each community gets a title from its most connected entities; its
extractive report (those entities, its key relations with their connecting
sentences) is written when it is shown (``report``, ragkit/store/knowledge/reports.py: the store writes it
from its rows).
"""

from __future__ import annotations

import random

from ragkit.records import Community
from ragkit.store.knowledge.reports import REPORT_RELATIONS, rank, report

__all__ = ["REPORT_RELATIONS", "Community", "detect", "leiden", "report", "summarize"]


def leiden(
    edges: list[tuple[str, str, float]], seed: int = 7, resolution: float = 1.0, initial: dict[str, int] | None = None
) -> list[list[str]]:
    """Clusters (lists of node names, largest first) of a weighted undirected graph.

    ``initial``: a previous cluster label per node; Leiden starts from it, so an
    update moves only what the changed edges pull elsewhere.
    """
    import igraph as ig

    names = sorted({n for a, b, _ in edges for n in (a, b)})
    if not names:
        return []
    idx = {n: i for i, n in enumerate(names)}
    g = ig.Graph(n=len(names), edges=[(idx[a], idx[b]) for a, b, _ in edges], directed=False)
    g.es["weight"] = [w for _, _, w in edges]
    state = random.getstate()
    random.seed(seed)  # igraph draws from Python's random module: fixed seed, stable clusters
    try:
        start = None
        if initial:
            fresh = iter(range(max(initial.values(), default=0) + 1, 1 << 30))
            start = [initial[n] if n in initial else next(fresh) for n in names]
        parts = g.community_leiden(
            objective_function="modularity",
            weights="weight",
            resolution=resolution,
            n_iterations=-1,
            initial_membership=start,
        )
    finally:
        random.setstate(state)
    return sorted(([names[i] for i in part] for part in parts), key=lambda c: (-len(c), c[0]))


def detect(
    relations: list[dict], min_size: int = 3, max_size: int = 50, initial: dict[str, int] | None = None
) -> list[Community]:
    """``relations``: rows with a, b, weight (one per entity pair)."""
    edges = [(r["a"], r["b"], float(r["weight"])) for r in relations]
    parts = [m for m in leiden(edges, initial=initial) if len(m) >= min_size]
    out = [Community(f"c{i}", 0, None, members) for i, members in enumerate(parts)]
    inner = _inner_edges(out, edges)
    for top in list(out):
        if len(top.members) > max_size:
            for j, part in enumerate(leiden(inner[top.id])):
                if min_size <= len(part) < len(top.members):
                    out.append(Community(f"{top.id}.{j}", 1, top.id, part, parent_members=top.members))
    inner.update(_inner_edges([c for c in out if c.level == 1], edges))
    for c in out:
        rank(c, inner[c.id])
    return out


def _inner_edges(communities: list[Community], edges) -> dict[str, list[tuple[str, str, float]]]:
    """Each community's internal edges in one pass over the edges (communities of one level are disjoint)."""
    home = {e: c.id for c in communities for e in c.members}
    inner: dict[str, list[tuple[str, str, float]]] = {c.id: [] for c in communities}
    for a, b, w in edges:
        if a in home and home[a] == home.get(b):
            inner[home[a]].append((a, b, w))
    return inner


SUMMARY_PROMPT = """Summarise what connects this group of entities in two sentences.

{report}

Summary:"""


def summarize(generator, report: str, max_tokens: int = 120) -> str:
    """An LLM-written summary of an extractive report (``--summaries llm``); empty when the model says nothing."""
    out = generator.complete(SUMMARY_PROMPT.format(report=report[:3000]), max_tokens=max_tokens, stop=["\n\n"])
    return " ".join(out.split())
