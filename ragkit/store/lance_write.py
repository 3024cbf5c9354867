"""LanceDB's write side: a run's chunk rows (``chunk_rows``), a Ray worker's data files (``write_fragment``) and
the ``ChunkWriter`` that deletes, appends, builds the full-text and vector indexes and returns the table version
a run commits (ragkit/store/lance.py reads it back).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ragkit.errors import BadInput
from ragkit.records import Chunk, Document
from ragkit.store.expr import in_list
from ragkit.store.lance import SCALAR_INDEXED, build_ann
from ragkit.store.lance_rows import FtsSettings, _connect, _quiet, _rows, chunk_schema
from ragkit.text import compound_parts

COMPACT_ROWS = 16_384  # fragments with fewer rows are merged at the end of a run
WRITE_ROWS = 32_768  # chunk rows built and written at a time: a run's Arrow copy of all its rows held at once
# took 1.2 GB of all federal law's 265,000 chunks (scripts/README.md "All of German federal law")


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
        cols["terms"].append(" ".join(compound_parts(c.embed_text, d.language)) or None)
        cols["path"].append(d.path)
        cols["title"].append(d.title)
        cols["doc_type"].append(d.doc_type)
        cols["collection"].append(d.collection)
        cols["external_id"].append(d.external_id)
        cols["line_start"].append(c.line_start)
        cols["line_end"].append(c.line_end)
        cols["token_count"].append(c.token_count)
        cols["boundary_confidence"].append(c.boundary_confidence)
        cols["page_start"].append(c.page_start)
        cols["page_end"].append(c.page_end)
    flat = pa.array(vectors.astype(np.float32, copy=False).reshape(-1))
    arrays = [pa.array(cols[n], type=chunk_schema(dim).field(n).type) for n in cols]
    arrays.append(pa.FixedSizeListArray.from_arrays(flat, dim))
    return pa.Table.from_arrays(arrays, schema=chunk_schema(dim))


def write_fragment(table_uri: str, chunks: list[Chunk], docs: dict[str, Document], vectors: np.ndarray) -> list[str]:
    """Chunk rows written as data files of the table at ``table_uri`` that no version names yet (a Ray worker's
    part of a run; ``ChunkWriter.append_fragments`` commits them); their fragments' metadata as JSON."""
    import json

    _quiet()
    from lance.fragment import write_fragments

    rows = chunk_rows(chunks, docs, vectors)
    return [json.dumps(f.to_json()) for f in write_fragments(rows, table_uri, schema=rows.schema)]


class ChunkWriter:
    """Write side used by one indexing run; returns the new version to commit. ``guard`` is called before
    every write (on object storage: raises when this run no longer holds the index's lease)."""

    def __init__(
        self,
        lance_dir: Path | str,
        table: str,
        committed_version: int | None,
        dim: int,
        fts: FtsSettings,
        vector_index_min_rows: int,
        rebuild_fts: bool = False,
        guard: Callable[[], None] | None = None,
    ):
        if isinstance(lance_dir, Path):
            lance_dir.mkdir(parents=True, exist_ok=True)
        self.guard = guard or (lambda: None)
        self.guard()
        self.lance_dir = lance_dir
        self.db = _connect(lance_dir)
        self.name = table
        self.dim = dim
        self.fts = fts
        self.vector_index_min_rows = vector_index_min_rows
        self.table = None
        if table in self.db.list_tables().tables and committed_version is None:
            self.db.drop_table(table)  # an unfinished first run's table: nobody reads it
        if table in self.db.list_tables().tables:
            self.table = self.db.open_table(table)
            if committed_version is not None and self.table.version != committed_version:
                # a previous run died after writing: go back to what was committed (no clean-up this time:
                # it keeps only the newest version, and readers read the committed one; the next run cleans)
                self.table.restore(committed_version)
            elif committed_version is not None:
                self._forget_older_versions(committed_version)
        self._fresh_index = self.table is None or rebuild_fts  # rebuild_fts: the BM25 settings changed

    def _forget_older_versions(self, committed: int) -> None:
        """Drop the versions older than the committed one while it is the newest (a plain clean-up, no
        compaction: Lance keeps the newest version, which readers read). Never after a restore, when the
        committed version is no longer the newest."""
        try:
            if self.table.version == committed and len(self.table.list_versions()) > 1:
                self.table.to_lance().cleanup_old_versions(older_than=timedelta(0))
        except Exception:  # cleanup is an optimisation; never fail a run on it
            pass

    def delete_documents(self, doc_ids: list[str]) -> None:
        self._delete_where_in("document_id", doc_ids)

    def _delete_where_in(self, column: str, values: list[str]) -> None:
        """Delete the rows whose ``column`` is one of ``values`` (500 to a delete)."""
        if self.table is None or not values:
            return
        self.guard()
        for i in range(0, len(values), 500):
            self.table.delete(in_list(column, values[i : i + 500]))

    @property
    def uri(self) -> str:
        """The table's dataset (a folder or an object-store URI)."""
        return f"{self.lance_dir}/{self.name}.lance"

    def ensure_table(self) -> None:
        """The table exists (empty if new): Ray workers write their fragments into it."""
        if self.table is None:
            self.guard()
            self.table = self.db.create_table(self.name, schema=chunk_schema(self.dim))

    def append_fragments(self, fragments: list[str]) -> None:
        """Commit the fragments Ray workers wrote (``write_fragment``) as one new version (a Lance Append)."""
        if not fragments:
            return
        import lance
        from lance.fragment import FragmentMetadata

        self.ensure_table()
        metas = [FragmentMetadata.from_json(f) for f in fragments]
        if isinstance(self.lance_dir, Path):  # workers on other machines wrote to their own disks
            missing = [
                f.path
                for m in metas
                for f in m.files
                if not (self.lance_dir / f"{self.name}.lance" / "data" / f.path).exists()
            ]
            if missing:
                raise BadInput(
                    f"{len(missing)} data file(s) the Ray workers wrote are not in {self.uri}",
                    hint="On a Ray cluster put the index where every node writes: object storage "
                    "(--index s3://…) or a file system mounted at the same path.",
                )
        self.guard()
        lance.LanceDataset.commit(self.uri, lance.LanceOperation.Append(metas), read_version=self.table.version)
        self.table.checkout_latest()

    def delete_ids(self, chunk_ids: list[str]) -> None:
        self._delete_where_in("id", chunk_ids)

    def delete_all(self) -> None:
        if self.table is not None:
            self.guard()
            self.table.delete("true")
        self._fresh_index = True  # settings may have changed: rebuild the FTS index

    def add(self, rows: pa.Table) -> None:
        if rows.num_rows == 0:
            return
        self.guard()
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
                part = rest[start : start + 1000]
                rows = _rows(
                    self.table.search().where(in_list("id", part)).select(["id", "vector"]).limit(len(part)).to_arrow()
                )
                out.update((r["id"], r["vector"]) for r in rows)
            return out

        return lookup

    def finish(self) -> int:
        """Bring indexes up to date and return the version to commit."""
        self.guard()
        if self.table is None:
            self.table = self.db.create_table(self.name, schema=chunk_schema(self.dim))
        from lancedb.index import FTS

        # small fragments (incremental runs', a small Ray run's) merged up to COMPACT_ROWS rows, deleted rows
        # dropped; larger fragments (a big Ray run's) are left as the workers wrote them, so the driver never
        # rewrites a large table. No clean-up (LanceDB's optimize() would remove versions over 7 days old, the
        # committed one among them, before the commit).
        self.table.to_lance().optimize.compact_files(target_rows_per_fragment=COMPACT_ROWS)
        self.table.checkout_latest()
        indexed = {c for i in self.table.list_indices() if i.index_type == "FTS" for c in i.columns}
        if self._fresh_index or indexed != set(self.fts.columns()):
            for stale in (
                i.name
                for i in self.table.list_indices()
                if i.index_type == "FTS" and i.columns[0] not in self.fts.columns()
            ):
                self.table.drop_index(stale)
            for column in self.fts.columns():
                self.table.create_index(
                    column,
                    config=FTS(
                        language=self.fts.language,
                        stem=self.fts.stem,
                        remove_stop_words=self.fts.remove_stop_words,
                        ascii_folding=True,
                    ),
                    replace=True,
                )
        else:  # new rows into the FTS (and vector) indexes
            self.table.to_lance().optimize.optimize_indices()
            self.table.checkout_latest()
        rows = self.table.count_rows()
        if rows >= self.vector_index_min_rows and not any(
            i.index_type.startswith("IVF") for i in self.table.list_indices()
        ):
            build_ann(self.table.to_lance())
            self.table.checkout_latest()
        for column in SCALAR_INDEXED if rows >= self.vector_index_min_rows else ():
            if not any(i.columns == [column] for i in self.table.list_indices()):
                self.table.to_lance().create_scalar_index(column, index_type="BTREE")
                self.table.checkout_latest()
        return self.table.version
