"""What an index holds, looked at: its figures (``stats``, ``learned``, ``graph_stats``), its documents, sections,
outlines and entities, its graph exported, and its health (``check``). ``Index`` (ragkit/library) calls each;
each raises ``ragkit.errors`` types, never prints.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ragkit.config import resolve_index_dir
from ragkit.errors import BadQuery, IndexNotFound, UnknownId
from ragkit.ingest import ocr
from ragkit.ingest.commit import write_derived
from ragkit.reader import IndexReader
from ragkit.rerank.ranker import shipped as ranking_shipped
from ragkit.store import browse, remote, sizes
from ragkit.store import check as checker
from ragkit.store.manifest import Manifest


def stats(reader: IndexReader, readable: tuple[str, ...] | None = None) -> dict[str, Any]:
    """What an index holds, and what it costs on disk per component against its source bytes. ``readable``:
    count only these collections (a served token's), and leave out the figures of the whole index (bytes on
    disk, the last run's changes)."""
    with reader.duck() as store:
        counts = store.counts(readable)
        doc_types = store.doc_types(readable)
        collections = store.collections(readable)
        last = store.last_run()
    run = last and {k: last[k] for k in ("id", "finished_at", "lance_version")}
    if readable is not None:
        common = {"index": remote.display(reader.index_dir), **counts, "doc_types": doc_types}
        embedder = asdict(reader.manifest.embedder)
        return {**common, "collections": collections, "embedder": embedder, "last_run": run}
    size = sizes.index_bytes(reader.index_dir)
    source = sizes.source_bytes(reader)
    return {
        "index": remote.display(reader.index_dir),
        **counts,
        "doc_types": doc_types,
        "collections": collections,
        "size_bytes": size,
        "source_bytes": source,
        "size_ratio": round(size / source, 2) if source else None,
        "bytes": sizes.component_bytes(reader),
        "embedder": asdict(reader.manifest.embedder),
        "fill": _fill_progress(reader.manifest, counts["chunks"]),
        "ocr": browse.ocr_pages(reader),
        "learned": learned(reader),
        "last_run": last
        and run | {k: last["summary"].get(k) for k in ("new", "changed", "unchanged", "removed", "skipped")},
    }


def learned(reader: IndexReader) -> dict[str, Any]:
    """The learned rankers in use, per scope (version, when fitted, on how many judged queries, and the held-out
    figures before and after), whether the shipped default ranks where none is adopted, and the learned answer
    thresholds per scope and language (``answers``)."""
    models = reader.rankers.adopted()
    out = {scope: {"version": m.version} | m.meta for scope, m in models.items()}
    return {"scopes": out, "shipped_default": ranking_shipped() is not None, "answers": reader.rankers.answers()}


def _fill_progress(manifest: Manifest, chunks: int) -> dict[str, Any] | None:
    """A progressive index being filled: its full model and the chunks that have their full vector."""
    spec = manifest.fill
    if not spec:
        return None
    return {"model": spec["name"], "filled": spec["filled"], "total": chunks, "share": spec["filled"] / max(chunks, 1)}


def graph_stats(reader: IndexReader) -> dict[str, Any]:
    """The evidence graph's node and edge counts by kind, the entity graph's, references detected and
    resolved, communities per level and the knowledge per collection (``ragkit graph stats``)."""
    out = reader.graph.stats()
    with reader.duck() as store:
        out.update(store.knowledge.graph_tables())
    out["entity_graph"] = reader.entity_graph.stats()
    return out


def export_graph(reader: IndexReader, out: Path, fmt: str = "graphml") -> tuple[int, int]:
    """Write the evidence graph as GraphML or node-link JSON; returns its (nodes, edges)."""
    if fmt not in ("graphml", "json"):
        raise BadQuery(f"unknown format {fmt!r}", hint="Choose graphml or json")
    g = reader.graph
    g.export(out, fmt)
    return g.g.vcount(), g.g.ecount()


def entity(reader: IndexReader, name: str, limit: int = 10) -> dict[str, Any]:
    """One entity by name or alias: its collections, strongest relations and source chunks."""
    with reader.duck() as store:
        info = store.knowledge.entity(name, limit)
    if info is None:
        raise BadQuery(f"no entity {name!r} in {reader.index_dir}", hint="Entity names come from the indexed text.")
    return info


def section(reader: IndexReader, section_id: str, readable: tuple[str, ...] | None = None) -> dict[str, Any]:
    """A section's place (document, breadcrumb, lines) and its own text; ``UnknownId`` if there is none (or it
    belongs to a collection outside ``readable``)."""
    return _found(browse.section(reader, section_id, readable), "section", section_id, reader)


def document(
    reader: IndexReader,
    key: str,
    readable: tuple[str, ...] | None = None,
    start: int | None = None,
    end: int | None = None,
) -> dict[str, Any]:
    """A document by id or path (or the end of its path) with its text chunk by chunk; with ``start``/``end``
    only the chunks that cover those lines. ``UnknownId`` if there is none (or none readable). An ``end`` before
    ``start`` is an empty range, answered as lines past the end are: no chunks (the server's schema can say
    ``start ≥ 1`` and ``end ≥ 1``, not how the two compare)."""
    if start is None and end is None:
        return _found(browse.document(reader, key, readable), "document", key, reader)
    start = start or 1
    if end is not None and 1 <= end < start:
        found = _found(browse.document_lines(reader, key, start, None, readable), "document", key, reader)
        return {**found, "asked": [start, end], "lines": None, "chunks": [], "text": ""}
    return _found(browse.document_lines(reader, key, start, end, readable), "document", key, reader)


def outline(reader: IndexReader, key: str, readable: tuple[str, ...] | None = None) -> dict[str, Any]:
    """A document's sections in reading order; ``UnknownId`` if there is no such (readable) document."""
    return _found(browse.outline(reader, key, readable), "document", key, reader)


def documents(
    reader: IndexReader,
    filters: dict[str, str] | None = None,
    readable: tuple[str, ...] | None = None,
    limit: int = 50,
    offset: int = 0,
) -> dict[str, Any]:
    """The (readable) documents matching ``filters``, by path: ``{"total", "offset", "documents"}``."""
    return browse.documents(reader, filters or {}, readable, limit, offset)


def _found(found: dict[str, Any] | None, kind: str, key: str, reader: IndexReader) -> dict[str, Any]:
    if found is None:
        raise UnknownId(f"no {kind} {key!r} in {remote.display(reader.index_dir)}")
    return found


def check(
    index: str | Path | None, repair: bool = False, on_wait: Callable[[str], None] | None = None
) -> checker.Report:
    """Verify an index (``ragkit check``); with ``repair``, fix what can be fixed first (waiting for a running
    indexer, told through ``on_wait``). Returns the problems left, what was checked and what was repaired."""
    index_dir = resolve_index_dir(index)
    remote.pull(index_dir, required=False)  # an index on object storage: what the manifest names, into the mirror
    if not (index_dir / "lance").is_dir() and not (index_dir / "manifest.json").exists():
        raise IndexNotFound(f"no index at {index if remote.uri_of(index_dir) else index_dir}")
    problems, facts = checker.check(index_dir)
    repaired: list[str] = []
    if repair and (problems or facts.get("leftovers")):
        with remote.writing(index_dir, wait=True, on_wait=on_wait) as bucket:
            repaired = checker.repair(index_dir, write_derived, bucket)
        problems, facts = checker.check(index_dir)
    if not problems:  # scanned pages read and not, and whether this machine can read them
        facts["scanned"] = browse.ocr_pages(IndexReader(index_dir)) | {"ocr": ocr.available() or ocr.engine()}
    return checker.Report(remote.display(index_dir), problems, facts, repaired)
