"""Communities of the entity graph (igraph Leiden), hierarchical, with extractive reports.

Level 0 clusters the entity–entity relation graph by modularity; a level-0
community larger than ``max_size`` is clustered again into level-1 children.
Each community gets an extractive report: a title from its most connected
entities, its key relations with their connecting sentences.
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


def leiden(edges: list[tuple[str, str, float]], seed: int = 7, resolution: float = 1.0) -> list[list[str]]:
    """Clusters (lists of node names, largest first) of a weighted undirected graph."""
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
        parts = g.community_leiden(objective_function="modularity", weights="weight",
                                   resolution=resolution, n_iterations=-1)
    finally:
        random.setstate(state)
    return sorted(([names[i] for i in part] for part in parts), key=lambda c: (-len(c), c[0]))


def detect(relations: list[dict], min_size: int = 3, max_size: int = 50) -> list[Community]:
    """``relations``: rows with a, b, weight, description (one per entity pair)."""
    edges = [(r["a"], r["b"], float(r["weight"])) for r in relations]
    desc = {(r["a"], r["b"]): r.get("description") or "" for r in relations}
    out: list[Community] = []
    for i, members in enumerate(leiden(edges)):
        if len(members) < min_size:
            continue
        top = Community(f"c{i}", 0, None, members)
        out.append(top)
        if len(members) > max_size:
            inside = set(members)
            sub = [(a, b, w) for a, b, w in edges if a in inside and b in inside]
            for j, part in enumerate(leiden(sub)):
                if len(part) >= min_size and len(part) < len(members):
                    out.append(Community(f"c{i}.{j}", 1, top.id, part))
    for c in out:
        _report(c, edges, desc)
    return out


def _report(c: Community, edges, desc, n_entities: int = 5, n_relations: int = 5) -> None:
    inside = set(c.members)
    strength: dict[str, float] = {}
    rels = []
    for a, b, w in edges:
        if a in inside and b in inside:
            strength[a] = strength.get(a, 0.0) + w
            strength[b] = strength.get(b, 0.0) + w
            rels.append((w, a, b))
    c.top_entities = sorted(c.members, key=lambda e: (-strength.get(e, 0.0), e))[:n_entities]
    c.title = ", ".join(c.top_entities[:3])
    lines = [f"Community: {c.title}", f"Entities: {', '.join(c.top_entities)}"]
    seen = set()
    for w, a, b in sorted(rels, reverse=True)[:n_relations]:
        sentence = desc.get((a, b), "").strip()
        lines.append(f"- {a} — {b} ({w:.2f})" + (f": {sentence}" if sentence and sentence not in seen else ""))
        seen.add(sentence)
    c.report = "\n".join(lines)
