"""Filling in a progressive index (``ragkit index --progressive``): the full model's vectors, batch by batch.

The first run of a progressive index embeds every chunk with the fast model and commits (searchable at once);
``run_fill`` then embeds the chunks that lack their full vector, ``batch`` at a time, and commits each batch
(ragkit/store/fill.py: the fill table's new version in a new manifest). The index's write lock is held only
while a batch is written and committed, never while it is embedded, so an incremental run (the documents
changed meanwhile) gets in between batches; a batch whose chunks a run removed meanwhile leaves harmless rows
that are never read. Once every chunk has its full vector the index switches to them (``fill.switch``) and is
from then on what a plain run with the full model makes. A kill loses at most the batch being embedded;
running ``ragkit index --progressive`` again goes on where it stopped.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from ragkit.embed import Embedder, load_embedder
from ragkit.errors import BadInput
from ragkit.events import Reporter
from ragkit.store import remote
from ragkit.store.fill import FillWriter, state, switch, table_uri
from ragkit.store.lance_rows import _quiet
from ragkit.store.manifest import EmbedderInfo, Manifest, read_manifest, write_manifest

EMBEDDER_KEYS = ("name", "spec", "dimension", "fingerprint", "max_tokens", "encoder", "kind", "probe")
BATCH = 4096  # chunks embedded and committed at a time (about 5 minutes of the full model on two cores)


@dataclass
class FillSummary:
    filled: int = 0  # chunks with their full vector, in the end
    total: int = 0
    batches: int = 0  # committed by this call
    switched: bool = False  # the index now holds the full vectors only
    seconds: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in ("filled", "total", "batches", "switched", "seconds")}


def fill_spec(manifest: Manifest) -> dict[str, Any] | None:
    return state(manifest)


def _todo(index_dir: Path, manifest: Manifest, done: set[str], first: list[str] | None = None) -> list:
    """(chunk id, embedded text) of the committed chunks without a full vector: those whose path matches a
    glob of ``first`` before the rest, else in table order."""
    _quiet()
    import lance

    run = manifest.last_run
    ds = lance.dataset(f"{remote.lance_location(index_dir)}/{run.lance_table}.lance", version=run.lance_version)
    data = ds.to_table(columns=["id", "content", "path"])
    rows = zip(data.column("id").to_pylist(), data.column("content").to_pylist(), data.column("path").to_pylist())
    todo = [(i, t, p) for i, t, p in rows if i not in done]
    if first:
        todo.sort(key=lambda r: not any(fnmatch(r[2], g) for g in first))  # stable: table order within each
    return [(i, t) for i, t, _ in todo]


def run_fill(
    index_dir: Path,
    reporter: Reporter | None = None,
    batch: int | None = None,
    embedder_factory: Callable[[dict[str, Any]], Embedder] | None = None,
    max_batches: int | None = None,
    first: list[str] | None = None,
) -> FillSummary:
    """Embed and commit the missing full vectors of a progressive index, then switch to them (see the module
    docstring); ``max_batches`` stops after that many (tests, a bounded run); ``first``: path globs whose
    chunks are filled before the rest (the laws a team asks about)."""
    rep, batch = reporter or Reporter(), batch or BATCH
    index_dir = Path(index_dir)
    if remote.uri_of(index_dir) is not None:
        raise BadInput(
            "a progressive index lives on a local disk", hint="Index on object storage without --progressive."
        )
    summary = FillSummary()
    manifest = read_manifest(index_dir)
    spec = fill_spec(manifest)
    if spec is None:
        summary.filled = summary.total = manifest.counts.chunks
        return summary
    t0 = time.perf_counter()
    full = (embedder_factory or (lambda s: load_embedder(s["spec"], encoder=s.get("encoder", "auto"))))(spec)
    lance_dir = remote.lance_location(index_dir)
    done = FillWriter(lance_dir, spec.get("version"), full.dimension, 1).filled()
    todo = _todo(index_dir, manifest, done, first)
    summary.total = len(done) + len(todo)
    rep.start("fill", summary.total)
    rep.advance("fill", len(done))
    while todo and (max_batches is None or summary.batches < max_batches):
        part, todo = todo[:batch], todo[batch:]
        vectors = full.encode([t for _, t in part])
        with remote.writing(index_dir, wait=True):
            manifest = read_manifest(index_dir)  # a run may have committed since
            spec = fill_spec(manifest)
            if spec is None:
                break
            writer = FillWriter(lance_dir, spec.get("version"), full.dimension, _min_rows(manifest))
            version = writer.append([i for i, _ in part], vectors)
            filled = writer.filled()
            write_manifest(
                index_dir, _with_fill(manifest, spec, version, len(filled & _chunk_ids(index_dir, manifest)))
            )
        summary.batches += 1
        rep.advance("fill", len(part))
        if not todo:  # what a run added meanwhile
            todo = _todo(index_dir, manifest, filled, first)
    rep.finish("fill")
    summary.switched = _switch_when_full(index_dir, full)
    manifest = read_manifest(index_dir)
    spec = fill_spec(manifest)
    summary.filled = spec["filled"] if spec else manifest.counts.chunks
    summary.total = manifest.counts.chunks
    summary.seconds["total"] = round(time.perf_counter() - t0, 3)
    return summary


def _min_rows(manifest: Manifest) -> int:
    return manifest.index_config.get("vector_index_min_rows", 100_000)


def _chunk_ids(index_dir: Path, manifest: Manifest) -> set[str]:
    """The committed chunks' ids."""
    _quiet()
    import lance

    run = manifest.last_run
    ds = lance.dataset(f"{remote.lance_location(index_dir)}/{run.lance_table}.lance", version=run.lance_version)
    return set(ds.to_table(columns=["id"]).column("id").to_pylist())


def _with_fill(manifest: Manifest, spec: dict[str, Any], version: int, filled: int) -> Manifest:
    return manifest.replaced(fill={**spec, "version": version, "filled": filled})


def _switch_when_full(index_dir: Path, full: Embedder) -> bool:
    """Every committed chunk has its full vector: the chunks table takes them and the manifest names the full
    model (``fill.switch``); the fill table goes."""
    with remote.writing(index_dir, wait=True):
        manifest = read_manifest(index_dir)
        spec = fill_spec(manifest)
        if spec is None or spec.get("version") is None:
            return False
        ids = _chunk_ids(index_dir, manifest)
        lance_dir = remote.lance_location(index_dir)
        if ids - FillWriter(lance_dir, spec["version"], full.dimension, 1).filled():
            return False
        run = manifest.last_run
        chunks_uri = f"{lance_dir}/{run.lance_table}.lance"
        version = switch(chunks_uri, table_uri(lance_dir), spec["version"], _min_rows(manifest))
        out = manifest.replaced(
            fill=None,
            embedder=EmbedderInfo(**{k: spec[k] for k in EMBEDDER_KEYS}),
            index_config={**manifest.index_config, "embed_model": spec["spec"]},
            last_run=replace(run, lance_version=version),
        )
        write_manifest(index_dir, out)
    import shutil

    shutil.rmtree(Path(str(table_uri(lance_dir))), ignore_errors=True)
    return True
