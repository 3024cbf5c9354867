"""LanceDB vector tables of entities, relations, community reports and summary-tree nodes.

Derived state, like the graphs: after each committed run the rows of the
DuckDB ``entities``, ``relations`` and ``communities`` tables (the source of
truth, vectors included) are written to LanceDB tables named after the run
(``entities_r7``, ``summaries_r7`` …) and older runs' tables are dropped. A reader opens the
tables of the run it reads; when they are missing (a crash right after the
commit) it searches the DuckDB rows in memory instead, with the same result.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ragkit.store.lance import _connect, _rows, in_list

QUERIES = {
    "entities": "SELECT key, collection, name, type, description, source_documents, chunk_ids, chunks, vector "
                "FROM entities WHERE vector IS NOT NULL",
    "relations": "SELECT a, b, collection, weight, description, source_document, chunk_ids, vector "
                 "FROM relations WHERE vector IS NOT NULL",
    "communities": "SELECT id, collection, level, parent_id, title, report, size, top_entities, source_documents, "
                   "vector FROM communities WHERE vector IS NOT NULL",
    "terms": "SELECT term, NULL::VARCHAR AS collection, vector FROM term_vectors WHERE vector IS NOT NULL",
    "summaries": "SELECT id, level, document_id, section_id, parent_id, collection, title, text, chunk_ids, "
                 "line_start, line_end, vector FROM summaries WHERE vector IS NOT NULL",
}


def table_name(kind: str, run_id: int) -> str:
    return f"{kind}_r{run_id}"


def _arrow(store, kind: str) -> pa.Table:
    """The DuckDB rows of one kind with a fixed-size vector column (what LanceDB searches)."""
    data = store.con.sql(QUERIES[kind]).to_arrow_table()
    vec = data.column("vector").combine_chunks()
    dim = len(vec[0]) if len(vec) else 1
    flat = vec.flatten().cast(pa.float32())
    fixed = pa.FixedSizeListArray.from_arrays(flat, dim) if len(vec) else pa.array([], pa.list_(pa.float32(), 1))
    return data.set_column(data.schema.get_field_index("vector"), "vector", fixed)


def write_tables(lance_dir: Path, store, run_id: int) -> dict[str, int]:
    """Write this run's tables, drop older runs'; returns row counts."""
    db = _connect(lance_dir)
    counts = {}
    for kind in QUERIES:
        data = _arrow(store, kind)
        db.create_table(table_name(kind, run_id), data, mode="overwrite")
        counts[kind] = data.num_rows
    current = {table_name(kind, run_id) for kind in QUERIES}
    for name in db.list_tables().tables:
        if name.rsplit("_r", 1)[0] in QUERIES and name not in current:
            db.drop_table(name)
    return counts


class KnowledgeVectors:
    """Read side: vector search over one run's entities, relations or community reports."""

    def __init__(self, lance_dir: Path, run_id: int, duck):
        self.lance_dir, self.run_id, self.duck = lance_dir, run_id, duck
        self._tables: dict[str, Any] = {}
        self._memory: dict[str, tuple[list[dict[str, Any]], np.ndarray]] = {}

    def _table(self, kind: str):
        if kind not in self._tables:
            try:
                db = _connect(self.lance_dir)
                self._tables[kind] = db.open_table(table_name(kind, self.run_id))
            except (ValueError, FileNotFoundError, OSError):  # not written for this run
                self._tables[kind] = None
        return self._tables[kind]

    def search(self, kind: str, vector: np.ndarray, limit: int,
               collections: set[str] | None = None) -> list[dict[str, Any]]:
        """Rows most similar to ``vector`` (cosine), each with ``similarity``; only ``collections`` if given."""
        table = self._table(kind)
        if table is not None:
            if table.count_rows() == 0:
                return []
            q = table.search(vector, vector_column_name="vector").metric("cosine").limit(limit)
            if collections is not None:
                q = q.where(in_list("collection", sorted(collections)) if collections else "false", prefilter=True)
            rows = _rows(q.to_arrow())
            for r in rows:
                r["similarity"] = 1.0 - float(r.pop("_distance"))
            return rows
        rows, mat = self._in_memory(kind)
        if not rows:
            return []
        sims = mat @ vector / (np.linalg.norm(mat, axis=1) * (np.linalg.norm(vector) or 1.0) + 1e-9)
        order = [i for i in np.argsort(-sims) if collections is None or rows[i]["collection"] in collections]
        return [{**rows[i], "similarity": float(sims[i])} for i in order[:limit]]

    def _in_memory(self, kind: str):
        if kind not in self._memory:
            with self.duck() as store:
                data = _arrow(store, kind)
            rows = _rows(data)
            mat = np.array([r["vector"] for r in rows], dtype=np.float32) if rows else np.zeros((0, 1))
            self._memory[kind] = (rows, mat)
        return self._memory[kind]
