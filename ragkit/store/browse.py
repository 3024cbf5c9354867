"""Reading an index document by document (``ragkit serve``'s documents routes and MCP tools, ``ragkit query``'s
session): a document by id or path with its text, a line range of it, its section outline, a section, the list
of documents matching filters.

Each takes ``readable``: the collections the caller may read (a served token's), or None for all. A document of
another collection is treated as absent, so a caller cannot tell it from one that does not exist.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from ragkit.errors import BadQuery
from ragkit.store import expr
from ragkit.store.expr import check_filters

UNREAD = "+unread"  # (ragkit/ingest/source.py marks a source's hash so)
UNREAD_LISTED = 20  # files with unread pages named at most

if TYPE_CHECKING:
    from ragkit.store.committed import CommittedIndex

DOCUMENT_FIELDS = "id, path, title, doc_type, collection, metadata, version, is_latest, language, line_count"
MAX_OFFSET = 2**31 - 1  # (DuckDB takes a 64-bit offset; anything beyond is no page of an index)
LIST_LIMIT = 1000  # documents per page of a list at most


def find_document(reader: CommittedIndex, key: str, readable: tuple[str, ...] | None = None) -> dict[str, Any] | None:
    """A readable document's fields by its id, its path or source path, or the end of its path
    (``policies/overtime.md``, when only one path ends so); None if there is none."""
    scope, params = expr.readable(readable).duck()
    with reader.duck() as store:
        found = store.rows(
            f"SELECT {DOCUMENT_FIELDS} FROM documents WHERE (id = ? OR path = ? OR source_path = ?) AND {scope} "
            "ORDER BY is_latest DESC, id LIMIT 1",
            [key, key, key, *params],
        )
        if not found and key:
            found = store.rows(
                f"SELECT {DOCUMENT_FIELDS} FROM documents WHERE ends_with(path, ?) AND {scope} ORDER BY id LIMIT 2",
                ["/" + key.lstrip("/"), *params],
            )
            found = found if len(found) == 1 else []
    if not found:
        return None
    doc = found[0]
    doc["metadata"] = json.loads(doc["metadata"] or "{}")
    return doc


def source_of(reader: CommittedIndex, document_id: str) -> tuple[str, str] | None:
    """A document's source file and its content hash (kept from clients: a server's paths are its own)."""
    with reader.duck() as store:
        found = store.rows("SELECT source_path, source_hash FROM documents WHERE id = ?", [document_id])
    return (found[0]["source_path"], found[0]["source_hash"]) if found else None


def document(reader: CommittedIndex, key: str, readable: tuple[str, ...] | None = None) -> dict[str, Any] | None:
    """A document's fields and its text, chunk by chunk with their lines (and pages), or None."""
    doc = find_document(reader, key, readable)
    return {**doc, **chunk_text(reader, expr.equals("document_id", doc["id"]))} if doc else None


def document_lines(
    reader: CommittedIndex, key: str, start: int, end: int | None, readable: tuple[str, ...] | None = None
) -> dict[str, Any] | None:
    """The chunks of a document that cover lines ``start``..``end`` (1-based, inclusive; ``end`` None: to the
    end), with the span they cover, or None when there is no such document."""
    if start < 1 or (end is not None and end < start):
        raise BadQuery(f"bad line range {start}..{end}", hint="Lines are 1-based: start ≥ 1 and end ≥ start.")
    doc = find_document(reader, key, readable)
    if doc is None:
        return None
    text = chunk_text(reader, expr.equals("document_id", doc["id"]))
    chunks = [c for c in text["chunks"] if c["lines"][1] >= start and (end is None or c["lines"][0] <= end)]
    fields = {k: doc[k] for k in ("id", "path", "title", "doc_type", "collection", "line_count")}
    return {
        **fields,
        "asked": [start, end],
        "lines": [chunks[0]["lines"][0], chunks[-1]["lines"][1]] if chunks else None,
        "chunks": chunks,
        "text": "\n\n".join(c["text"] for c in chunks),
    }


def outline(reader: CommittedIndex, key: str, readable: tuple[str, ...] | None = None) -> dict[str, Any] | None:
    """A document's sections in reading order (id, parent, heading, level, breadcrumb, lines), or None."""
    doc = find_document(reader, key, readable)
    if doc is None:
        return None
    with reader.duck() as store:
        rows = store.rows(
            "SELECT id, parent_id, heading, level, breadcrumb, line_start, line_end FROM sections "
            "WHERE document_id = ? ORDER BY ord",
            [doc["id"]],
        )
    sections = [
        {
            **{k: r[k] for k in ("id", "parent_id", "heading", "level", "breadcrumb")},
            "lines": [r["line_start"], r["line_end"]],
        }
        for r in rows
    ]
    return {**{k: doc[k] for k in ("id", "path", "title", "collection", "line_count")}, "sections": sections}


def section(reader: CommittedIndex, section_id: str, readable: tuple[str, ...] | None = None) -> dict[str, Any] | None:
    """A section's place (document, breadcrumb, lines) and its own text (not its subsections'), or None."""
    scope, params = expr.readable(readable, "d.collection").duck()
    with reader.duck() as store:
        found = store.rows(
            "SELECT s.id, s.document_id, d.path, d.title, d.collection, s.heading, s.level, s.breadcrumb, "
            f"s.parent_id, s.line_start, s.line_end FROM sections s JOIN documents d ON d.id = s.document_id "
            f"WHERE s.id = ? AND {scope}",
            [section_id, *params],
        )
    return {**found[0], **chunk_text(reader, expr.equals("section_id", section_id))} if found else None


def documents(
    reader: CommittedIndex,
    filters: dict[str, str],
    readable: tuple[str, ...] | None = None,
    limit: int = 50,
    offset: int = 0,
) -> dict[str, Any]:
    """The readable documents matching ``filters`` (as ``--filter``: doc_type, collection, path glob, dates,
    front-matter keys), by path: a page of ``limit`` from ``offset``, and how many there are."""
    if not 1 <= limit <= LIST_LIMIT or not 0 <= offset <= MAX_OFFSET:
        raise BadQuery(f"limit {limit}, offset {offset}", hint=f"limit is 1..{LIST_LIMIT}, offset 0..{MAX_OFFSET}.")
    check_filters(filters)
    with reader.duck() as store:
        ids = store.document_ids_matching(filters)
        with store.registered("listed_ids", {"id": ids}):
            scope, params = expr.readable(readable).duck()
            where = f"id IN (SELECT id FROM listed_ids) AND {scope}"
            total = store.value(f"SELECT count(*) FROM documents WHERE {where}", params)
            rows = store.rows(
                "SELECT id, path, title, doc_type, collection, language, line_count, version, is_latest "
                f"FROM documents WHERE {where} ORDER BY path, id LIMIT ? OFFSET ?",
                [*params, limit, offset],
            )
    return {"total": total, "offset": offset, "documents": rows}


def chunk_text(reader: CommittedIndex, where: expr.Clause) -> dict[str, Any]:
    """The chunks a clause selects, in reading order, with their lines (and pages), and their text."""
    rows = sorted(reader.chunks.rows(where.lance(), limit=1 << 30), key=lambda r: r["chunk_index"])
    chunks = [
        {
            "id": r["id"],
            "section_id": r["section_id"],
            "lines": [r["line_start"], r["line_end"]],
            "pages": [r["page_start"], r["page_end"]] if r.get("page_start") is not None else None,
            "text": r["text"],
        }
        for r in rows
    ]
    return {"chunks": chunks, "text": "\n\n".join(c["text"] for c in chunks)}


def scanned_pages(reader: CommittedIndex) -> dict[str, dict[int, float]]:
    """The pages OCR read, by document: page → the engine's confidence (0–100); read once per committed run."""

    def build() -> dict[str, dict[int, float]]:
        with reader.duck() as store:
            rows = store.rows(
                "SELECT id, json_extract_string(metadata, '$.ocr_pages') AS pages FROM documents "
                "WHERE json_extract(metadata, '$.ocr_pages') IS NOT NULL"
            )
        out = {}
        for r in rows:
            try:
                out[r["id"]] = {int(k): float(v) for k, v in json.loads(r["pages"]).items()}
            except (TypeError, ValueError, AttributeError):
                continue  # (an index is data: a malformed entry marks nothing)
        return out

    return reader.memo("scanned_pages", build)


def ocr_pages(reader: CommittedIndex) -> dict[str, int]:
    """Scanned pages OCR read (``pages_read``) and those not read (``pages_unread``: no engine, or ``--no-ocr``),
    counted by their files' source rows (ragkit/ingest/source.py ``unread_row``: a file none of whose pages was
    read has no document to count them by)."""
    read = sum(len(pages) for pages in scanned_pages(reader).values())
    with reader.duck() as store:
        marked = store.rows("SELECT rel, hash FROM sources WHERE contains(hash, ?) ORDER BY rel", [UNREAD])
    unread = 0
    for row in marked:
        count = row["hash"].rsplit(UNREAD, 1)[1]
        unread += int(count) if count.isdigit() else 0
    return {"pages_read": read, "pages_unread": unread, "unread_files": [r["rel"] for r in marked[:UNREAD_LISTED]]}
