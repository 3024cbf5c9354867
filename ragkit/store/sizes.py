"""Bytes an index spends per component (``ragkit stats``), and the source bytes it was built from.

LanceDB: the chunks table's data files are split into vectors (rows × dimension × 4 bytes) and text and
metadata (the rest); its ``_indices`` are the full-text (and, above the ANN threshold, vector) indexes;
manifests and transaction files count as LanceDB bookkeeping. DuckDB: each table's share of the file is
estimated from the storage blocks its columns occupy (``pragma storage_info``), scaled to the file size.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ragkit.store import remote
from ragkit.store.layout import LANCE_DIR

if TYPE_CHECKING:
    from ragkit.store.committed import CommittedIndex

# DuckDB tables → the component they belong to
COMPONENTS = {
    "sources": "documents and chunks (DuckDB)",
    "documents": "documents and chunks (DuckDB)",
    "sections": "documents and chunks (DuckDB)",
    "chunks": "documents and chunks (DuckDB)",
    "refs": "documents and chunks (DuckDB)",
    "runs": "documents and chunks (DuckDB)",
    "mentions": "entities",
    "aliases": "entities",
    "cooccur": "relations",  # entities, relations: views
    "communities": "communities",
    "community_members": "communities",
    "summaries": "tree",
    "vocab": "vocabulary",
}


def folder_bytes(path: Path) -> int:
    """Bytes of the files below ``path`` (a file: its size; missing: 0)."""
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) if path.exists() else 0


def index_bytes(index_dir: Path, rel: str = "") -> int:
    """Bytes of the index below ``rel``: on object storage, of the objects there (a mirror holds only a copy
    of some)."""
    if remote.uri_of(index_dir):
        return remote.Remote(index_dir).bytes(rel)
    return folder_bytes(Path(index_dir) / rel if rel else Path(index_dir))


def _lance(index_dir: Path, table_dir: str, rows: int, dim: int) -> dict[str, int]:
    data = index_bytes(index_dir, f"{table_dir}/data")
    indices = index_bytes(index_dir, f"{table_dir}/_indices")
    vectors = min(data, rows * dim * 4)
    return {
        "vectors": vectors,
        "chunk text and metadata (LanceDB)": data - vectors,
        "full-text index": indices,
        "LanceDB bookkeeping": index_bytes(index_dir, table_dir) - data - indices,
    }


def _duck(store, file_bytes: int) -> dict[str, int]:
    blocks: dict[str, int] = {}
    for (table,) in store.con.execute("SELECT table_name FROM duckdb_tables()").fetchall():
        used = {
            r[0]
            for r in store.con.execute(
                f"SELECT DISTINCT block_id FROM pragma_storage_info('{table}') WHERE block_id >= 0"
            ).fetchall()
        }
        blocks[table] = len(used)
    total = sum(blocks.values()) or 1
    out: dict[str, int] = {}
    for table, n in blocks.items():
        part = COMPONENTS.get(table, "other (DuckDB)")
        out[part] = out.get(part, 0) + round(file_bytes * n / total)
    return out


def component_bytes(reader: CommittedIndex) -> dict[str, int]:
    """Bytes per component of a committed index (estimates where one file holds several components)."""
    out: dict[str, int] = {}
    table = reader.manifest.last_run.lance_table
    out.update(
        _lance(
            reader.index_dir,
            f"{LANCE_DIR}/{table}.lance",
            reader.chunks.count(),
            reader.manifest.embedder.dimension,
        )
    )
    duck_file = reader.store_path
    with reader.duck() as store:
        for part, n in _duck(store, duck_file.stat().st_size).items():
            out[part] = out.get(part, 0) + n
    out["graphs"] = folder_bytes(reader.graph_dir)
    cache = folder_bytes(reader.index_dir / "cache")
    if cache:
        out["vocabulary"] = out.get("vocabulary", 0) + cache
    return out


def source_bytes(reader: CommittedIndex) -> int:
    """Bytes of the source files the index holds."""
    with reader.duck() as store:
        return int(store.value("SELECT coalesce(sum(size), 0) FROM sources"))
