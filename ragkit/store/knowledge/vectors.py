"""Vectors of entities, relations, communities and summary-tree nodes, derived from the chunk vectors.

Nothing of this is stored: an entity's vector is the normalised mean of the vectors of the chunks that
mention it, a relation's the normalised sum of its two entities' vectors and its strongest sentence's chunk
vector, a community's the mean of its members' vectors, a tree node's the mean of its chunks' vectors (a node
whose summary an LLM wrote keeps the vector stored with it). They are computed with numpy from the chunks
table's vectors the first time a query needs them, and kept for the reader's life (an interactive session or
a server computes them once).

Measured against stored vectors (name embeddings included) on hotpotqa-100: see scripts/README.md ("Index cost");
storing them cost 2.0 GiB of the 4.2 GiB German-law index the lean-index issue (13) started from.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ragkit.store.committed import CommittedIndex
    from ragkit.store.terms import TermVectors

BLOCK = 16_384  # rows gathered per step when averaging or summing (bounds the temporary matrices)

# the chunks of an entity (per collection) and of a relation are read from the extraction rows
_ENTITY_CHUNKS = (
    "SELECT m.entity AS key, d.collection, list(DISTINCT m.chunk_id ORDER BY m.chunk_id) AS chunk_ids "
    "FROM mentions m JOIN documents d ON d.id = m.document_id GROUP BY ALL"
)
_PAIR_CHUNKS = "SELECT a, b, collection, list(DISTINCT chunk_id ORDER BY chunk_id) AS chunk_ids FROM cooc GROUP BY ALL"
QUERIES = {
    "entities": f"SELECT e.key, e.collection, e.name, e.type, e.chunks, ec.chunk_ids FROM entities e "
    f"JOIN ({_ENTITY_CHUNKS}) ec USING (key, collection) ORDER BY e.collection, e.key",
    "relations": "SELECT r.a, r.b, r.collection, r.weight, r.source_document, r.source_chunk, pc.chunk_ids, "
    "coalesce(r.note, substring(c.text, r.sent_start + 1, r.sent_end - r.sent_start)) AS description "
    f"FROM relations r JOIN ({_PAIR_CHUNKS}) pc USING (a, b, collection) "
    "LEFT JOIN chunks c ON c.id = r.source_chunk ORDER BY r.collection, r.a, r.b",
    "communities": "SELECT c.id, c.collection, c.level, c.parent_id, c.title, c.size, c.top_entities, c.written, "
    "list(m.entity ORDER BY m.entity) AS members FROM communities c "
    "JOIN community_members m ON m.community_id = c.id GROUP BY ALL ORDER BY c.id",
    "summaries": "SELECT id, level, document_id, section_id, parent_id, collection, title, text, chunk_ids, "
    "line_start, line_end, vector FROM summaries ORDER BY id",
}


def unit_rows(m: np.ndarray) -> np.ndarray:
    return (m / np.maximum(np.linalg.norm(m, axis=1, keepdims=True), 1e-12)).astype(np.float32, copy=False)


def mean_rows(mat: np.ndarray, lists: list[list[int]]) -> np.ndarray:
    """Normalised mean of the rows of ``mat`` named by each list (a zero row for an empty list)."""
    out = np.zeros((len(lists), mat.shape[1]), dtype=np.float32)
    lengths = np.fromiter((len(x) for x in lists), dtype=np.int64, count=len(lists))
    if not lengths.sum():
        return out
    flat = np.fromiter((i for x in lists for i in x), dtype=np.int64, count=int(lengths.sum()))
    starts = np.concatenate([[0], np.cumsum(lengths)])
    first = 0
    while first < len(lists):
        last = first + 1
        while last < len(lists) and starts[last + 1] - starts[first] <= BLOCK:
            last += 1
        rows = np.arange(first, last)
        rows = rows[lengths[first:last] > 0]
        if len(rows):
            gathered = mat[flat[starts[first] : starts[last]]]
            sums = np.add.reduceat(gathered, starts[rows] - starts[first], axis=0)
            out[rows] = sums / lengths[rows, None]
        first = last
    return unit_rows(out)


class DerivedVectors:
    """Read side: cosine search over entities, relations, communities, tree nodes (and ``terms``, the
    vocabulary's vectors for ``--expand``, which ragkit/store/terms.py embeds on first use)."""

    def __init__(self, reader: CommittedIndex, terms: Callable[[], TermVectors]):
        self.reader = reader
        self.terms = terms  # the vocabulary's vectors (embedded with the index's embedder: ragkit/reader.py)
        self._chunks: tuple[dict[str, int], np.ndarray] | None = None
        self._kinds: dict[str, tuple[list[dict[str, Any]], np.ndarray]] = {}
        self._valid: dict[str, np.ndarray] = {}  # per kind: rows that have a vector

    def chunk_vectors(self) -> tuple[dict[str, int], np.ndarray]:
        """chunk id → row, and the matrix of the committed chunks' vectors."""
        if self._chunks is None:
            ids, mat = self.reader.chunks.all_vectors()
            self._chunks = ({cid: i for i, cid in enumerate(ids)}, mat)
        return self._chunks

    def _rows(self, kind: str) -> list[dict[str, Any]]:
        with self.reader.duck_alone() as store:
            return store.rows(QUERIES[kind])

    def matrix(self, kind: str) -> tuple[list[dict[str, Any]], np.ndarray]:
        """The rows of one kind and their vectors (computed once)."""
        if kind not in self._kinds:
            self._kinds[kind] = getattr(self, f"_{kind}")()
        return self._kinds[kind]

    def _means_over_chunks(self, rows: list[dict[str, Any]]) -> np.ndarray:
        row_of, mat = self.chunk_vectors()
        return mean_rows(mat, [[row_of[c] for c in r["chunk_ids"] if c in row_of] for r in rows])

    def _entities(self):
        rows = self._rows("entities")
        return rows, self._means_over_chunks(rows)

    def _relations(self):
        rows = self._rows("relations")
        ents, evec = self.matrix("entities")
        at = {(e["key"], e["collection"]): i for i, e in enumerate(ents)}
        row_of, cmat = self.chunk_vectors()
        dim = cmat.shape[1]
        a = np.fromiter((at.get((r["a"], r["collection"]), -1) for r in rows), dtype=np.int64, count=len(rows))
        b = np.fromiter((at.get((r["b"], r["collection"]), -1) for r in rows), dtype=np.int64, count=len(rows))
        c = np.fromiter((row_of.get(r["source_chunk"], -1) for r in rows), dtype=np.int64, count=len(rows))
        out = np.zeros((len(rows), dim), dtype=np.float32)
        for start in range(0, len(rows), BLOCK):  # gathered matrices in blocks; a row of no entity/chunk adds 0
            part = slice(start, start + BLOCK)
            for idx, mat in ((a[part], evec), (b[part], evec), (c[part], cmat)):
                known = idx >= 0
                if len(mat) and known.any():
                    out[part][known] += mat[idx[known]]
            out[part] = unit_rows(out[part])
        return rows, out

    def _communities(self):
        rows = self._rows("communities")
        ents, evec = self.matrix("entities")
        at = {(e["key"], e["collection"]): i for i, e in enumerate(ents)}
        lists = [[at[(m, r["collection"])] for m in r.pop("members") if (m, r["collection"]) in at] for r in rows]
        return rows, mean_rows(evec, lists) if len(evec) else np.zeros((len(rows), 1), dtype=np.float32)

    def _summaries(self):
        rows = self._rows("summaries")
        mat = self._means_over_chunks(rows)
        for i, r in enumerate(rows):  # an LLM-written node keeps the vector its text gave it
            stored = r.pop("vector")
            if stored is not None:
                mat[i] = np.asarray(stored, dtype=np.float32)
        return rows, mat

    def search(
        self, kind: str, vector: np.ndarray, limit: int, collections: set[str] | None = None, describe: bool = True
    ) -> list[dict[str, Any]]:
        """Rows most similar to ``vector`` (cosine), each with ``similarity``; only ``collections`` if given.
        Entities get their description and communities their report unless ``describe`` is False."""
        if kind == "terms":
            return self.terms().search(vector, limit)
        rows, mat = self.matrix(kind)
        if not rows:
            return []
        q = np.asarray(vector, dtype=np.float32)
        sims = mat @ (q / (np.linalg.norm(q) or 1.0))
        if kind not in self._valid:  # a row without a vector (no chunk vector to derive it from) is never a hit
            self._valid[kind] = mat.any(axis=1)
        keep = self._valid[kind]
        if collections is not None:
            keep = keep & np.array([r["collection"] in collections for r in rows])
        sims = np.where(keep, sims, -np.inf)
        top = np.argpartition(-sims, min(limit, len(sims) - 1))[:limit] if len(sims) > limit else np.arange(len(sims))
        order = sorted((i for i in top if np.isfinite(sims[i])), key=lambda i: -sims[i])
        out = [{**rows[i], "similarity": float(sims[i])} for i in order]
        if describe and kind in ("entities", "communities") and out:  # their text is written when shown
            rows = self.reader.knowledge_rows()
            (rows.describe if kind == "entities" else rows.community_reports)(out)
        return out
