"""LanceDB: the chunks table with its vectors and full-text (BM25) index.

Every write makes a new table version; the version a committed run produced
is recorded in DuckDB and the manifest, and readers check that version out.
A run that dies half-way therefore leaves the committed version readable.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ragkit.records import Chunk, Document

_LOG_MUTED = False


def _connect(path: Path):
    global _LOG_MUTED
    import os

    if not _LOG_MUTED:  # lance's Rust logger is chatty at WARN for harmless events
        os.environ.setdefault("LANCE_LOG", "error")
        os.environ.setdefault("LANCEDB_LOG", "error")
        _LOG_MUTED = True
    import lancedb

    return lancedb.connect(str(path))


def chunk_schema(dim: int) -> pa.Schema:
    return pa.schema([
        ("id", pa.string()), ("document_id", pa.string()), ("section_id", pa.string()),
        ("chunk_index", pa.int32()), ("header", pa.string()),
        ("content", pa.string()),  # header + "\n" + text: what was embedded and what BM25 indexes (the text
        # itself is read back from it: a column of its own would store every chunk twice)
        ("path", pa.string()), ("title", pa.string()), ("doc_type", pa.string()),
        ("collection", pa.string()), ("external_id", pa.string()),
        ("line_start", pa.int32()), ("line_end", pa.int32()), ("token_count", pa.int32()),
        ("boundary_confidence", pa.float32()),
        ("vector", pa.list_(pa.float32(), dim)),
    ])


def chunk_rows(chunks: list[Chunk], docs: dict[str, Document], vectors: np.ndarray) -> pa.Table:
    dim = vectors.shape[1]
    cols: dict[str, list[Any]] = {name: [] for name in chunk_schema(dim).names if name != "vector"}
    for c in chunks:
        d = docs[c.document_id]
        cols["id"].append(c.id)
        cols["document_id"].append(c.document_id)
        cols["section_id"].append(c.section_id)
        cols["chunk_index"].append(c.index)
        cols["header"].append(c.header)
        cols["content"].append(c.embed_text)
        cols["path"].append(d.path)
        cols["title"].append(d.title)
        cols["doc_type"].append(d.doc_type)
        cols["collection"].append(d.collection)
        cols["external_id"].append(d.external_id)
        cols["line_start"].append(c.line_start)
        cols["line_end"].append(c.line_end)
        cols["token_count"].append(c.token_count)
        cols["boundary_confidence"].append(c.boundary_confidence)
    flat = pa.array(vectors.astype(np.float32, copy=False).reshape(-1))
    arrays = [pa.array(cols[n], type=chunk_schema(dim).field(n).type) for n in cols]
    arrays.append(pa.FixedSizeListArray.from_arrays(flat, dim))
    return pa.Table.from_arrays(arrays, schema=chunk_schema(dim))


def sql_str(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


def in_list(column: str, values: list[str]) -> str:
    return f"{column} IN ({', '.join(sql_str(v) for v in values)})"


@dataclass
class FtsSettings:
    language: str = "English"
    stem: bool = True
    remove_stop_words: bool = True


def chunk_text(content: str, header: str | None) -> str:
    """A chunk's text from the embedded content (header + newline + text)."""
    return content[len(header) + 1:] if header and content.startswith(header + "\n") else content


def _rows(table: pa.Table) -> list[dict[str, Any]]:
    """Arrow result → row dicts, with vectors as numpy rows (no per-float Python objects)."""
    cols = {name: table.column(name).to_pylist() for name in table.column_names if name != "vector"}
    if "content" in cols and "header" in cols:
        cols["text"] = [chunk_text(c, h) for c, h in zip(cols["content"], cols["header"])]
    vectors = None
    if "vector" in table.column_names and table.num_rows:
        arr = table.column("vector").combine_chunks()
        vectors = arr.flatten().to_numpy(zero_copy_only=False).reshape(table.num_rows, -1)
    return [{**{k: v[i] for k, v in cols.items()}, "vector": vectors[i] if vectors is not None else None}
            for i in range(table.num_rows)]


class ChunkTable:
    """Read side: one checked-out version of the chunks table."""

    COLUMNS = ["id", "document_id", "section_id", "chunk_index", "content", "header", "path", "title",
               "doc_type", "collection", "external_id", "line_start", "line_end", "token_count",
               "boundary_confidence", "vector"]

    def __init__(self, lance_dir: Path, table: str, version: int):
        self.db = _connect(lance_dir)
        self.table = self.db.open_table(table)
        self.table.checkout(version)
        self.version = version

    def count(self) -> int:
        return self.table.count_rows()

    def vector_search(self, vector: np.ndarray, limit: int, where: str | None) -> list[dict[str, Any]]:
        q = self.table.search(vector, vector_column_name="vector").metric("cosine").limit(limit)
        q = q.select(self.COLUMNS + ["_distance"])
        if where:
            q = q.where(where, prefilter=True)
        return _rows(q.to_arrow())

    def fts_search(self, text: str, limit: int, where: str | None) -> list[dict[str, Any]]:
        if not text.strip():
            return []
        q = self.table.search(text, query_type="fts", fts_columns="content").limit(limit)
        q = q.select(self.COLUMNS + ["_score"])
        if where:
            q = q.where(where, prefilter=True)
        return _rows(q.to_arrow())

    def rows(self, where: str, limit: int) -> list[dict[str, Any]]:
        """Plain filtered scan (no ranking); rows carry ``_score`` 0."""
        rows = _rows(self.table.search().where(where).select(self.COLUMNS).limit(limit).to_arrow())
        for r in rows:
            r["_score"] = 0.0
        return rows

    def all_vectors(self) -> tuple[list[str], np.ndarray]:
        """Every chunk's id and vector at this version (one float32 matrix)."""
        n = self.count()
        if not n:
            return [], np.zeros((0, 1), dtype=np.float32)
        data = self.table.search().select(["id", "vector"]).limit(n).to_arrow()
        vec = data.column("vector").combine_chunks()
        return data.column("id").to_pylist(), vec.flatten().to_numpy(zero_copy_only=False).reshape(n, -1)

    def size_bytes(self) -> int:
        return sum(p.stat().st_size for p in Path(self.db.uri).rglob("*") if p.is_file())


class ChunkWriter:
    """Write side used by one indexing run; returns the new version to commit."""

    def __init__(self, lance_dir: Path, table: str, committed_version: int | None, dim: int, fts: FtsSettings,
                 vector_index_min_rows: int, rebuild_fts: bool = False):
        lance_dir.mkdir(parents=True, exist_ok=True)
        self.db = _connect(lance_dir)
        self.name = table
        self.dim = dim
        self.fts = fts
        self.vector_index_min_rows = vector_index_min_rows
        self.table = None
        if table in self.db.list_tables().tables:
            self.table = self.db.open_table(table)
            if committed_version is not None and self.table.version != committed_version:
                # a previous run died after writing: go back to what was committed
                self.table.restore(committed_version)
            if committed_version is not None:
                self._forget_older_versions(committed_version)
        self._fresh_index = self.table is None or rebuild_fts  # rebuild_fts: the BM25 settings changed

    def _forget_older_versions(self, committed: int) -> None:
        """Drop versions older than the committed one (safe: nobody reads them)."""
        try:
            versions = {v["version"]: v["timestamp"] for v in self.table.list_versions()}
            ts = versions.get(committed)
            if ts is None or len(versions) < 3:
                return
            age = datetime.now(timezone.utc) - ts.astimezone(timezone.utc)
            if age > timedelta(seconds=1):
                self.table.optimize(cleanup_older_than=age - timedelta(milliseconds=500))
        except Exception:  # cleanup is an optimisation; never fail a run on it
            pass

    def delete_documents(self, doc_ids: list[str]) -> None:
        if self.table is None or not doc_ids:
            return
        for i in range(0, len(doc_ids), 500):
            self.table.delete(in_list("document_id", doc_ids[i:i + 500]))

    def delete_all(self) -> None:
        if self.table is not None:
            self.table.delete("true")
        self._fresh_index = True  # settings may have changed: rebuild the FTS index

    def add(self, rows: pa.Table) -> None:
        if rows.num_rows == 0:
            return
        if self.table is None:
            self.table = self.db.create_table(self.name, rows, schema=chunk_schema(self.dim))
        else:
            self.table.add(rows)

    def vectors_lookup(self, fresh: dict[str, np.ndarray]):
        """chunk ids → {id: vector}: this run's vectors from memory, older chunks' from the table."""
        def lookup(ids: list[str]) -> dict[str, np.ndarray]:
            out = {i: fresh[i] for i in ids if i in fresh}
            rest = [i for i in ids if i not in fresh]
            for start in range(0, len(rest) if self.table is not None else 0, 1000):
                part = rest[start:start + 1000]
                rows = _rows(self.table.search().where(in_list("id", part)).select(["id", "vector"])
                             .limit(len(part)).to_arrow())
                out.update((r["id"], r["vector"]) for r in rows)
            return out
        return lookup

    def finish(self) -> int:
        """Bring indexes up to date and return the version to commit."""
        if self.table is None:
            self.table = self.db.create_table(self.name, schema=chunk_schema(self.dim))
        from lancedb.index import FTS

        if self._fresh_index or not any(i.index_type == "FTS" for i in self.table.list_indices()):
            self.table.create_index("content", config=FTS(
                language=self.fts.language, stem=self.fts.stem,
                remove_stop_words=self.fts.remove_stop_words, ascii_folding=True,
            ), replace=True)
        else:
            self.table.optimize()  # merges new rows into the FTS (and vector) indexes, compacts
        rows = self.table.count_rows()
        if rows >= self.vector_index_min_rows and not any(i.index_type.startswith("IVF")
                                                         for i in self.table.list_indices()):
            self.table.create_index(metric="cosine", vector_column_name="vector", index_type="IVF_PQ")
        return self.table.version
