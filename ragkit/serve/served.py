"""The index a server process answers from (HTTP and MCP alike)."""

from __future__ import annotations

import threading

from ragkit import api
from ragkit.errors import UnknownId


class Served:
    """The index a server answers from, reopened when the manifest says a new run was committed."""

    def __init__(self, index: str | None):
        self.index_dir = api.resolve_index_dir(index)
        self.lock = threading.Lock()
        self._reader = None

    def reader(self):
        """The reader of the newest committed run."""
        if self._reader is None:
            self._reader = api.open_index(self.index_dir)
        else:
            self._reader.follow()
        return self._reader

    def warm(self) -> None:
        """Load the model and what a first query needs before the first request comes."""
        with self.lock:
            api.warm(self.reader())

    def find(self, kind: str, key: str) -> dict:
        """A "document" or "section" by id (``IndexReader.document`` / ``section``); ``UnknownId`` if none."""
        with self.lock:
            found = getattr(self.reader(), kind)(key)
        if found is None:
            raise UnknownId(f"no {kind} {key!r} in {self.index_dir}")
        return found
