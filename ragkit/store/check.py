"""``ragkit check``: is the committed index whole, and can what is not be repaired?

The commit protocol (ragkit/store/layout.py): a run writes a new LanceDB version, its copy of the store
(``store.<run>.duckdb``, which keeps a copy of the manifest that commits it) and its derived files
(``graph.<run>/``), then replaces the manifest. ``check`` verifies what the manifest names: the manifest reads
and has this ragkit's format; the store's last run is the manifest's run and names the same LanceDB table and
version; that version opens, has as many chunks as the store and the manifest count, vectors of the
embedder's dimension and its full-text index; the evidence graph, the entity graph and the vocabulary load
and belong to the run. Files of an unfinished run are reported (they are never read).

``repair`` rebuilds the derived files from the store; when the manifest is lost or names a damaged run it
goes back to the newest whole run kept in the folder (its store's copy of the manifest), and it removes an
unfinished run's files. A damaged store or LanceDB table with no whole run to go back to needs
``ragkit index PATH --full``.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragkit.errors import IndexCorrupt, RagkitError
from ragkit.store import arrays, layout, remote, sealed
from ragkit.store.chunks import open_chunks
from ragkit.store.duck import OWN_SCHEMA, DuckStore
from ragkit.store.entity_graph import EntityGraph
from ragkit.store.graph import EvidenceGraph
from ragkit.store.manifest import Manifest, read_manifest, write_manifest


@dataclass
class Problem:
    what: str
    repair: str
    derived: bool = False  # rebuilt from the store by ``repair``
    foreign: bool = False  # the store holds what ragkit did not write: ``repair`` writes a clean copy


REBUILD = "ragkit index PATH --full (the folders the index was built from)"
REPAIR = "ragkit check --repair"


@dataclass
class Report:
    """What ``ragkit check`` found: the problems left (none: whole), what was checked, what was repaired."""

    index: str
    problems: list[Problem]
    facts: dict[str, Any]
    repaired: list[str]

    @property
    def hint(self) -> str:
        """How to fix the problems left: repair when it can, else rebuild."""
        return REPAIR if all(p.repair == REPAIR for p in self.problems) else REBUILD

    def to_dict(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "ok": not self.problems,
            **self.facts,
            "repaired": self.repaired,
            "problems": [
                {"what": p.what, "repair": p.repair, "derived": p.derived, "foreign": p.foreign} for p in self.problems
            ],
        }


def check(index_dir: Path) -> tuple[list[Problem], dict[str, Any]]:
    """The problems found (none: whole) and what was checked (counts, run, version, leftovers)."""
    index_dir = Path(index_dir)
    try:
        manifest = read_manifest(index_dir)
    except RagkitError as exc:
        kept = _newest_whole_run(index_dir)
        return [Problem(exc.message, REPAIR if kept else exc.hint or REBUILD)], {}
    problems, facts = check_run(index_dir, manifest)
    facts["leftovers"] = [p.name for p in layout.leftovers(index_dir, manifest)]
    if remote.uri_of(index_dir):  # and the objects an unfinished run uploaded
        facts["leftovers"] += remote.Remote(index_dir).leftovers(manifest)
    if any(not (p.derived or p.foreign) for p in problems) and _newest_whole_run(index_dir, but=manifest.run_id):
        for p in problems:
            p.repair = REPAIR
    return problems, facts


def check_run(index_dir: Path, manifest: Manifest) -> tuple[list[Problem], dict[str, Any]]:
    """The problems of the run ``manifest`` commits (the manifest's own or one kept in a store)."""
    problems: list[Problem] = []
    run = manifest.last_run
    facts: dict[str, Any] = {
        "run": run.id,
        "lance_table": run.lance_table,
        "lance_version": run.lance_version,
        "chunks": manifest.counts.chunks,
        "store": layout.store_path(index_dir, manifest).name,
    }
    path = layout.store_path(index_dir, manifest)
    try:
        foreign, lost = sealed.inspect(path, OWN_SCHEMA) if path.is_file() else ([], [])
    except Exception:  # (a damaged file: said below)
        foreign, lost = [], []
    if foreign:
        what = f"the DuckDB store holds what ragkit did not write: {', '.join(foreign)}"
        if lost:  # a table of ragkit's replaced: its rows cannot be told from what was put there
            return [Problem(f"{what} (ragkit's {', '.join(lost)} not there as tables)", REBUILD)], facts
        return [Problem(what, REPAIR, foreign=True)], facts
    try:
        with DuckStore(path, read_only=True) as store:
            last, counts = store.last_run(), store.counts()
    except Exception as exc:  # a damaged or missing DuckDB file, whatever DuckDB says of it
        return [Problem(f"the DuckDB store does not open: {exc}", REBUILD)], facts
    if last is None or last["id"] != run.id:
        problems.append(
            Problem(
                f"DuckDB's last run is {last and last['id']}, the manifest's {run.id}: the "
                "last indexing run did not finish its commit",
                REBUILD,
            )
        )
    elif (last["lance_table"], last["lance_version"]) != (run.lance_table, run.lance_version):
        problems.append(
            Problem(
                f"DuckDB's run names LanceDB {last['lance_table']} v{last['lance_version']}, the "
                f"manifest v{run.lance_version}",
                REBUILD,
            )
        )
    if counts["chunks"] != manifest.counts.chunks:
        problems.append(
            Problem(f"DuckDB has {counts['chunks']} chunks, the manifest says {manifest.counts.chunks}", REBUILD)
        )
    try:
        table = open_chunks(remote.lance_location(index_dir), run.lance_table, run.lance_version)
        rows = table.count()
        facts["lance_rows"] = rows
        if rows != counts["chunks"]:
            problems.append(
                Problem(f"LanceDB v{run.lance_version} has {rows} chunks, DuckDB {counts['chunks']}", REBUILD)
            )
        dim = table.ds.schema.field("vector").type.list_size
        if dim != manifest.embedder.dimension:
            problems.append(
                Problem(f"LanceDB vectors have {dim} dimensions, the embedder {manifest.embedder.dimension}", REBUILD)
            )
        if rows and not any(
            "FTS" in str(i.index_type).upper() or "INVERTED" in str(i.index_type).upper()
            for i in table.ds.describe_indices()
        ):
            problems.append(Problem("LanceDB has no full-text index", REBUILD))
    except Exception as exc:  # a missing version or damaged files, whatever Lance says of them
        problems.append(
            Problem(
                f"LanceDB {run.lance_table} v{run.lance_version} does not open: {str(exc).splitlines()[0][:200]}",
                REBUILD,
            )
        )
    folder = layout.graph_path(index_dir, manifest)
    for old in arrays.legacy_files(folder):
        problems.append(
            Problem(
                f"{old.name} is a pickle of an older version (never loaded: it could run code)", REPAIR, derived=True
            )
        )
    for name, load in (
        ("evidence graph", lambda: EvidenceGraph.load(folder)),
        ("entity graph", lambda: EntityGraph.load(folder)),
        ("vocabulary", lambda: _Saved.of(arrays.load_vocabulary(folder, layout.VOCAB_FILE))),
    ):
        try:
            found = load()
        except arrays.UnsafeIndexFile:
            continue  # (named above)
        if found is None:
            problems.append(Problem(f"the {name} is missing or unreadable", REPAIR, derived=True))
        elif found.run_id != run.id:
            problems.append(Problem(f"the {name} belongs to run {found.run_id}, not {run.id}", REPAIR, derived=True))
    return problems, facts


class _Saved:
    def __init__(self, run_id):
        self.run_id = run_id

    @classmethod
    def of(cls, loaded):
        return None if loaded is None else cls(loaded[1])


def _kept_runs(index_dir: Path) -> list[Manifest]:
    """The manifests kept in the folder's stores, newest run first."""
    found = []
    for path in Path(index_dir).glob("store*.duckdb"):
        if not re.fullmatch(rf"store({layout.RUN})?\.duckdb", path.name):
            continue
        try:
            with DuckStore(path, read_only=True) as store:
                data = store.kept_manifest()
            kept = None if data is None else Manifest.from_dict(data, path.name)
        except Exception:  # a damaged store keeps nothing usable
            continue
        if kept is not None and kept.store == path.name:
            found.append(kept)
    return sorted(found, key=lambda m: m.run_id, reverse=True)


def _newest_whole_run(index_dir: Path, but: int | None = None) -> Manifest | None:
    """The newest kept run whose store, LanceDB version and counts agree (its derived files may be
    rebuilt), other than run ``but``."""
    for kept in _kept_runs(index_dir):
        if kept.run_id != but and all(p.derived for p in check_run(index_dir, kept)[0]):
            return kept
    return None


def repair(
    index_dir: Path, write_derived: Callable[[DuckStore, Path, int], None], bucket: remote.Remote | None = None
) -> list[str]:
    """Make the index whole if it can be; what was done. ``IndexCorrupt`` when only a rebuild can.
    ``write_derived``: writes a run's derived files from its store (ragkit/ingest/commit.py: the evidence graph's
    versions come from the reference resolver, which the store does not import). ``bucket``: for an index on
    object storage, the writer's side of it (``remote.writing``)."""
    index_dir = Path(index_dir)
    done: list[str] = []
    try:
        manifest = read_manifest(index_dir)
        problems = check_run(index_dir, manifest)[0]
    except RagkitError as exc:
        manifest, problems = None, [Problem(exc.message, REBUILD)]
    if any(not (p.derived or p.foreign) for p in problems):
        kept = _newest_whole_run(index_dir, but=manifest and manifest.run_id)
        if kept is None:
            raise IndexCorrupt(f"{index_dir}: {problems[0].what}; no whole run is kept to go back to", hint=REBUILD)
        write_manifest(index_dir, kept, bucket)
        done.append(
            f"went back to run {kept.run_id} ({kept.store}, LanceDB v{kept.last_run.lance_version}): {problems[0].what}"
        )
        manifest, problems = kept, check_run(index_dir, kept)[0]
    if any(p.foreign for p in problems):
        manifest = _cleaned(index_dir, manifest, bucket)
        done.append(f"wrote {manifest.store} with ragkit's own tables and views only: {problems[0].what}")
        problems = check_run(index_dir, manifest)[0]
    if problems:
        with DuckStore(layout.store_path(index_dir, manifest), read_only=True) as store:
            write_derived(store, layout.graph_path(index_dir, manifest), manifest.run_id)
        if bucket is not None:
            bucket.upload(layout.graph_path(index_dir, manifest).name)
        done.extend(p.what for p in problems)
    gone = [p.name for p in layout.leftovers(index_dir, manifest)]
    layout.remove(layout.leftovers(index_dir, manifest))
    if bucket is not None:
        gone += bucket.leftovers(manifest)
        bucket.remove_leftovers(manifest)
    if gone:
        done.append(f"removed what an unfinished run left: {', '.join(gone)}")
    return done


def _cleaned(index_dir: Path, manifest: Manifest, bucket: remote.Remote | None) -> Manifest:
    """The run's store copied with ragkit's own objects only, under a new name of the same run, and committed
    (the old file becomes a leftover: readers holding it finish on it)."""
    name = layout.run_names(manifest.run_id, secrets.token_hex(4))[0]
    sealed.clean(layout.store_path(index_dir, manifest), Path(index_dir) / name, OWN_SCHEMA)
    fixed = manifest.replaced(store=name)
    with DuckStore(Path(index_dir) / name, read_only=False) as store:
        store.keep_manifest(fixed.to_dict())
    if bucket is not None:
        bucket.upload(name)
    write_manifest(index_dir, fixed, bucket)
    return fixed
