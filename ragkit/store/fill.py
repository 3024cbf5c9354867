"""The full model's vectors of a progressive index (``ragkit index --progressive``).

A progressive index is searchable after one fast run: every chunk is embedded with a fast model (a static
model distilled from the full one) and written as usual. The full model's vectors then fill in batch by batch
into a table of their own (``fill.lance``: chunk id and vector), each batch committed like a run (the manifest's
``fill`` names the table's version), so a query always sees whole batches and a kill loses at most the batch
being embedded. Queries search both: the full vectors of the chunks filled so far, the fast vectors of the rest
(ragkit/retrieve/context.py). Once every chunk has its full vector the two are switched (``switch``): the
chunks table gets the full vectors in its own vector column (a column replaced, no row rewritten), the fill
table goes, and the index is what a plain run with the full model would have made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from ragkit.store.lance import EXACT_MAX_ROWS, ann_query, build_ann, spread_sample
from ragkit.store.lance_rows import _quiet

TABLE = "fill"


def _schema(dim: int) -> pa.Schema:
    return pa.schema([("id", pa.string()), ("vector", pa.list_(pa.float32(), dim))])


def table_uri(lance_dir: Path | str) -> str:
    return f"{lance_dir}/{TABLE}.lance"


class FillTable:
    """Read side: the full vectors at one committed version of the fill table."""

    def __init__(self, lance_dir: Path | str, version: int):
        _quiet()
        import lance

        self.ds = lance.dataset(table_uri(lance_dir), version=version)
        self.rows = self.ds.count_rows()
        self._ids: set[str] | None = None
        self._matrix: tuple[list[str], np.ndarray] | None = None
        self._ann = any("IVF" in str(i.index_type).upper() for i in self.ds.describe_indices())
        self._sample: np.ndarray | None = None

    def ids(self) -> set[str]:
        """The chunk ids that have their full vector."""
        if self._ids is None:
            self._ids = set(self.ds.to_table(columns=["id"]).column("id").to_pylist())
        return self._ids

    def sample(self, n: int) -> np.ndarray:
        """The full vectors of ``n`` filled chunks spread evenly over the table (read once)."""
        if self._sample is None:
            self._sample = spread_sample(self.ds, self.rows, n)
        return self._sample

    def search(self, vector: np.ndarray, limit: int) -> list[tuple[str, float]]:
        """(chunk id, cosine) of the nearest full vectors, best first."""
        q = np.asarray(vector, dtype=np.float32)
        q = q / (np.linalg.norm(q) or 1.0)
        if self._ann or self.rows > EXACT_MAX_ROWS:
            found = self.ds.to_table(columns=["id", "_distance"], nearest=ann_query(q, limit, self.rows))
            return list(zip(found.column("id").to_pylist(), (1.0 - np.asarray(found.column("_distance"))).tolist()))
        if self._matrix is None:
            data = self.ds.to_table(columns=["id", "vector"])
            ids = data.column("id").to_pylist()
            mat = data.column("vector").combine_chunks().values.to_numpy(zero_copy_only=False).reshape(len(ids), -1)
            self._matrix = (ids, mat if ids else np.zeros((0, len(q)), dtype=np.float32))
        ids, mat = self._matrix
        if not ids:
            return []
        sims = mat @ q
        top = np.argpartition(-sims, limit)[:limit] if len(sims) > limit else np.arange(len(sims))
        return [(ids[i], float(sims[i])) for i in sorted(top.tolist(), key=lambda i: -sims[i])]


class FillWriter:
    """Write side of the fill table: batches appended, each a version to commit."""

    def __init__(self, lance_dir: Path | str, version: int | None, dim: int, index_min_rows: int):
        _quiet()
        import lance

        self.uri, self.dim, self.index_min_rows = table_uri(lance_dir), dim, index_min_rows
        self.ds = None
        if version is not None:
            self.ds = lance.dataset(self.uri, version=version)
            if lance.dataset(self.uri).version != version:  # a batch written after the last commit: undone
                self.ds.restore()
                self.ds = lance.dataset(self.uri)
        elif Path(str(self.uri)).exists():  # a first batch that was never committed
            import shutil

            shutil.rmtree(self.uri)

    @property
    def version(self) -> int | None:
        return self.ds.version if self.ds is not None else None

    def filled(self) -> set[str]:
        if self.ds is None:
            return set()
        return set(self.ds.to_table(columns=["id"]).column("id").to_pylist())

    def append(self, ids: list[str], vectors: np.ndarray) -> int:
        """One batch; returns the version that commits it. The vector index is built once the table reaches
        ``index_min_rows`` and again whenever it has doubled since."""
        import lance

        flat = pa.array(np.asarray(vectors, dtype=np.float32).reshape(-1))
        batch = pa.Table.from_arrays(
            [pa.array(ids, pa.string()), pa.FixedSizeListArray.from_arrays(flat, self.dim)], schema=_schema(self.dim)
        )
        mode = "append" if self.ds is not None else "create"
        self.ds = lance.write_dataset(batch, self.uri, schema=_schema(self.dim), mode=mode)
        rows = self.ds.count_rows()
        indexed = next((i.num_rows_indexed for i in self.ds.describe_indices()), 0)
        if rows >= self.index_min_rows and rows >= 2 * indexed:
            build_ann(self.ds)
            self.ds = lance.dataset(self.uri)
        return self.ds.version


def switch(chunks_uri: str, fill_uri: str, fill_version: int, index_min_rows: int) -> int:
    """Replace the chunks table's vectors with the full ones (every chunk has one) and return the chunks
    table's new version: the full vectors joined in as a column of their own, the fast column dropped, the
    new one renamed; the BM25 index stays valid (no row moves), the vector index is built again."""
    _quiet()
    import lance

    full = lance.dataset(fill_uri, version=fill_version).to_table(columns=["id", "vector"])
    full = full.rename_columns(["id", "vector_full"])
    ds = lance.dataset(chunks_uri)
    for index in [i for i in ds.describe_indices() if list(i.field_names) == ["vector"]]:
        ds.drop_index(index.name)
    ds.merge(full, left_on="id")
    ds = lance.dataset(chunks_uri)
    ds.drop_columns(["vector"])
    ds = lance.dataset(chunks_uri)
    ds.alter_columns({"path": "vector_full", "name": "vector"})
    ds = lance.dataset(chunks_uri)
    if ds.count_rows() >= index_min_rows:
        build_ann(ds)
        ds = lance.dataset(chunks_uri)
    return ds.version


def state(manifest) -> dict[str, Any] | None:
    """The manifest's fill (None: not a progressive index, or its full vectors are in place)."""
    return manifest.fill
