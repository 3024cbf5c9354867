"""One indexing run (``run_index``), phase by phase, each a method of ``IndexRun`` that hands the work to
its stage: discover (ingest/discover.py) → open the committed run → diff the sources (``diff_sources``) →
load the model → parse and chunk (``source.parse_sources``; on Ray: ingest/ray_engine.py) → extract (rules
while parsing, or an LLM: extract/llm.py; these three phases are ingest/prepare.py's) → embed → write the chunks (a new LanceDB version) → stage the
run in the store (``ingest.commit.stage_run``: one DuckDB transaction of ``RunChanges``, the derived
graphs, the manifest kept) → [LLM summaries] → publish (replacing the manifest commits the run).

Nothing is written until every new document is parsed, chunked and embedded; then LanceDB gets a new version,
one DuckDB transaction writes the run into a copy of the committed store, the derived graphs go into the run's
own folder, and replacing the manifest commits all three (ragkit/store/layout.py). Ctrl-C or a kill at any point
before that rename leaves the previous run whole and readable. No model runs inside the transaction: chunks are
embedded before it, ``--summaries llm`` summaries after it (before the commit), ``expand = true`` vocabulary
vectors after the commit.
"""

from __future__ import annotations

import functools
import os
import resource
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ragkit.embed import AUTO, Embedder, identity
from ragkit.errors import BadInput, EmbedderMismatch
from ragkit.events import Reporter
from ragkit.ingest.commit import StagedRun, convert_legacy, stage_run
from ragkit.ingest.config import IndexConfig
from ragkit.ingest.discover import SourceDiff, SourceFile, diff_sources, discover
from ragkit.ingest.llm_summaries import write_llm_summaries
from ragkit.ingest.prepare import PreparePhases
from ragkit.ingest.source import ParsedRun
from ragkit.records import EntityRows, IndexSummary, RunChanges
from ragkit.store import layout, remote
from ragkit.store.duck import DuckStore
from ragkit.store.lance_rows import FtsSettings, fts_language
from ragkit.store.lance_write import WRITE_ROWS, ChunkWriter, chunk_rows
from ragkit.store.manifest import FORMAT_VERSION, Manifest, manifest_format, read_manifest, write_manifest
from ragkit.store.manifest import NAME as MANIFEST
from ragkit.store.terms import TermVectors


def run_index(
    paths: list[Path],
    index_dir: Path,
    cfg: IndexConfig,
    embedder_factory: Callable[[IndexConfig], Embedder],
    *,
    full: bool = False,
    reporter: Reporter | None = None,
    version_of: str | None = None,
    generator_factory: Callable[[IndexConfig], Any] | None = None,
    confirm: Callable[[str], bool] | None = None,
    wait: bool = False,
    parse_workers: int = 1,
) -> IndexSummary:
    """One indexing run, phase by phase (see the module docstring). ``generator_factory`` loads the GGUF model
    for ``extract = "llm"`` / ``summaries = "llm"``; ``confirm(message)`` approves LLM extraction after its
    estimate (default: yes); ``wait``: when another run holds the index, wait for it (with a warning) instead
    of raising ``IndexBusy``; ``parse_workers``: processes that parse and chunk a large run (each loads the
    model by its spec, so only for the default embedder factory)."""
    run = IndexRun(index_dir, cfg, reporter or Reporter(), full)
    run.parse_workers = parse_workers
    files = run.discover(paths)
    # one writer at a time; an index on object storage: its lease, its committed files in the mirror, and the
    # bucket this run commits through
    with remote.writing(index_dir, wait, on_wait=run.rep.warn) as bucket:
        run.open(bucket)
        diff = run.diff(files, paths)
        if run.nothing_changed(diff):
            if convert_legacy(index_dir, run.previous, bucket):  # an older version's pickles, converted
                run.rep.warn("the run's derived files were pickles of an older ragkit: written anew as data")
            return run.finish()  # no model load, no other write
        embedder = run.load_model(diff, embedder_factory)
        got = run.parse(diff, embedder, version_of)
        generator = run.extract(got, generator_factory, confirm)
        run.check_something_left(got, diff, paths)
        vectors = run.embed(got, embedder)
        version = run.write_chunks(got, vectors, diff, embedder)
        if run.cfg.summaries != "llm":  # only LLM summaries read them again (all federal law: 265,000 rows)
            vectors = None
        staged, manifest = run.stage(got, diff, version, embedder)
        if run.cfg.summaries == "llm":  # models run before the commit, never inside a transaction
            run.write_summaries(staged, got, vectors, generator, embedder)
        run.publish(manifest)
        if run.cfg.expand:
            run.embed_vocabulary(staged, embedder)
    return run.finish()


class IndexRun(PreparePhases):
    """The state of one indexing run between its phases: the config, the committed run it starts from, the
    LanceDB writer, the summary it fills and the reporter it tells."""

    def __init__(self, index_dir: Path, cfg: IndexConfig, rep: Reporter, full: bool):
        self.index_dir, self.cfg, self.rep, self.full = index_dir, cfg, rep, full
        self.t0 = time.perf_counter()
        self.summary = IndexSummary(index_dir=remote.display(index_dir))
        self.previous: Manifest | None = None  # the committed manifest
        self.committed: dict[str, Any] | None = None  # the committed run's row
        self.states: dict[str, dict[str, Any]] = {}  # the committed sources ({} for a full run)
        self.bucket = None
        self.writer: ChunkWriter | None = None
        self.prepared = None  # --engine ray: every file parsed, chunked, embedded and written by Ray workers
        self.fts_changed = False  # an explicitly configured BM25 language differs from the index's
        self.duck_path: Path = layout.store_path(index_dir, {})  # the committed store
        self.table = "chunks"  # the LanceDB table the run writes
        self.fts_language = "English"  # the BM25 index's language, known once the chunks are
        self.removed_ids: list[str] = []  # documents whose chunks the run deletes
        self.probe: list[list[float]] = []  # the embedder's probe vectors (embed/models.py)
        self.fill: dict[str, Any] | None = None  # a progressive index: its full model and how far it is filled
        self.ocr_bar = False  # the "ocr" progress bar is up
        self.parse_workers = 1  # processes that parse (run_index: every core when the model loads by its spec)
        self._commit_started = self.t0

    def warn(self, msg: str) -> None:
        self.summary.warnings.append(msg)
        self.rep.warn(msg)

    @contextmanager
    def timed(self, phase: str) -> Iterator[None]:
        t = time.perf_counter()
        yield
        self.summary.seconds[phase] = round(time.perf_counter() - t, 3)

    def discover(self, paths: list[Path]) -> list[SourceFile]:
        """The files under ``paths`` that the include/exclude globs select (links not followed are skipped)."""
        not_followed: list[tuple[str, str]] = []
        files = discover(paths, self.cfg.include, self.cfg.exclude, self.cfg.include_hidden, not_followed)
        for rel, reason in not_followed:
            self.warn(f"skipped {rel}: {reason}")
            self.summary.skipped += 1
        if not files:
            raise BadInput(
                f"nothing indexable under {', '.join(str(p) for p in paths)}",
                hint=f"ragkit reads {', '.join(self.cfg.include)}; use --include to add patterns.",
            )
        return files

    def open(self, bucket) -> None:
        """The committed run this one starts from (an index in an older format is rebuilt), and what an
        unfinished run left removed (never read: the manifest does not name it)."""
        self.bucket = bucket
        index_dir, cfg = self.index_dir, self.cfg
        old_format = manifest_format(index_dir)
        if old_format not in (None, FORMAT_VERSION):  # (on object storage: the mirror; the old table is dropped
            # by the writer, the old run's objects by remove_leftovers below, the manifest replaced by the commit)
            self.warn(f"{index_dir} is in index format {old_format}; rebuilding it in format {FORMAT_VERSION}")
            layout.clear_index(index_dir)
        if (index_dir / MANIFEST).exists():
            self.previous = read_manifest(index_dir)
            built_with = self.previous.index_config["embed_model"]
            filling = (self.previous.fill or {}).get("spec")  # a progressive index: its full model
            if cfg.embed_model in (AUTO, filling) and not self.full:  # the model the index was built with
                self.cfg = cfg = replace(cfg, embed_model=built_with)
            if not self.full and built_with != cfg.embed_model:
                raise EmbedderMismatch(f"index {index_dir} was built with {built_with}, not {cfg.embed_model}")
        layout.remove(layout.leftovers(index_dir, self.previous))
        if bucket is not None:
            bucket.remove_leftovers(self.previous)
        self.duck_path = layout.store_path(index_dir, self.previous or {})
        if self.previous is not None and self.duck_path.exists():
            with DuckStore(self.duck_path, read_only=True) as store:
                self.states = {} if self.full else store.sources()
                self.committed = store.last_run()

    def diff(self, files: list[SourceFile], paths: list[Path]) -> SourceDiff:
        """What changed since the committed run (``discover.diff_sources``)."""
        roots = [Path(p).expanduser().resolve() for p in paths]
        diff = diff_sources(files, self.states, roots, self.cfg.max_file_size_mb, self.warn)
        self.summary.unchanged += diff.unchanged
        self.summary.skipped += diff.skipped
        self.summary.removed = sum(len(self.states[p]["doc_ids"]) for p in diff.gone)
        # an explicitly configured BM25 language other than the index's: the full-text index is rebuilt
        prev, lang = self.previous, self.cfg.fts_language
        self.fts_changed = bool(prev and not self.full and lang != "auto" and (prev.fts_language or lang) != lang)
        return diff

    def nothing_changed(self, diff: SourceDiff) -> bool:
        if diff.nothing_changed() and not self.full and not self.fts_changed and self.committed and self.previous:
            self.summary.total_documents = self.previous.counts.documents
            self.summary.total_chunks = self.previous.counts.chunks
            return True
        return False

    def check_something_left(self, got: ParsedRun, diff: SourceDiff, paths: list[Path]) -> None:
        """``BadInput`` when the run would leave an index with no document at all."""
        remaining = sum(len(s["doc_ids"]) for p, s in self.states.items() if p in diff.seen) - len(got.replaced_ids)
        if not got.docs and remaining <= 0:
            raise BadInput(
                f"nothing indexable under {', '.join(str(p) for p in paths)} ({self.summary.skipped} file(s) skipped)",
                hint="See the warnings above; binary and empty files are not indexed.",
            )

    def embed(self, got: ParsedRun, embedder: Embedder) -> np.ndarray | None:
        """The chunks' vectors (None on Ray: the workers wrote them with the chunks)."""
        vectors = None
        with self.timed("embed"):
            self.rep.start("embed", len(got.chunks))
            if self.prepared is None:
                vectors = (
                    embedder.encode([c.embed_text for c in got.chunks], progress=lambda n: self.rep.advance("embed", n))
                    if got.chunks
                    else np.zeros((0, embedder.dimension), dtype=np.float32)
                )
            self.rep.finish("embed")
        self.summary.documents, self.summary.chunks = len(got.docs), len(got.chunks)
        return vectors

    def write_chunks(self, got: ParsedRun, vectors, diff: SourceDiff, embedder: Embedder) -> int:
        """A new LanceDB version: the removed documents' chunks deleted, the new ones added (on Ray: the
        workers' fragments in one Append); returns the version."""
        previous = None if self.full or self.previous is None else self.previous.fts_language
        language = {pd.document.id: pd.document.language for pd in got.parsed}
        self.fts_language = fts_language(self.cfg.fts_language, previous, [language[c.document_id] for c in got.chunks])
        writer, cfg = self.writer, self.cfg
        writer.fts = FtsSettings(self.fts_language, cfg.fts_stem, cfg.fts_remove_stop_words)
        self.rep.start("write")
        with self.timed("write_lance"):
            self.removed_ids = [d for p in diff.gone for d in self.states[p]["doc_ids"]] + got.replaced_ids
            if self.full:
                writer.delete_all()
            else:
                writer.delete_documents(self.removed_ids)
            if self.prepared is not None:  # the workers' fragments, one Append
                writer.append_fragments(self.prepared.fragments)
                unwanted = self.prepared.unwanted({c.id for c in got.chunks})
                if unwanted:  # rows of a file that failed in another part, or twice of one document: the kept
                    writer.delete_ids(sorted(unwanted))  # ones written again from here (rare)
                    redo = [c for c in got.chunks if c.id in unwanted]
                    if redo:
                        writer.add(chunk_rows(redo, got.docs, embedder.encode([c.embed_text for c in redo])))
            else:
                for start in range(0, len(got.chunks), WRITE_ROWS):
                    end = start + WRITE_ROWS
                    writer.add(chunk_rows(got.chunks[start:end], got.docs, vectors[start:end]))
            return writer.finish()

    def stage(self, got: ParsedRun, diff: SourceDiff, version: int, embedder: Embedder):
        """The run's changes into a copy of the committed store, its graphs beside it, and the manifest that
        will commit them with the LanceDB version (``ingest.commit.stage_run``)."""
        t = time.perf_counter()
        run = {
            "started_at": time.time() - (time.perf_counter() - self.t0),
            "finished_at": time.time(),
            "lance_table": self.table,
            "lance_version": version,
            "summary": {k: v for k, v in self.summary.to_dict().items() if k not in ("warnings",)},
        }
        changes = RunChanges(
            removed_doc_ids=self.removed_ids,
            removed_sources=diff.gone
            + [str(f.path) for f, *_ in diff.todo]
            + [s["source_path"] for s in diff.unchanged_sources],
            sources=got.sources + diff.unchanged_sources,
            documents=list(got.docs.values()),
            sections=[s for pd in got.parsed for s in pd.sections],
            chunks=got.chunks,
            refs=[r for pd in got.parsed for r in pd.refs],
            entities=functools.reduce(lambda acc, pd: acc.extend(pd.entities), got.parsed, EntityRows()),
            full=self.full,
            tree=self.cfg.tree,
        )
        if self.cfg.summaries != "llm":  # only LLM summaries read the parsed run again
            got.release()
        run_id = (self.committed["id"] if self.committed else 0) + 1
        staged, manifest = stage_run(
            self.index_dir,
            self.duck_path if self.committed is not None else None,  # (a --full run keeps only its run numbers)
            run_id,
            changes,
            run,
            lambda s: self._manifest(s, run, version, embedder),
            token=os.urandom(3).hex() if self.bucket else "",  # writers on two machines never share a name
            timings=self.summary.seconds,
        )
        self.summary.knowledge = run["summary"].get("knowledge", {})
        self.summary.tree = run["summary"].get("tree", {})
        self.summary.total_documents, self.summary.total_chunks = staged.counts["documents"], staged.counts["chunks"]
        self.rep.finish("write")
        self._commit_started = t
        return staged, manifest

    def _manifest(self, staged: StagedRun, run: dict[str, Any], version: int, embedder: Embedder) -> Manifest:
        """The manifest that commits ``staged``: the config, the embedder's identity, counts, facts, the run."""
        cfg = self.cfg
        return Manifest.from_dict(
            {
                "index_config": cfg.to_dict(),
                "embedder": identity(embedder, cfg.embed_model, cfg.encoder, self.probe),
                "counts": staged.counts,
                "facts": staged.facts,
                "fts_language": self.fts_language,
                "store": staged.store_name,
                "graph": staged.graph_name,
                **({"fill": self.fill} if self.fill else {}),
                "last_run": {
                    "id": staged.run_id,
                    "lance_table": self.table,
                    "lance_version": version,
                    "finished_at": run["finished_at"],
                    "summary": {
                        k: getattr(self.summary, k) for k in ("new", "changed", "unchanged", "removed", "skipped")
                    },
                },
            }
        )

    def write_summaries(self, staged: StagedRun, got: ParsedRun, vectors, generator, embedder: Embedder) -> None:
        """``--summaries llm`` (ragkit/ingest/llm_summaries.py), into the staged store before the commit."""
        with self.timed("llm_summaries"):
            fresh = {} if vectors is None else {c.id: v for c, v in zip(got.chunks, vectors)}
            chunk_vectors = self.writer.vectors_lookup(fresh)
            self.summary.written = write_llm_summaries(staged.store_path, generator, embedder, chunk_vectors, self.rep)

    def publish(self, manifest: Manifest) -> None:
        """The commit: the run's files go up first (object storage), then the manifest replaces the old one;
        the replaced run's files are removed after."""
        bucket = self.bucket
        if bucket is not None:  # the run's files go up before the manifest that names them
            bucket.guard()
            bucket.push_run(manifest)
        write_manifest(self.index_dir, manifest, bucket)  # the commit
        layout.remove(layout.leftovers(self.index_dir, manifest))  # the replaced run's store and graphs
        if bucket is not None:
            bucket.remove_leftovers(manifest)
        self.summary.seconds["commit"] = round(time.perf_counter() - self._commit_started, 3)

    def embed_vocabulary(self, staged: StagedRun, embedder: Embedder) -> None:
        """``expand = true``: the vocabulary's vectors for ``--expand``, after the commit."""
        with self.timed("term_vectors"):
            TermVectors(
                self.index_dir,
                staged.run_id,
                lambda: DuckStore(staged.store_path, read_only=True),
                embedder.encode,
                embedder.fingerprint,
            ).load()

    def finish(self) -> IndexSummary:
        self.summary.seconds["total"] = round(time.perf_counter() - self.t0, 3)
        self.summary.peak_rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        return self.summary
