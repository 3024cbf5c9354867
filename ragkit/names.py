"""The names an index's own files may have: the one check every reader makes before it opens or downloads a file
an index names (a manifest's store and graph folder, a run's LanceDB table, ``learned/current.json``'s models, a
bucket's feedback batches). An index from a shared folder or bucket is data: a name in it may not point a reader
at ``../elsewhere.duckdb``, an absolute path or another index's store.
"""

from __future__ import annotations

import re

from ragkit.errors import IndexCorrupt

RUN = r"\.\d+(?:-[0-9a-f]+)?"  # ".<run>", or ".<run>-<token>" on object storage (writers on two machines)
NAMES = {
    "store": re.compile(rf"store(?:{RUN})?\.duckdb"),
    "graph": re.compile(rf"graph(?:{RUN})?"),
    "lance_table": re.compile(r"[a-z][a-z0-9_]{0,63}"),
    "ranker": re.compile(r"ranker\.[A-Za-z0-9_.-]{1,120}\.\d{1,9}\.json"),
    "feedback": re.compile(r"[0-9]{1,20}-[0-9]{1,10}-[0-9a-f]{8}\.jsonl(?:\.gz)?"),
}


def checked_name(kind: str, name: object, where: str = "") -> str:
    """``name`` when it is one of ragkit's own names of ``kind`` (``NAMES``): a plain file name, no folder, no
    ``..``; else ``IndexCorrupt``."""
    if not isinstance(name, str) or not NAMES[kind].fullmatch(name) or ".." in name:
        raise IndexCorrupt(
            f"{where or 'the index'} names a {kind.replace('_', ' ')} {name!r}, not one of ragkit's own names",
            hint="The index folder was changed by hand or by another program: rebuild it with `ragkit index "
            "--full`, or take it again from where it came.",
        )
    return name
