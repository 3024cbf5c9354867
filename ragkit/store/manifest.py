"""manifest.json: what an index is — its format version, its config as resolved, its embedder's identity, its
counts and the committed run (whose store, graph folder and LanceDB version every reader reads). Replacing it is
the commit of a run (ragkit/store/layout.py).

``Manifest`` is the typed record every reader holds (``read_manifest``); the file is its ``to_dict()``.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from ragkit.errors import IndexCorrupt, IndexNotFound
from ragkit.names import checked_name
from ragkit.store import remote
from ragkit.store.layout import DUCK_NAME, GRAPH_DIR, MANIFEST

FORMAT_VERSION = 6  # 2: canonical entities/relations, per-collection communities; 3: summary tree;
# 4: lean index (language-aware entities, bounded relations, derived vectors, 16 KiB DuckDB blocks);
# 5: chunk pages (PDF); 6: compound parts (German/Swedish) in the chunks' BM25 index
NAME = MANIFEST


@dataclass(frozen=True)
class EmbedderInfo:
    """The embedder an index was built with: a query must use the same (name, dimension, fingerprint, probe)."""

    name: str
    spec: str
    dimension: int
    fingerprint: str
    max_tokens: int = 512
    encoder: str = "torch"  # (a manifest that names none: the encoder of the versions before it did)
    kind: str = "bundled"
    probe: list | None = None


@dataclass(frozen=True)
class RunInfo:
    """The committed run: its id, the LanceDB table and version it wrote, when it finished, what it changed."""

    id: int
    lance_table: str = "chunks"
    lance_version: int | None = None
    finished_at: float | None = None
    summary: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Counts:
    documents: int = 0
    sections: int = 0
    chunks: int = 0


@dataclass(frozen=True)
class Manifest:
    """A committed index: its config (``index_config``, as IndexConfig.to_dict()), embedder, counts, run, the
    run's store file and graph folder, planning facts, the BM25 language, and a progressive index's ``fill``."""

    index_config: dict[str, Any]
    embedder: EmbedderInfo
    counts: Counts
    last_run: RunInfo
    store: str = DUCK_NAME
    graph: str = GRAPH_DIR
    facts: dict[str, Any] | None = None
    fts_language: str | None = None
    fill: dict[str, Any] | None = None
    format_version: int = FORMAT_VERSION

    @property
    def run_id(self) -> int:
        return self.last_run.id

    @classmethod
    def from_dict(cls, data: dict[str, Any], where: str = "") -> Manifest:
        """The manifest a ``manifest.json`` holds; ``IndexCorrupt`` when it is not one."""
        try:
            last_run = RunInfo(**_known(RunInfo, data["last_run"]))
            checked_name("lance_table", last_run.lance_table, f"the manifest {where}")
            if last_run.lance_version is not None and not isinstance(last_run.lance_version, int):
                raise ValueError(f"lance_version {last_run.lance_version!r} is not a number")
            return cls(
                index_config=dict(data["index_config"]),
                embedder=EmbedderInfo(**_known(EmbedderInfo, data["embedder"])),
                counts=Counts(**_known(Counts, data.get("counts") or {})),
                last_run=last_run,
                store=checked_name("store", data.get("store") or DUCK_NAME, f"the manifest {where}"),
                graph=checked_name("graph", data.get("graph") or GRAPH_DIR, f"the manifest {where}"),
                facts=data.get("facts"),
                fts_language=data.get("fts_language"),
                fill=data.get("fill"),
                format_version=data.get("format_version", FORMAT_VERSION),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise IndexCorrupt(f"the manifest {where} is not one: {type(exc).__name__}: {exc}") from exc

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        return {k: v for k, v in out.items() if v is not None or k in ("facts", "fts_language")}

    def replaced(self, **changes) -> Manifest:
        """The manifest with some fields changed (a progressive index's fill, another run)."""
        return replace(self, **changes)


def _known(kind, data: dict[str, Any]) -> dict[str, Any]:
    names = {f.name for f in fields(kind)}
    return {k: v for k, v in dict(data).items() if k in names}


def read_manifest(index_dir: Path) -> Manifest:
    path = index_dir / NAME
    if not path.is_file():
        raise IndexNotFound(f"no index at {remote.display(index_dir)}")
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise IndexCorrupt(f"unreadable manifest {path}: {exc}") from exc
    if not isinstance(data, dict) or data.get("format_version") != FORMAT_VERSION:
        found = data.get("format_version") if isinstance(data, dict) else None
        raise IndexCorrupt(
            f"index format {found} at {index_dir}; this ragkit reads format {FORMAT_VERSION}",
            hint="Run `ragkit index` on the same folder again: it rebuilds the index in the current format.",
        )
    return Manifest.from_dict(data, str(path))


def manifest_format(index_dir: Path) -> int | None:
    """The format version of the index at ``index_dir`` (None: no readable manifest)."""
    try:
        return json.loads((index_dir / NAME).read_text()).get("format_version")
    except (OSError, json.JSONDecodeError, AttributeError):
        return None


def write_manifest(index_dir: Path, manifest: Manifest | dict[str, Any], bucket=None) -> None:
    """Atomic replace: a reader sees the old or the new manifest, never half. For an index on object storage
    (a mirror, ragkit/store/remote.py) the conditional upload through the writer's ``bucket`` is the commit;
    the mirror's copy follows."""
    data = manifest.to_dict() if isinstance(manifest, Manifest) else dict(manifest)
    data = {**data, "format_version": FORMAT_VERSION}
    text = json.dumps(data, indent=2, sort_keys=True, default=str)
    if bucket is not None:
        bucket.commit_manifest(text.encode())
    elif remote.uri_of(index_dir) is not None:
        raise ValueError(f"{remote.display(index_dir)}: a remote manifest is written by the writer holding its lease")
    tmp = index_dir / f".{NAME}.tmp"
    tmp.write_text(text)
    os.replace(tmp, index_dir / NAME)
