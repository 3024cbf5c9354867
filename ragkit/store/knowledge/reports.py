"""Community reports, written from the store's rows when they are shown (never stored): a community's title,
its top entities and its members' strongest relations with their sentences (below an LLM's summary when
``--summaries llm`` wrote one). The communities themselves are found at commit (ragkit/extract/communities.py,
Leiden); their titles and top entities are ranked here, where a report without them ranks them too."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ragkit.records import Community
from ragkit.store.knowledge.sql import strongest

REPORT_RELATIONS = 5  # relations quoted in a report


def rank(c: Community, edges, n_entities: int = 5) -> None:
    """Top entities (by relation strength inside the community) and the title they make."""
    strength: dict[str, float] = {}
    for a, b, w in edges:
        strength[a] = strength.get(a, 0.0) + w
        strength[b] = strength.get(b, 0.0) + w
    c.top_entities = sorted(c.members, key=lambda e: (-strength.get(e, 0.0), e))[:n_entities]
    c.title = ", ".join(c.top_entities[:3])


def report(c: Community, relations: list[dict], n_relations: int = REPORT_RELATIONS) -> None:
    """The extractive report: title, top entities, the strongest relations between members with their
    sentences. ``relations``: rows with a, b, weight, description, source_document."""
    if not c.top_entities:
        rank(c, [(r["a"], r["b"], float(r["weight"])) for r in relations])
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


def community_reports(store, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Community rows (id, collection, …) with ``report`` and ``source_documents``: the extractive report
    written from the members' strongest relations (below an LLM's summary when one was written). Only each
    community's ``REPORT_RELATIONS`` strongest inner relations are read (a large community has thousands)."""
    if not rows:
        return rows
    by_id: dict[str, list[dict]] = defaultdict(list)
    with store.registered("crows", {"id": [r["id"] for r in rows]}):
        for edge in store.rows(
            "WITH mem AS (SELECT m.community_id, m.entity, c.collection FROM community_members m "
            "JOIN communities c ON c.id = m.community_id WHERE c.id IN (SELECT id FROM crows)), "
            "edges AS (SELECT ma.community_id, r.a, r.b, sum(r.weight) AS weight, "
            f"{strongest('r.')} AS best FROM cooc r "
            "JOIN mem ma ON ma.entity = r.a AND ma.collection = r.collection "
            "JOIN mem mb ON mb.entity = r.b AND mb.community_id = ma.community_id GROUP BY ma.community_id, r.a, r.b "
            "QUALIFY row_number() OVER (PARTITION BY ma.community_id ORDER BY sum(r.weight) DESC, r.a, r.b) "
            f"<= {REPORT_RELATIONS}) "
            "SELECT e.community_id, e.a, e.b, e.weight, e.best.document_id AS source_document, "
            "coalesce(e.best.note, substring(c.text, e.best.sent_start + 1, e.best.sent_end - e.best.sent_start)) "
            "AS description FROM edges e LEFT JOIN chunks c ON c.id = e.best.chunk_id"
        ):
            by_id[edge.pop("community_id")].append(edge)
    return write_reports(rows, by_id)


def write_reports(rows: list[dict[str, Any]], edges: dict[str, list[dict]]) -> list[dict[str, Any]]:
    """Community rows with their reports, from each community's strongest inner relations (``edges``)."""
    for r in rows:
        c = Community(
            r["id"], r["level"], r["parent_id"], [], title=r["title"], top_entities=list(r["top_entities"] or [])
        )
        report(c, edges.get(r["id"], []))
        r["report"] = f"{r['written']}\n\n{c.report}" if r.get("written") else c.report
        r["source_documents"] = sorted(c.source_documents)
    return rows
