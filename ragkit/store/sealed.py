"""DuckDB opened as data: every connection to an index's store is sealed, and a store holds only ragkit's own.

An index folder may come from a colleague, a shared drive or a bucket others can write. A DuckDB file can hold
more than tables: views, macros, defaults and sequences run when a reader touches them, and DuckDB's table
functions (``read_text``, ``read_csv``, ``glob``, ``ATTACH``, extensions) reach the reader's files and network.
So:

- every connection runs with external access off and its configuration locked (``enable_external_access =
  false``, ``lock_configuration = true``): no file outside the index folder, no extension, no ``COPY``, no
  ``ATTACH`` elsewhere, and nothing in the store can switch them back on. Readers attach stores to one sealed
  in-memory instance per index folder, allowed that folder only (attaching costs ~1 ms, an instance ~11 ms);
- before a store is used, its catalog (tables, views, macros, sequences, indexes, types, schemas) is compared
  with the one ragkit's own schema makes: any object ragkit did not define, or defined otherwise (a view in a
  table's place, a default, a macro), refuses the store with ``IndexCorrupt`` and its hint (``ragkit check
  --repair`` writes a clean copy, ``clean``). A committed store never changes, so a file is vetted once per
  process (by its inode, size and change time).
"""

from __future__ import annotations

import itertools
import time
from functools import lru_cache
from pathlib import Path
from typing import Any

from ragkit.errors import IndexBusy, IndexCorrupt

SEALED = {"enable_external_access": False, "lock_configuration": True}
_READERS: dict[str, Any] = {}  # index folder → the sealed in-memory instance its stores attach to
_ATTACHED = itertools.count()
_VETTED: set[tuple[str, int, int, int]] = set()

REPAIR_HINT = (
    "The store holds what ragkit did not write (an index from a shared folder or bucket?). `ragkit check "
    "--repair` writes a copy with ragkit's own definitions only; or rebuild with `ragkit index PATH --full`."
)

# one query per kind of catalog object: (kind, schema, name, definition) of the database ``?``
_CATALOG = [
    "SELECT 'table', schema_name, table_name, sql FROM duckdb_tables() WHERE database_name = ?",
    "SELECT 'view', schema_name, view_name, sql FROM duckdb_views() WHERE database_name = ? AND NOT internal",
    "SELECT function_type, schema_name, function_name, coalesce(macro_definition, '') FROM duckdb_functions() "
    "WHERE database_name = ? AND NOT internal",
    "SELECT 'sequence', schema_name, sequence_name, sql FROM duckdb_sequences() WHERE database_name = ?",
    "SELECT 'index', schema_name, index_name, coalesce(sql, '') FROM duckdb_indexes() WHERE database_name = ?",
    "SELECT 'type', schema_name, type_name, '' FROM duckdb_types() WHERE database_name = ? AND NOT internal",
    "SELECT 'schema', schema_name, schema_name, '' FROM duckdb_schemas() WHERE database_name = ? AND NOT internal",
]


def catalog(con, database: str) -> dict[tuple[str, str, str], str]:
    """Every object of ``database`` on ``con``: (kind, schema, name) → its SQL as DuckDB writes it."""
    out: dict[tuple[str, str, str], str] = {}
    for query in _CATALOG:
        for kind, schema, name, sql in con.execute(query, [database]).fetchall():
            out[(kind, schema, name)] = " ".join(str(sql).split())
    return out


@lru_cache(maxsize=4)
def expected(schema: str) -> dict[tuple[str, str, str], str]:
    """The catalog ragkit's own ``schema`` makes (in a sealed in-memory database)."""
    import duckdb

    con = duckdb.connect(":memory:", config=dict(SEALED))
    try:
        con.execute(schema)
        return catalog(con, "memory")
    finally:
        con.close()


def foreign(con, database: str, schema: str) -> list[str]:
    """What ``database`` holds that ragkit's ``schema`` does not define, or defines otherwise (none: clean)."""
    own = expected(schema)
    out = []
    for key, sql in sorted(catalog(con, database).items()):
        kind, where, name = key
        if own.get(key) != sql:
            out.append(f"{kind.replace('_', ' ')} {name if where == 'main' else f'{where}.{name}'}")
    return out


def lost(con, database: str, schema: str) -> list[str]:
    """ragkit's tables that ``database`` does not hold as tables (their rows are gone, or stand elsewhere)."""
    tables = {name for (kind, _, name) in catalog(con, database) if kind == "table"}
    return sorted(n for (kind, _, n) in expected(schema) if kind == "table" and n not in tables and n != "manifest")


def vet(con, database: str, path: Path, schema: str) -> None:
    """``IndexCorrupt`` unless the store ``path`` (attached as ``database``) holds ragkit's own objects only."""
    try:
        st = path.stat()
        stamp = (str(path), st.st_ino, st.st_size, st.st_ctime_ns)
    except OSError:
        stamp = None
    if stamp is not None and stamp in _VETTED:
        return
    found = foreign(con, database, schema)
    if found:
        more = f" and {len(found) - 3} more" if len(found) > 3 else ""
        raise IndexCorrupt(f"{path.name} is not ragkit's own: it holds {', '.join(found[:3])}{more}", hint=REPAIR_HINT)
    if stamp is not None:
        _VETTED.add(stamp)


def _seal(con, folder: Path):
    """``con`` allowed ``folder`` only, external access off, its configuration locked."""
    con.execute("SET allowed_directories = [?]", [str(folder.resolve()).rstrip("/") + "/"])
    con.execute("SET enable_external_access = false")
    con.execute("SET lock_configuration = true")
    return con


def _reader_base(folder: Path):
    """The sealed in-memory instance the stores of ``folder`` attach to."""
    import duckdb

    key = str(folder.resolve())
    if key not in _READERS:
        _READERS[key] = _seal(duckdb.connect(":memory:"), folder)
    return _READERS[key]


def _open(path: Path, read_only: bool, alone: bool, config: dict[str, str]) -> tuple[Any, str | None]:
    import duckdb

    if not read_only:
        return duckdb.connect(str(path), config={**config, **SEALED}), None
    if alone:
        return duckdb.connect(str(path), read_only=True, config={"threads": "1", **SEALED}), None
    con = _reader_base(path.parent).cursor()
    name = f"store{next(_ATTACHED)}"
    try:
        con.execute(f"ATTACH '{str(path.resolve()).replace(chr(39), chr(39) * 2)}' AS {name} (READ_ONLY)")
        con.execute(f"USE {name}")
    except BaseException:
        con.close()
        raise
    return con, name


def connect(
    path: Path, read_only: bool, schema: str, alone: bool = False, writer_config: dict[str, str] | None = None
) -> tuple[Any, str | None]:
    """A sealed connection to the store at ``path`` and, read-only and shared, the name it is attached under;
    the store vetted against ``schema``. ``alone``: a read-only instance of its own, on one thread, for one big
    read. A store locked by a writer is waited for (5 s), then ``IndexBusy``; one DuckDB cannot open,
    ``IndexCorrupt``."""
    import duckdb

    for attempt in range(20):
        try:
            con, attached = _open(path, read_only, alone, writer_config or {})
            break
        except duckdb.IOException as exc:
            if "lock" not in str(exc).lower():
                raise IndexCorrupt(f"cannot open {path}: {exc}") from exc
            if attempt == 19:
                raise IndexBusy(f"{path} is locked by another process") from exc
            time.sleep(0.25)
    else:  # pragma: no cover
        raise AssertionError("unreachable")
    try:
        database = attached or con.execute("SELECT current_database()").fetchone()[0]
        vet(con, database, path, schema)
    except BaseException:
        close(con, attached)
        raise
    return con, attached


def close(con, attached: str | None) -> None:
    if attached:
        con.execute("USE memory")
        con.execute(f"DETACH {attached}")
    con.close()


def clean(path: Path, out: Path, schema: str) -> list[str]:
    """Write into ``out`` a copy of the store ``path`` holding ragkit's own objects only: every table of
    ``schema`` with its own definition and the columns it defines copied over, ragkit's views, nothing else.
    What was left out is returned. ``IndexCorrupt`` when a table of ragkit's is not there as a table (its
    rows are gone: only a rebuild brings them back)."""
    import duckdb

    found, _ = inspect(path, schema)
    own = expected(schema)
    src = duckdb.connect(str(path), read_only=True, config=dict(SEALED))
    try:
        database = src.execute("SELECT current_database()").fetchone()[0]
        tables = {name for (kind, _, name) in catalog(src, database) if kind == "table"}
        missing = lost(src, database, schema)
        if missing:
            raise IndexCorrupt(
                f"{path.name}: ragkit's table(s) {', '.join(sorted(missing))} are not there as tables",
                hint="Rebuild the index: `ragkit index PATH --full`.",
            )
        columns = {t: _columns_of(src, t) for t in tables}
    finally:
        src.close()
    out.unlink(missing_ok=True)
    dst = _seal(duckdb.connect(str(out)), path.parent)
    try:
        dst.execute(schema)
        dst.execute(f"ATTACH '{str(path.resolve()).replace(chr(39), chr(39) * 2)}' AS old (READ_ONLY)")
        for kind, _, name in own:
            if kind != "table" or name not in tables:
                continue
            kept = [c for c in _columns_of(dst, name) if c in columns[name]]
            cols = ", ".join(f'"{c}"' for c in kept)
            dst.execute(f'INSERT INTO main."{name}" ({cols}) SELECT {cols} FROM old.main."{name}"')
        dst.execute("DETACH old")
        dst.execute("CHECKPOINT")
    finally:
        dst.close()
    return found


def _columns_of(con, table: str) -> list[str]:
    database = con.execute("SELECT current_database()").fetchone()[0]
    return [
        r[0]
        for r in con.execute(
            "SELECT column_name FROM duckdb_columns() WHERE database_name = ? AND table_name = ? ORDER BY column_index",
            [database, table],
        ).fetchall()
    ]


def inspect(path: Path, schema: str) -> tuple[list[str], list[str]]:
    """``foreign`` and ``lost`` of the store file at ``path``, opened sealed on its own."""
    import duckdb

    con = duckdb.connect(str(path), read_only=True, config=dict(SEALED))
    try:
        database = con.execute("SELECT current_database()").fetchone()[0]
        return foreign(con, database, schema), lost(con, database, schema)
    finally:
        con.close()
