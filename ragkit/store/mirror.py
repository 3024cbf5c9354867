"""Where an index named by a URI lives on this machine: its local mirror (the rest of object-storage indexes is
in ragkit/store/remote.py). Light on purpose: resolving ``--index`` imports only this."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from ragkit.cache import cache_root

MARKER = "remote.json"
_URI = re.compile(r"^[a-z][a-z0-9+.-]*://", re.I)


def is_uri(index: str) -> bool:
    return bool(_URI.match(index)) and not index.lower().startswith("file://")


def mirror_for(uri: str) -> Path:
    """The local mirror of the index at ``uri`` (made and marked on first use; no network)."""
    uri = uri.rstrip("/")
    mirror = cache_root() / "remote" / hashlib.sha256(uri.encode()).hexdigest()[:16]
    marker = mirror / MARKER
    if not marker.is_file():
        mirror.mkdir(parents=True, exist_ok=True)
        marker.write_text(json.dumps({"uri": uri}))
    return mirror
