"""Communities of the entity graph (igraph Leiden), hierarchical, with extractive reports.

Level 0 clusters the entity–entity relation graph by modularity; a level-0
community larger than ``max_size`` is clustered again into level-1 children.
Each community gets a title from its most connected entities; its
extractive report (those entities, its key relations with their connecting
sentences) is written when it is shown (``report``).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field


@dataclass
class Community:
    id: str
    level: int
    parent_id: str | None
    members: list[str]
    title: str = ""
    report: str = ""
    top_entities: list[str] = field(default_factory=list)
    parent_members: list[str] = field(default_factory=list)
    source_documents: set[str] = field(default_factory=set)  # documents whose sentences the report quotes


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
        _rank(c, inner[c.id])
    return out


def _inner_edges(communities: list[Community], edges) -> dict[str, list[tuple[str, str, float]]]:
    """Each community's internal edges in one pass over the edges (communities of one level are disjoint)."""
    home = {e: c.id for c in communities for e in c.members}
    inner: dict[str, list[tuple[str, str, float]]] = {c.id: [] for c in communities}
    for a, b, w in edges:
        if a in home and home[a] == home.get(b):
            inner[home[a]].append((a, b, w))
    return inner


def _rank(c: Community, edges, n_entities: int = 5) -> None:
    """Top entities (by relation strength inside the community) and the title they make."""
    strength: dict[str, float] = {}
    for a, b, w in edges:
        strength[a] = strength.get(a, 0.0) + w
        strength[b] = strength.get(b, 0.0) + w
    c.top_entities = sorted(c.members, key=lambda e: (-strength.get(e, 0.0), e))[:n_entities]
    c.title = ", ".join(c.top_entities[:3])


REPORT_RELATIONS = 5  # relations quoted in a report


def report(c: Community, relations: list[dict], n_relations: int = REPORT_RELATIONS) -> None:
    """The extractive report: title, top entities, the strongest relations between members with their
    sentences. ``relations``: rows with a, b, weight, description, source_document."""
    if not c.top_entities:
        _rank(c, [(r["a"], r["b"], float(r["weight"])) for r in relations])
    lines = [f"Community: {c.title}", f"Entities: {', '.join(c.top_entities)}"]
    seen = set()
    for r in sorted(relations, key=lambda r: (-float(r["weight"]), r["a"], r["b"]))[:n_relations]:
        sentence = " ".join((r.get("description") or "").split())
        quoted = bool(sentence) and sentence not in seen
        lines.append(f"- {r['a']} — {r['b']} ({float(r['weight']):.2f})" + (f": {sentence}" if quoted else ""))
        if quoted and r.get("source_document"):
            c.source_documents.add(r["source_document"])
        seen.add(sentence)
    c.report = "\n".join(lines)


SUMMARY_PROMPT = """Summarise what connects this group of entities in two sentences.

{report}

Summary:"""


def summarize(generator, report: str, max_tokens: int = 120) -> str:
    """An LLM-written summary of an extractive report (``--summaries llm``); empty when the model says nothing."""
    out = generator.complete(SUMMARY_PROMPT.format(report=report[:3000]), max_tokens=max_tokens, stop=["\n\n"])
    return " ".join(out.split())
