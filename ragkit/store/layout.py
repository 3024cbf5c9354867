"""Where the parts of an index live, run by run.

An index folder holds ``manifest.json``, the LanceDB tables (``lance/``: each run writes a new version), and
per committed run a DuckDB store ``store.<run>.duckdb`` with its derived files ``graph.<run>/`` (evidence
graph, entity graph, vocabulary). An indexing run copies the committed store, writes the new run into the
copy and its graphs beside it, and commits by replacing the manifest, which names the LanceDB version, the
store and the graph folder of the run (one ``rename``). Until then nobody reads the new files: a run killed
at any point leaves the committed run whole, and its leftovers are removed by the next run (or
``ragkit check --repair``). Indexes written before this layout have ``store.duckdb`` and ``graph/``; their
next run moves them over.
"""

from __future__ import annotations

import fcntl
import re
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from ragkit.errors import IndexBusy
from ragkit.names import RUN, checked_name

MANIFEST = "manifest.json"  # the commit point: names the run every reader reads
DUCK_NAME = "store.duckdb"  # an index's store before per-run stores (read as such, replaced by the next run)
LANCE_DIR = "lance"
GRAPH_DIR = "graph"
CACHE_DIR = "cache"  # derived files an index may rebuild (the vocabulary's vectors: ragkit/store/terms.py)
VOCAB_FILE = "vocab.npz"  # the vocabulary of the committed run, beside its graphs (the speller reads it)
# its reference resolver (built in 0.56 s over federal law's 130,776 sections, read in 0.24); a cache: a reader
# without it builds the resolver from the store
RESOLVER_FILE = "resolver.npz"
LEARNED_DIR = "learned"  # the models ``ragkit learn`` fitted (ragkit/rerank/ranker.py)
LEARNED_CURRENT = "current.json"  # in it: which of them the index has adopted
_RUN_FILE = re.compile(rf"^(store{RUN}\.duckdb(\.wal|\.tmp)?|graph{RUN})$")


def run_names(run_id: int, token: str = "") -> tuple[str, str]:
    """The store file and graph folder names of run ``run_id`` (``token``: a writer's own, so that two
    writers of one index on object storage never write the same object)."""
    tag = f"{run_id}-{token}" if token else str(run_id)
    return f"store.{tag}.duckdb", f"graph.{tag}"


def _named(manifest, key: str, default: str) -> str:
    """A run's file name from a ``Manifest`` or the dict a run's store keeps of one (checked: ``checked_name``)."""
    value = manifest.get(key) if isinstance(manifest, dict) else getattr(manifest, key, None)
    return checked_name(key, value or default)


def store_path(index_dir: Path, manifest) -> Path:
    """The DuckDB store of the manifest's run."""
    return Path(index_dir) / _named(manifest, "store", DUCK_NAME)


def graph_path(index_dir: Path, manifest) -> Path:
    """The folder with the derived files of the manifest's run."""
    return Path(index_dir) / _named(manifest, "graph", GRAPH_DIR)


def leftovers(index_dir: Path, manifest) -> list[Path]:
    """Run files the manifest does not name: an unfinished run's, or a replaced run's not yet removed."""
    keep = (
        set()
        if manifest is None
        else {
            _named(manifest, "store", DUCK_NAME),
            _named(manifest, "store", DUCK_NAME) + ".wal",
            _named(manifest, "graph", GRAPH_DIR),
        }
    )
    named = manifest is not None and _named(manifest, "store", "") not in ("", DUCK_NAME)
    legacy = {DUCK_NAME, DUCK_NAME + ".wal", GRAPH_DIR} if named else set()
    index_dir = Path(index_dir)
    if not index_dir.is_dir():
        return []
    return sorted(
        p for p in index_dir.iterdir() if p.name not in keep and (_RUN_FILE.match(p.name) or p.name in legacy)
    )


def remove(paths: list[Path]) -> None:
    for p in paths:
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)


@contextmanager
def write_lock(index_dir: Path, wait: bool = False, on_wait: Callable[[str], None] | None = None) -> Iterator[None]:
    """One writer per index: an flock on ``.lock``. The kernel releases it when its process ends, however it
    ends, so a killed run never leaves a stale lock behind (the empty file stays, unlocked). A second writer
    raises ``IndexBusy``, or with ``wait`` says so through ``on_wait`` and blocks until the first is done."""
    index_dir.mkdir(parents=True, exist_ok=True)
    fh = open(index_dir / ".lock", "w")
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as exc:
        if not wait:
            fh.close()
            raise IndexBusy(f"{index_dir} is being indexed by another process") from exc
        if on_wait:
            on_wait(f"{index_dir} is being indexed by another process; waiting for it to finish (Ctrl-C stops)")
        try:
            fcntl.flock(fh, fcntl.LOCK_EX)
        except BaseException:
            fh.close()
            raise
    try:
        yield
    finally:
        fcntl.flock(fh, fcntl.LOCK_UN)
        fh.close()


def clear_index(index_dir: Path) -> None:
    """Remove what ragkit keeps in an index folder (and nothing else): a ``--full`` run starts from none."""
    remove(leftovers(index_dir, None))
    for name in (LANCE_DIR, GRAPH_DIR, CACHE_DIR):
        shutil.rmtree(index_dir / name, ignore_errors=True)
    for name in (DUCK_NAME, DUCK_NAME + ".wal", MANIFEST):
        (index_dir / name).unlink(missing_ok=True)
