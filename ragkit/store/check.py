"""``ragkit check``: is the committed index whole, and can what is not be rebuilt?

The commit protocol (ragkit/ingest/pipeline.py) writes a new LanceDB version, then one DuckDB transaction
with the run (which names that version), then the derived files (graphs, vocabulary) and the manifest. A
reader trusts the manifest; ``check`` verifies what it names: the manifest reads and has this ragkit's
format; DuckDB's last run is the manifest's run and names the same LanceDB table and version; that version
opens, has as many chunks as DuckDB and the manifest count, vectors of the embedder's dimension and its
full-text index; the evidence graph, the entity graph and the vocabulary load and belong to the run.

The derived files can be rebuilt from DuckDB (``repair``); a LanceDB/DuckDB disagreement cannot (the next
``ragkit index PATH --full`` rebuilds the index).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragkit.errors import RagkitError


@dataclass
class Problem:
    what: str
    repair: str
    derived: bool = False  # rebuilt from the store by ``repair``


REBUILD = "ragkit index PATH --full (the folders the index was built from)"


def check(index_dir: Path) -> tuple[list[Problem], dict[str, Any]]:
    """The problems found (none: whole) and what was checked (counts, run, version)."""
    from ragkit.store.duck import DuckStore
    from ragkit.store.graph import EvidenceGraph, load_pickled
    from ragkit.store.entity_graph import EntityGraph
    from ragkit.store.lance import ChunkTable
    from ragkit.store.manifest import read_manifest
    from ragkit.store.reader import DUCK_NAME, GRAPH_DIR, LANCE_DIR, VOCAB_FILE

    problems: list[Problem] = []
    try:
        manifest = read_manifest(index_dir)
    except RagkitError as exc:
        return [Problem(exc.message, exc.hint or REBUILD)], {}
    run = manifest["last_run"]
    facts: dict[str, Any] = {"run": run["id"], "lance_table": run["lance_table"], "lance_version": run["lance_version"],
                             "chunks": manifest["counts"]["chunks"]}
    try:
        with DuckStore(index_dir / DUCK_NAME, read_only=True) as store:
            last, counts = store.last_run(), store.counts()
    except Exception as exc:  # a damaged or missing DuckDB file, whatever DuckDB says of it
        return [Problem(f"the DuckDB store does not open: {exc}", REBUILD)], facts
    if last is None or last["id"] != run["id"]:
        problems.append(Problem(f"DuckDB's last run is {last and last['id']}, the manifest's {run['id']}: the "
                                "last indexing run did not finish its commit", REBUILD))
    elif (last["lance_table"], last["lance_version"]) != (run["lance_table"], run["lance_version"]):
        problems.append(Problem(f"DuckDB's run names LanceDB {last['lance_table']} v{last['lance_version']}, the "
                                f"manifest v{run['lance_version']}", REBUILD))
    if counts["chunks"] != manifest["counts"]["chunks"]:
        problems.append(Problem(f"DuckDB has {counts['chunks']} chunks, the manifest says "
                                f"{manifest['counts']['chunks']}", REBUILD))
    try:
        table = ChunkTable(index_dir / LANCE_DIR, run["lance_table"], run["lance_version"])
        rows = table.count()
        facts["lance_rows"] = rows
        if rows != counts["chunks"]:
            problems.append(Problem(f"LanceDB v{run['lance_version']} has {rows} chunks, DuckDB "
                                    f"{counts['chunks']}", REBUILD))
        dim = table.ds.schema.field("vector").type.list_size
        if dim != manifest["embedder"]["dimension"]:
            problems.append(Problem(f"LanceDB vectors have {dim} dimensions, the embedder "
                                    f"{manifest['embedder']['dimension']}", REBUILD))
        if rows and not any("FTS" in str(i.index_type).upper() or "INVERTED" in str(i.index_type).upper()
                            for i in table.ds.describe_indices()):
            problems.append(Problem("LanceDB has no full-text index", REBUILD))
    except Exception as exc:  # a missing version or damaged files, whatever Lance says of them
        problems.append(Problem(f"LanceDB {run['lance_table']} v{run['lance_version']} does not open: "
                                f"{str(exc).splitlines()[0][:200]}", REBUILD))
    for name, load in (("evidence graph", lambda: EvidenceGraph.load(index_dir / GRAPH_DIR)),
                       ("entity graph", lambda: EntityGraph.load(index_dir / GRAPH_DIR)),
                       ("vocabulary", lambda: _pickled(load_pickled(index_dir / GRAPH_DIR, VOCAB_FILE)))):
        found = load()
        if found is None:
            problems.append(Problem(f"the {name} is missing or unreadable", "ragkit check --repair", derived=True))
        elif found.run_id != run["id"]:
            problems.append(Problem(f"the {name} belongs to run {found.run_id}, not {run['id']}",
                                    "ragkit check --repair", derived=True))
    return problems, facts


class _Pickled:
    def __init__(self, run_id):
        self.run_id = run_id


def _pickled(loaded):
    return None if loaded is None else _Pickled(loaded[1])


def repair(index_dir: Path) -> None:
    """Rebuild the derived files (graphs, vocabulary) of the committed run from the DuckDB store."""
    from ragkit.store.duck import DuckStore
    from ragkit.store.manifest import read_manifest
    from ragkit.store.reader import DUCK_NAME, write_derived

    run_id = read_manifest(index_dir)["last_run"]["id"]
    with DuckStore(index_dir / DUCK_NAME, read_only=True) as store:
        write_derived(store, index_dir, run_id)
