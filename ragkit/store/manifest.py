"""manifest.json: format version, resolved config, embedder, counts, last run."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from ragkit.errors import IndexCorrupt, IndexNotFound
from ragkit.store import remote
from ragkit.store.layout import MANIFEST

FORMAT_VERSION = 6  # 2: canonical entities/relations, per-collection communities; 3: summary tree;
# 4: lean index (language-aware entities, bounded relations, derived vectors, 16 KiB DuckDB blocks);
# 5: chunk pages (PDF); 6: compound parts (German/Swedish) in the chunks' BM25 index
NAME = MANIFEST


def read_manifest(index_dir: Path) -> dict[str, Any]:
    path = index_dir / NAME
    if not path.is_file():
        raise IndexNotFound(f"no index at {remote.display(index_dir)}")
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise IndexCorrupt(f"unreadable manifest {path}: {exc}") from exc
    if data.get("format_version") != FORMAT_VERSION:
        raise IndexCorrupt(
            f"index format {data.get('format_version')} at {index_dir}; this ragkit reads format {FORMAT_VERSION}",
            hint="Run `ragkit index` on the same folder again: it rebuilds the index in the current format.",
        )
    return data


def manifest_format(index_dir: Path) -> int | None:
    """The format version of the index at ``index_dir`` (None: no readable manifest)."""
    try:
        return json.loads((index_dir / NAME).read_text()).get("format_version")
    except (OSError, json.JSONDecodeError):
        return None


def write_manifest(index_dir: Path, data: dict[str, Any], bucket=None) -> None:
    """Atomic replace: a reader sees the old or the new manifest, never half. For an index on object storage
    (a mirror, ragkit/store/remote.py) the conditional upload through the writer's ``bucket`` is the commit;
    the mirror's copy follows."""
    data = {"format_version": FORMAT_VERSION, **data}
    text = json.dumps(data, indent=2, sort_keys=True, default=str)
    if bucket is not None:
        bucket.commit_manifest(text.encode())
    elif remote.uri_of(index_dir) is not None:
        raise ValueError(f"{remote.display(index_dir)}: a remote manifest is written by the writer holding its lease")
    tmp = index_dir / f".{NAME}.tmp"
    tmp.write_text(text)
    os.replace(tmp, index_dir / NAME)
