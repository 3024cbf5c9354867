"""The index's event log: the queries people asked (with the passages they were shown) and the feedback they
gave, as JSON lines under ``feedback/`` beside the runs.

It is append-only and outlives every run: a run never touches it, and its events name passages by document
path, section and the content hash of their first chunk, never by row ids, so feedback still finds its passage
after the index is rebuilt (``ragkit.learn.feedback``). Several processes append at once (``ragkit serve``'s
workers, a session, one-shot commands): each batch is one ``write`` to a file opened for appending, under an
``flock``, so lines never interleave. On object storage, where nothing can be appended to, each batch is an
object of its own (``feedback/<time>-<pid>-<random>.jsonl``), never rewritten either.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ragkit.errors import RagkitError
from ragkit.store import remote

FOLDER = "feedback"
LOCAL = "events.jsonl"


class EventLog:
    """The event log of the index at ``index_dir`` (a folder, or the mirror of an index on object storage)."""

    def __init__(self, index_dir: Path):
        self.index_dir = Path(index_dir)
        self.uri = remote.uri_of(self.index_dir)

    @property
    def path(self) -> Path:
        return self.index_dir / FOLDER / LOCAL

    def append(self, events: list[dict[str, Any]]) -> None:
        """Write ``events`` at the end of the log, in one piece."""
        if not events:
            return
        data = "".join(json.dumps(e, ensure_ascii=False, separators=(",", ":")) + "\n" for e in events).encode()
        if self.uri:
            name = f"{FOLDER}/{time.time_ns()}-{os.getpid()}-{secrets.token_hex(4)}.jsonl"
            remote.Remote(self.index_dir).write(name, data)
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise RagkitError(f"cannot write the feedback log {self.path}: {exc}") from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            os.write(fd, data)
        finally:
            os.close(fd)  # (closing releases the lock)

    def read(self) -> Iterator[dict[str, Any]]:
        """Every event, oldest first (a line that is not a JSON object, from a write cut short, is skipped)."""
        for chunk in self._chunks():
            yield from _parse(chunk)

    def read_from(self, offset: int) -> tuple[list[dict[str, Any]], int]:
        """The events a local log gained since byte ``offset`` (whole lines only) and the offset after them; on
        object storage every event, and offset 0."""
        if self.uri:
            return list(self.read()), 0
        if not self.path.is_file():
            return [], 0
        with self.path.open("rb") as fh:
            fh.seek(offset)
            data = fh.read()
        end = data.rfind(b"\n") + 1
        return list(_parse(data[:end].decode(errors="replace"))), offset + end

    def _chunks(self) -> Iterator[str]:
        if self.uri:
            r = remote.Remote(self.index_dir)
            for name in sorted(r.names_under(FOLDER)):
                data = r.read(f"{FOLDER}/{name}")
                if data:
                    yield data.decode(errors="replace")
            return
        if self.path.is_file():
            yield self.path.read_text(errors="replace")

    def size(self) -> int:
        """Bytes the log holds (a local index's)."""
        return self.path.stat().st_size if not self.uri and self.path.is_file() else 0


def _parse(chunk: str) -> Iterator[dict[str, Any]]:
    for line in chunk.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            yield event
