"""Where ragkit keeps files outside an index (``$RAGKIT_CACHE``, else ``~/.cache/ragkit``): the ONNX exports of
the embedding models, the converted multilingual model, the local mirrors of indexes on object storage."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_root() -> Path:
    env = os.environ.get("RAGKIT_CACHE")
    if env:
        return Path(env).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "ragkit"


@contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """One process at a time inside ``folder`` (an flock on ``folder/.lock``; the kernel frees it with the
    process, however it ends)."""
    folder.mkdir(parents=True, exist_ok=True)
    with open(folder / ".lock", "w") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)
