"""Staging one indexing run in the store: the run's changes go into a copy of the committed DuckDB store in
one transaction, its derived files (evidence graph, entity graph, vocabulary, reference resolver) into a folder
of its own, and a copy of the manifest that will commit it into the store. Readers see none of it until the
manifest names the run (``manifest.write_manifest``, the commit: ragkit/store/layout.py).

Here the store meets the stages' code it runs at a commit (``DERIVE``: reference resolution, the summary tree,
community detection), which the store itself does not import."""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragkit.extract.communities import detect
from ragkit.extract.resolve import Resolver
from ragkit.extract.summaries import build_nodes
from ragkit.records import RunChanges
from ragkit.store import arrays, layout
from ragkit.store.duck import Derivation, DuckStore
from ragkit.store.entity_graph import EntityGraph
from ragkit.store.graph import EvidenceGraph
from ragkit.store.layout import RESOLVER_FILE, VOCAB_FILE
from ragkit.store.manifest import Manifest

DERIVE = Derivation(
    resolver=Resolver,
    tree=lambda document, sections, chunks, df, n_chunks: build_nodes(document, sections, chunks, df, n_chunks, {}),
    communities=detect,
)


def resolver_of(store: DuckStore) -> Resolver:
    """A reference/version resolver over every document and section of the store."""
    return Resolver(*store.resolver_rows())


@dataclass
class StagedRun:
    """A run written beside the committed one, not yet visible: its store file, its graph folder, the store's
    counts and the facts a query plans with."""

    run_id: int
    store_name: str
    graph_name: str
    store_path: Path
    counts: dict[str, int]
    facts: dict[str, Any]


def write_derived(store: DuckStore, folder: Path, run_id: int) -> None:
    """The files derived from the store at a commit (evidence graph, entity graph, vocabulary, reference
    resolver) for ``run_id``,
    into the run's graph folder (the indexing run writes them; ``ragkit check --repair`` rebuilds them)."""
    resolver = resolver_of(store)  # built once: the evidence graph's versions, and saved for readers
    EvidenceGraph.from_store(store, run_id, resolver.superseded()).save(folder)
    EntityGraph.from_store(store, run_id).save(folder)
    arrays.save_vocabulary(folder, store.vocabulary(), run_id, VOCAB_FILE)
    arrays.save(folder, RESOLVER_FILE, {"state": resolver.state()}, run_id)
    for old in arrays.legacy_files(folder):  # an older version's pickles in this run's folder (check --repair)
        old.unlink()


def convert_legacy(index_dir: Path, manifest: Manifest, bucket=None) -> bool:
    """The committed run's derived files written anew where an older version left them as pickles (which are
    never loaded: they could run code); True when it did. For an index on object storage, through ``bucket``."""
    folder = layout.graph_path(index_dir, manifest)
    if not arrays.legacy_files(folder):
        return False
    with DuckStore(layout.store_path(index_dir, manifest), read_only=True) as store:
        write_derived(store, folder, manifest.run_id)
    if bucket is not None:
        bucket.upload(folder.name)
    return True


def stage_run(
    index_dir: Path,
    committed_store: Path | None,
    run_id: int,
    changes: RunChanges,
    run: dict[str, Any],
    manifest_for: Callable[[StagedRun], Manifest],
    token: str = "",
    timings: dict[str, float] | None = None,
) -> tuple[StagedRun, Manifest]:
    """Write run ``run_id`` beside the committed one (``committed_store``: the store it starts from, copied;
    None: an empty store) and return it with the manifest that will commit it (``manifest_for(staged)``, kept
    in the store so that ``ragkit check --repair`` can restore a lost manifest). ``token``: a writer's own
    part of the file names on object storage (two writers never write the same object)."""
    store_name, graph_name = layout.run_names(run_id, token)
    new_store, graph_dir = index_dir / store_name, index_dir / graph_name
    layout.remove([new_store, graph_dir])
    if committed_store is not None:
        shutil.copyfile(committed_store, new_store)
        if Path(f"{committed_store}.wal").exists():
            shutil.copyfile(f"{committed_store}.wal", f"{new_store}.wal")
    with DuckStore(new_store, read_only=False) as store:
        store.commit_run(run_id, changes, run, DERIVE)
        staged = StagedRun(run_id, store_name, graph_name, new_store, store.counts(), store.planning_facts())
        t = time.perf_counter()
        write_derived(store, graph_dir, run_id)
        if timings is not None:
            timings["graph"] = round(time.perf_counter() - t, 3)
        manifest = manifest_for(staged)
        store.keep_manifest(manifest.to_dict())
        store.con.execute("CHECKPOINT")  # the committed store is one file, no write-ahead log
    return staged, manifest
