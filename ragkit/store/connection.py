"""The DuckDB connection a run's store is read and written through: transactions, rows in and out, string
columns made visible to SQL. ``DuckStore`` (ragkit/store/duck.py) opens it sealed and knows the tables; the
knowledge graph's tables (ragkit/store/knowledge/tables.py) read and write through it."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ragkit.store import sealed

INSERT_ROWS = 50_000


class DuckConnection:
    """A DuckDB connection (``con``) to the store at ``path``, opened by ``DuckStore``."""

    # paths of the stores with an open write transaction in this process: no model may run then
    # (tests/test_lean.py fails any encoder call inside one)
    IN_TRANSACTION: set[str] = set()

    path: Path
    con: Any
    _attached: Any

    def close(self) -> None:
        sealed.close(self.con, self._attached)

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """One write transaction: committed when the block ends, rolled back when it raises."""
        self.con.execute("BEGIN TRANSACTION")
        DuckConnection.IN_TRANSACTION.add(str(self.path))
        try:
            yield
            self.con.execute("COMMIT")
        except BaseException:
            self.con.execute("ROLLBACK")
            raise
        finally:
            DuckConnection.IN_TRANSACTION.discard(str(self.path))

    @contextmanager
    def registered(self, name: str, columns: dict[str, list[str]]) -> Iterator[None]:
        """String columns visible to SQL as table ``name`` inside the ``with`` block."""
        import pyarrow as pa

        self.con.register(name, pa.table({k: pa.array(v, pa.string()) for k, v in columns.items()}))
        try:
            yield
        finally:
            self.con.unregister(name)

    def first(self, sql: str, params: list[Any] | None = None) -> tuple | None:
        """The first row of a query, or None (read to the end: DuckDB refuses other work on a connection while
        a result is half read, and a query's connection is shared, ``IndexReader.one_connection``)."""
        rows = self.con.execute(sql, params or []).fetchall()
        return rows[0] if rows else None

    def value(self, sql: str, params: list[Any] | None = None) -> Any:
        """The first column of the first row (``count(*)`` and the like)."""
        return self.first(sql, params)[0]

    def rows(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        cur = self.con.execute(sql, params or [])
        names = [d[0] for d in cur.description]
        return [dict(zip(names, r)) for r in cur.fetchall()]

    def _insert(self, table: str, rows: Iterable[dict[str, Any]]) -> None:
        """Rows into ``table``, ``INSERT_ROWS`` at a time (all federal law's 1.07 million entity mentions,
        267,000 chunks and references as dicts and Arrow columns at once: a gigabyte and more)."""
        import pyarrow as pa

        cols = None
        it = iter(rows)
        while part := list(itertools.islice(it, INSERT_ROWS)):
            cols = cols or [r[1] for r in self.con.execute(f"PRAGMA table_info('{table}')").fetchall()]
            data = pa.table(
                {
                    c: _vector_column([r.get(c) for r in part]) if c == "vector" else [r.get(c) for r in part]
                    for c in cols
                }
            )
            self.con.register("incoming", data)
            self.con.execute(f"INSERT INTO {table} SELECT {', '.join(cols)} FROM incoming")
            self.con.unregister("incoming")


def _vector_column(values: list):
    """A list<float> Arrow column from numpy vectors (or None) without making Python floats."""
    import numpy as np
    import pyarrow as pa

    present = [v for v in values if v is not None]
    if not present or not isinstance(present[0], np.ndarray):
        return values
    lengths = [0 if v is None else len(v) for v in values]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
    flat = pa.array(np.concatenate(present).astype(np.float32))
    mask = pa.array([v is None for v in values])
    return pa.ListArray.from_arrays(pa.array(offsets), flat, mask=mask)
