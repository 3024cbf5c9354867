"""The chunks table's two forms, chosen once when a run's table is opened (``open_chunks``): ``MemoryChunks``, held
in memory and searched exactly, up to ``EXACT_MAX_ROWS`` chunks and while the table has no vector index;
``LanceChunks`` above that, searched by Lance's vector index and read from disk. What both do alike is their base,
``ChunkTable`` (ragkit/store/lance.py). A caller asks ``chunks.exact`` where its own plan differs by form (a large
table's hybrid query fuses ids before it reads rows: ragkit/retrieve/context.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from ragkit.store import lance
from ragkit.store.expr import in_list
from ragkit.store.lance import BM25F_MAX_ROWS, MASKS, ChunkTable, _combined, ann_query
from ragkit.store.lance_rows import _quiet, _rows


def open_chunks(lance_dir: Path | str, table: str, version: int, fts_language: str | None = None) -> ChunkTable:
    """Version ``version`` of the chunks table ``table``: in memory when it has no vector index and at most
    ``EXACT_MAX_ROWS`` chunks, else on disk (the choice holds for the version, which does not change)."""
    _quiet()
    import lance as pylance

    ds = pylance.dataset(f"{lance_dir}/{table}.lance", version=version)  # a folder or an object-store URI
    rows = ds.count_rows()
    indexed = any("IVF" in str(i.index_type).upper() for i in ds.describe_indices())
    form = LanceChunks if indexed or rows > lance.EXACT_MAX_ROWS else MemoryChunks
    return form(ds, version, fts_language, rows)


class MemoryChunks(ChunkTable):
    """The table held in memory once read: dense search exact over the vectors' matrix, prefilters as masks over
    it (the prefilter's ids read from Lance once, the last ``MASKS`` kept), rows taken by position."""

    exact = True

    def __init__(self, ds, version: int, fts_language: str | None = None, rows: int | None = None):
        super().__init__(ds, version, fts_language, rows)
        self._doc_positions: dict[str, list[int]] | None = None
        self._masks: dict[str, np.ndarray] = {}  # prefilter → its mask (``_allowed``)

    def _allowed(self, where: str) -> np.ndarray:
        """Row positions the prefilter lets through, as a mask (a served token's collections are the same
        prefilter query after query)."""
        if where not in self._masks:
            _, row_of, _ = self.matrix()
            mask = np.zeros(len(row_of), dtype=bool)
            mask[[row_of[i] for i in self.ds.to_table(columns=["id"], filter=where).column("id").to_pylist()]] = True
            if len(self._masks) >= MASKS:
                self._masks.pop(next(iter(self._masks)))
            self._masks[where] = mask
        return self._masks[where]

    def vector_search(self, vector: np.ndarray, limit: int, where: str | None) -> list[dict[str, Any]]:
        ids, _, mat = self.matrix()
        if not ids:
            return []
        q = np.asarray(vector, dtype=np.float32)
        sims = mat @ (q / (np.linalg.norm(q) or 1.0))
        if where:
            sims = np.where(self._allowed(where), sims, -np.inf)
        top = np.argpartition(-sims, limit)[:limit] if len(sims) > limit else np.arange(len(sims))
        top = sorted((int(i) for i in top if np.isfinite(sims[i])), key=lambda i: (-sims[i], i))
        rows = self.take(top)
        for r, i in zip(rows, top):
            r["_distance"] = 1.0 - float(sims[i])
        return rows

    def take(self, positions: list[int]) -> list[dict[str, Any]]:
        if not positions:
            return []
        rows = _rows(self._columns().take(positions))
        mat = self.matrix()[2]
        for r, i in zip(rows, positions):
            r["vector"] = mat[i]
        return rows

    def by_ids(self, ids: list[str], where: str | None = None) -> list[dict[str, Any]]:
        if not ids:
            return []
        _, row_of, _ = self.matrix()
        positions = [row_of[i] for i in ids if i in row_of]
        if where:
            allowed = self._allowed(where)
            positions = [p for p in positions if allowed[p]]
        return self.take(positions)

    def fts_search(
        self, text: str, limit: int, where: str | None, parts: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """BM25 ids and scores from Lance, the rows from memory."""
        return self.scored_rows(text, limit, where, parts) if text.strip() else []

    def rows_at(self, found: list[tuple[int, str, float]]) -> list[dict[str, Any]]:
        if not found:
            return []
        _, row_of, _ = self.matrix()
        return self.take([row_of[cid] for _, cid, _ in found])

    def titles(self) -> list[tuple[str, str]]:
        data = self._columns()
        return list(dict(zip(data.column("document_id").to_pylist(), data.column("title").to_pylist())).items())

    def best_of_documents(self, vector: np.ndarray, doc_ids: list[str], where: str | None) -> list[dict[str, Any]]:
        q = np.asarray(vector, dtype=np.float32)
        q = q / (np.linalg.norm(q) or 1.0)
        _, _, mat = self.matrix()
        positions = [p for d in doc_ids for p in self._doc_rows().get(d, ())]
        if where and positions:
            allowed = self._allowed(where)
            positions = [p for p in positions if allowed[p]]
        if not positions:
            return []
        sims = mat[positions] @ q
        docs = self._columns().column("document_id")
        best_pos: dict[str, tuple[float, int]] = {}
        for p, s in zip(positions, sims.tolist()):
            d = docs[p].as_py()
            if d not in best_pos or s > best_pos[d][0]:
                best_pos[d] = (s, p)
        order = sorted(best_pos.values(), key=lambda sp: (-sp[0], sp[1]))
        rows = self.take([p for _, p in order])
        for r, (s, _) in zip(rows, order):
            r["_distance"] = 1.0 - s
        return rows

    def _doc_rows(self) -> dict[str, list[int]]:
        """document id → its chunks' row positions (built once)."""
        if self._doc_positions is None:
            out: dict[str, list[int]] = {}
            for p, d in enumerate(self._columns().column("document_id").to_pylist()):
                out.setdefault(d, []).append(p)
            self._doc_positions = out
        return self._doc_positions


class LanceChunks(ChunkTable):
    """A large table (or one with a vector index): Lance answers dense search with its vector index and prefilters
    as SQL, and rows are read from disk."""

    def vector_search(self, vector: np.ndarray, limit: int, where: str | None) -> list[dict[str, Any]]:
        q = np.asarray(vector, dtype=np.float32)
        nearest = ann_query(q, limit, self.count())
        return _rows(self.ds.to_table(columns=self.COLUMNS, filter=where, prefilter=True, nearest=nearest))

    def take(self, positions: list[int]) -> list[dict[str, Any]]:
        return _rows(self.ds.take(positions, columns=self.COLUMNS)) if positions else []

    def by_ids(self, ids: list[str], where: str | None = None) -> list[dict[str, Any]]:
        if not ids:
            return []
        found = {r["id"]: r for r in self.rows(in_list("id", ids) + (f" AND ({where})" if where else ""), len(ids))}
        return [found[i] for i in ids if i in found]  # in the order asked, as in memory

    def fts_search(
        self, text: str, limit: int, where: str | None, parts: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """Read with the hits in one query where one query answers; with compound parts above
        ``BM25F_MAX_ROWS`` (each field searched apart) the ids first, then their rows by row id."""
        if not text.strip():
            return []
        if not (self.compounds and self.count() > BM25F_MAX_ROWS):
            query = _combined(text, parts) if self.compounds else text
            return _rows(self._bm25_table(query, self.COLUMNS + ["_score"], limit, where))
        return self.scored_rows(text, limit, where, parts)

    def rows_at(self, found: list[tuple[int, str, float]]) -> list[dict[str, Any]]:
        """Read once by Lance row id (reading 120 rows with every column took twice as long as their ids alone)."""
        if not found:
            return []
        return _rows(self.ds._take_rows([row_id for row_id, _, _ in found], columns=self.COLUMNS))

    def titles(self) -> list[tuple[str, str]]:
        data = self.ds.to_table(columns=["document_id", "title"])
        return list(dict(zip(data.column("document_id").to_pylist(), data.column("title").to_pylist())).items())

    def best_of_documents(self, vector: np.ndarray, doc_ids: list[str], where: str | None) -> list[dict[str, Any]]:
        q = np.asarray(vector, dtype=np.float32)
        q = q / (np.linalg.norm(q) or 1.0)
        rows = self.vector_search(
            q, 20 * len(doc_ids), in_list("document_id", doc_ids) + (f" AND ({where})" if where else "")
        )
        best: dict[str, dict[str, Any]] = {}
        for r in rows:
            best.setdefault(r["document_id"], r)
        return list(best.values())
