"""References named in a query (``§ 3 ArbZG``, ``Art. 5 GG``, ``3 kap. 5 §``, ``SFS 1977:1160``).

They are detected with the indexing detectors, resolved against the index's
documents and sections, recorded in the plan, and the sections they point to
join the candidates (so the reference feature can lift them to the top).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ragkit.legal import LawTarget, find_legal_refs, heading_key
from ragkit.reader import IndexReader
from ragkit.records import Hit
from ragkit.store.expr import in_list
from ragkit.store.lance_rows import to_hits

MAX_SECTIONS = 20


@dataclass
class QueryReferences:
    found: list[dict] = field(default_factory=list)
    sections: set[str] = field(default_factory=set)
    documents: set[str] = field(default_factory=set)


def resolve_query_refs(query: str, resolver, readable: set[str] | None = None) -> QueryReferences:
    """The references ``query`` cites, resolved to documents and sections (only to the ``readable`` documents
    when given: a reference to another collection's law resolves to nothing)."""
    out = QueryReferences()
    for ref in find_legal_refs(query):
        doc = resolver.law_document(ref.target) if ref.target else None
        if doc is not None and readable is not None and doc not in readable:
            doc = None
        docs = (
            [doc]
            if doc
            else ([] if ref.target else [d for d in resolver.sections_of if readable is None or d in readable])
        )
        sections = []
        for d in docs:
            for n in ref.numbers[:10] if ref.unit else []:
                sid = resolver._section_with_key(d, ref.unit, n, ref.chapter)
                if sid:
                    sections.append(sid)
        sections = sections[:MAX_SECTIONS]
        if doc:
            out.documents.add(doc)
        out.sections.update(sections)
        law = LawTarget.parse(ref.target).text if ref.target else None  # as the query says it
        out.found.append({"raw": ref.raw, "law": law, "document_id": doc, "section_ids": sections})
    return out


def inject(hits: list[Hit], refs: QueryReferences, reader: IndexReader, where: str | None) -> list[Hit]:
    """Add the chunks of referenced sections that retrieval did not bring."""
    if not refs.sections:
        return hits
    have = {h.chunk_id for h in hits}
    clause = in_list("section_id", sorted(refs.sections))
    rows = reader.chunks.rows(f"({clause}) AND ({where})" if where else clause, limit=100)
    floor = min((h.score for h in hits), default=0.0)
    extra = [h for h in to_hits(rows, "lexical") if h.chunk_id not in have]
    for h in extra:
        h.score = floor
        h.ranks, h.scores = {"reference": 1}, {}
    return hits + extra


__all__ = ["resolve_query_refs", "inject", "QueryReferences", "heading_key"]
