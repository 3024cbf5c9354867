"""LanceDB: the chunks table with its vectors and full-text (BM25) index, read (``ChunkTable``), and its vector
index (``ANN_TYPE``). Its layout (schema, BM25 settings, rows read back) is ragkit/store/lance_rows.py.

Every write makes a new table version; the version a committed run produced
is recorded in DuckDB and the manifest, and readers check that version out.
A run that dies half-way therefore leaves the committed version readable.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa

from ragkit.store.lance_rows import COMPOUND_FTS, _rows

# at most this many chunks are searched exactly, as one in-memory matrix; above it (or once an ANN index
# exists) Lance's vector index answers (crossover measured by scripts/bench_cost.py vectors, scripts/README.md "Query latency")
EXACT_MAX_ROWS = 250_000
# up to this many chunks BM25 reads content and terms as one field (BM25F: 1-2 ms over the 8 laws' 1,048 chunks);
# above, each field apart, terms weighted TERMS_WEIGHT (over the 8 laws' 68 German questions BM25F found 29 first
# and 43 in the top 3; the fields apart 29 / 41 at 0.5, 28 / 42 at 1.0)
BM25F_MAX_ROWS = 50_000
TERMS_WEIGHT = 0.5
# the vector index (built from ``vector_index_min_rows``): IVF with RaBitQ codes, a partition per ANN_PARTITION_ROWS
# rows, ANN_PROBE_SHARE of the partitions searched and the candidates re-ranked with the stored vectors
# (ANN_REFINE_ROWS). IVF_PQ with LanceDB's defaults kept 0.66 of the exact top 10 on the German federal laws' vectors;
# IVF_RQ with these settings 0.99 at 3 ms (scripts/README.md "All of German federal law")
ANN_TYPE = "IVF_RQ"
ANN_PARTITION_ROWS = 1024
ANN_PROBE_SHARE, ANN_MIN_PROBES = 0.3, 16
ANN_REFINE_ROWS = 50  # candidates re-ranked with the stored vectors: k × refine factor, at least k
# columns with a BTREE index once a table has a vector index (below, the query path reads them from memory):
# rows by id (the graph strategies', the full tier's, a hybrid query's kept hits) without a scan, all federal
# law's 40 ids 16 → 7 ms; a cited section's chunks 11.6 → 1.5 ms; the best chunk of the documents a query names
# (links), an ANN search filtered by document, 15.4 → 7.8 ms. 5 MB for all federal law's 266,399 chunks
SCALAR_INDEXED = ("id", "section_id", "document_id")
MASKS = 32  # prefilter masks kept per table version
IO_BUFFER = 8 << 20  # bytes Lance reads ahead when the matrix is loaded (its default took 40 MB more memory)


def ann_partitions(rows: int) -> int:
    return max(1, rows // ANN_PARTITION_ROWS)


def ann_query(q: np.ndarray, limit: int, rows: int, column: str = "vector") -> dict[str, Any]:
    """Lance's ``nearest`` for a table of ``rows`` with a vector index (see ``ANN_TYPE``)."""
    partitions = ann_partitions(rows)
    nprobes = min(partitions, max(ANN_MIN_PROBES, round(ANN_PROBE_SHARE * partitions)))
    refine = max(1, -(-ANN_REFINE_ROWS // max(limit, 1)))  # top 10: × 5; a hybrid query's 120: × 1 (3.5 ms less,
    # the same recall@10 over federal law's 60 queries, 0.997)
    return {"column": column, "q": q, "k": limit, "metric": "cosine", "nprobes": nprobes, "refine_factor": refine}


def spread_sample(ds, rows: int, n: int) -> np.ndarray:
    """The vectors of ``n`` rows of a Lance dataset of ``rows`` rows, spread evenly over it."""
    positions = sorted({int(i * rows / n) for i in range(n)}) if rows else []
    if not positions:
        return np.zeros((0, 1), dtype=np.float32)
    vec = ds.take(positions, columns=["vector"]).column("vector").combine_chunks()
    return vec.values.to_numpy(zero_copy_only=False).reshape(len(positions), -1)


def build_ann(ds, column: str = "vector") -> None:
    """The vector index over ``column`` of a Lance dataset (see ``ANN_TYPE``)."""
    ds.create_index(column, ANN_TYPE, metric="cosine", num_partitions=ann_partitions(ds.count_rows()), replace=True)


def _combined(text: str, parts: list[str] | None):
    """BM25F over content and terms (a compound index's query with its compounds' parts)."""
    from lance.query import CombinedFieldsQuery

    return CombinedFieldsQuery(" ".join([text, *(parts or [])]), ["content", "terms"])


class ChunkTable:
    """Read side: one checked-out version of the chunks table, in one of two forms chosen once when it is opened
    (``open_chunks``, ragkit/store/chunks.py): ``MemoryChunks`` up to ``EXACT_MAX_ROWS`` chunks and no vector
    index (the table held in memory once read: the vectors as one float32 matrix, the other columns as an Arrow
    table; dense search exact over the matrix, 10,833 × 384 in 0.6 ms where Lance's flat scan took ~50 ms; rows
    from memory by position, 1 ms for 40 rows, 2.3 ms from disk), ``LanceChunks`` above it (Lance's vector index
    answers and rows are read from disk). This base holds what both do alike: BM25 ids and scores from Lance's
    full-text index, the vector index's ids, plain filtered scans. Read with pylance, the Lance library LanceDB
    itself is built on, which opens the same dataset without LanceDB's ~1 s import. Prefilters are Lance SQL.
    """

    COLUMNS = [
        "id",
        "document_id",
        "section_id",
        "chunk_index",
        "content",
        "header",
        "path",
        "title",
        "doc_type",
        "collection",
        "external_id",
        "line_start",
        "line_end",
        "token_count",
        "boundary_confidence",
        "page_start",
        "page_end",
        "vector",
    ]
    exact = False  # held in memory and searched exactly (``MemoryChunks``)

    def __init__(self, ds, version: int, fts_language: str | None = None, rows: int | None = None):
        self.ds = ds
        self.version = version
        self._count = rows
        self._matrix: tuple[list[str], dict[str, int], np.ndarray] | None = None
        self._table: pa.Table | None = None  # every column but the vector, in row order
        self._sample: np.ndarray | None = None
        self.compounds = COMPOUND_FTS.get(fts_language or "")  # "de"/"sv": BM25 also searches the parts

    def count(self) -> int:
        if self._count is None:  # (a checked-out version does not change)
            self._count = self.ds.count_rows()
        return self._count

    def matrix(self) -> tuple[list[str], dict[str, int], np.ndarray]:
        """Every chunk's id, id → row position, and the float32 matrix of their vectors (read once)."""
        if self._matrix is None:
            data = self.ds.to_table(columns=["id", "vector"], io_buffer_size=IO_BUFFER)
            ids = data.column("id").to_pylist()
            vec = data.column("vector").combine_chunks()
            mat = (
                vec.values.to_numpy(zero_copy_only=False).reshape(len(ids), -1)
                if ids
                else np.zeros((0, 1), dtype=np.float32)
            )
            self._matrix = (ids, {cid: i for i, cid in enumerate(ids)}, mat)
        return self._matrix

    def bm25_ids(
        self, text: str, limit: int, where: str | None, parts: list[str] | None = None
    ) -> list[tuple[int, str, float]]:
        """(Lance row id, chunk id, BM25 score) of the best ``limit`` chunks for ``text``, best first. In an index
        with compound parts (``compounds``) the query with its own compounds' ``parts`` is searched over content
        and terms (the content's compounds' parts): as one field (BM25F, lance's ``CombinedFieldsQuery``) up to
        ``BM25F_MAX_ROWS`` chunks; above, each field apart and a chunk's scores added (``TERMS_WEIGHT``), since
        BM25F skips no posting list: 26-66 ms on all of federal law where each field alone takes 1-4 ms
        (scripts/README.md "All of German federal law")."""
        if not text.strip():
            return []
        if not self.compounds:  # "content" has the only index (the MatchQuery naming it took 0.9 ms more)
            return self._bm25(text, limit, where)
        if self.count() <= BM25F_MAX_ROWS:
            return self._bm25(_combined(text, parts), limit, where)
        from lance.query import MatchQuery

        words = " ".join([text, *(parts or [])])

        score: dict[int, float] = {}
        chunk: dict[int, str] = {}
        for field, weight in (("content", 1.0), ("terms", TERMS_WEIGHT)):
            for row_id, cid, value in self._bm25(MatchQuery(words, field), limit, where):
                score[row_id] = score.get(row_id, 0.0) + weight * value
                chunk[row_id] = cid
        best = sorted(score, key=lambda i: -score[i])[:limit]
        return [(i, chunk[i], score[i]) for i in best]

    def nearest_ids(self, vector: np.ndarray, limit: int, where: str | None) -> list[tuple[int, str, float]]:
        """(Lance row id, chunk id, cosine) of the ``limit`` nearest chunks by the vector index, nearest first,
        no other column read (a large table; the rows of the hits a query keeps are read by ``rows_at``)."""
        found = self.ds.to_table(
            columns=["id", "_distance"],
            with_row_id=True,
            filter=where,
            prefilter=True,
            nearest=ann_query(np.asarray(vector, dtype=np.float32), limit, self.count()),
            disable_scoring_autoprojection=True,
        )
        cosines = [1.0 - float(d) for d in found.column("_distance").to_pylist()]
        return list(zip(found.column("_rowid").to_pylist(), found.column("id").to_pylist(), cosines))

    def vectors_at(self, row_ids: list[int]) -> np.ndarray:
        """The vectors of these Lance row ids, in that order (one row each)."""
        if not row_ids:
            return np.zeros((0, 1), dtype=np.float32)
        vec = self.ds._take_rows(row_ids, columns=["vector"]).column("vector").combine_chunks()
        return vec.values.to_numpy(zero_copy_only=False).reshape(len(row_ids), -1)

    def _bm25(self, query: Any, limit: int, where: str | None) -> list[tuple[int, str, float]]:
        found = self._bm25_table(query, ["id", "_score"], limit, where)
        return list(
            zip(found.column("_rowid").to_pylist(), found.column("id").to_pylist(), found.column("_score").to_pylist())
        )

    def _bm25_table(self, query: Any, columns: list[str], limit: int, where: str | None) -> pa.Table:
        if isinstance(query, str):  # Lance reads quotes in a string as a phrase query, which needs positions the
            query = query.replace('"', " ")  # index does not keep (ragkit's own "phrases" are filters: query_syntax)
        return self.ds.to_table(
            columns=columns,
            with_row_id=True,
            filter=where,
            prefilter=True,
            limit=limit,
            full_text_query=query,
            disable_scoring_autoprojection=True,
        )

    def rows(self, where: str, limit: int) -> list[dict[str, Any]]:
        """Plain filtered scan (no ranking); rows carry ``_score`` 0."""
        rows = _rows(self.ds.to_table(columns=self.COLUMNS, filter=where, limit=limit))
        for r in rows:
            r["_score"] = 0.0
        return rows

    def _columns(self) -> pa.Table:
        """Every column but the vector, in row order (exact mode: read once and kept)."""
        if self._table is None:
            self._table = self.ds.to_table(
                columns=[c for c in self.COLUMNS if c != "vector"], io_buffer_size=IO_BUFFER
            ).combine_chunks()  # take: 1.1 → 0.2 ms
        return self._table

    def sample(self, n: int) -> np.ndarray:
        """The vectors of ``n`` chunks spread evenly over the table (the same ones every time; read once)."""
        if self._sample is None:
            self._sample = spread_sample(self.ds, self.count(), n)
        return self._sample

    def all_vectors(self) -> tuple[list[str], np.ndarray]:
        """Every chunk's id and vector at this version (one float32 matrix)."""
        ids, _, mat = self.matrix()
        return ids, mat

    def scored_rows(self, text: str, limit: int, where: str | None, parts: list[str] | None) -> list[dict[str, Any]]:
        """The rows of the BM25 hits (``bm25_ids``), best first, each with its ``_score``."""
        found = self.bm25_ids(text, limit, where, parts)
        rows = self.rows_at(found)
        for row, (_, _, score) in zip(rows, found):
            row["_score"] = score
        return rows

    def vector_search(self, vector: np.ndarray, limit: int, where: str | None) -> list[dict[str, Any]]:
        """The ``limit`` chunks nearest to ``vector`` that the prefilter lets through (``_distance`` = 1 - cosine)."""
        raise NotImplementedError

    def take(self, positions: list[int]) -> list[dict[str, Any]]:
        """Rows by position (as in ``matrix()``), in that order."""
        raise NotImplementedError

    def by_ids(self, ids: list[str], where: str | None = None) -> list[dict[str, Any]]:
        """Rows of these chunk ids (in that order) that the prefilter lets through; unknown ids are skipped."""
        raise NotImplementedError

    def fts_search(
        self, text: str, limit: int, where: str | None, parts: list[str] | None = None
    ) -> list[dict[str, Any]]:
        """BM25 hits for ``text`` (see ``bm25_ids``), as rows with their ``_score``."""
        raise NotImplementedError

    def rows_at(self, found: list[tuple[int, str, float]]) -> list[dict[str, Any]]:
        """The rows of (row id, chunk id, …) triples, in that order."""
        raise NotImplementedError

    def titles(self) -> list[tuple[str, str]]:
        """Every document's (id, title), once each."""
        raise NotImplementedError

    def best_of_documents(self, vector: np.ndarray, doc_ids: list[str], where: str | None) -> list[dict[str, Any]]:
        """For each document of ``doc_ids`` (that the prefilter lets through), its chunk most similar to ``vector``;
        the rows ordered by that similarity (``_distance`` = 1 - cosine)."""
        raise NotImplementedError
