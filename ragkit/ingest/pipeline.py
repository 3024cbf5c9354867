"""One indexing run: discover → diff → parse → chunk → embed → write → commit.

Nothing is written until every new document is parsed, chunked and embedded;
then LanceDB gets a new version, one DuckDB transaction writes the run into a
copy of the committed store, the derived graphs go into the run's own folder,
and replacing the manifest commits all three (ragkit/store/layout.py). Ctrl-C
or a kill at any point before that rename leaves the previous run whole and
readable. No model runs inside the transaction: chunks are embedded before it,
``--summaries llm`` summaries after it (before the commit), ``expand = true``
vocabulary vectors after the commit.
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ragkit.config import IndexConfig
from ragkit.embed import AUTO, Embedder, model_for
from ragkit.errors import BadInput, EmbedderMismatch
from ragkit.events import Reporter
from ragkit.extract import llm as llm_extract
from ragkit.ingest.discover import SourceFile, Undecodable, Unreadable, content_hash, discover, read_source
from ragkit.ingest.parse import ParseError
from ragkit.ingest.source import SourceParser, corpus_language
from ragkit.records import Chunk, Document, EntityRows, ParsedDocument
from ragkit.store import layout, remote
from ragkit.store.duck import DuckStore
from ragkit.store.lance import ChunkWriter, FtsSettings, chunk_rows
from ragkit.store.layout import DUCK_NAME, GRAPH_DIR, LANCE_DIR
from ragkit.store.manifest import FORMAT_VERSION, manifest_format, read_manifest, write_manifest
from ragkit.store.manifest import NAME as MANIFEST
from ragkit.store.reader import write_derived
from ragkit.store.terms import CACHE, TermVectors


@dataclass
class IndexSummary:
    index_dir: str
    new: int = 0
    changed: int = 0
    unchanged: int = 0
    removed: int = 0
    skipped: int = 0
    pages_without_text: int = 0  # PDF pages without a text layer (scans), not indexed
    documents: int = 0  # documents written by this run
    chunks: int = 0  # chunks embedded by this run
    total_documents: int = 0
    total_chunks: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    extract: dict[str, int] = field(default_factory=dict)  # LLM extraction: chunks, invalid outputs, dropped names
    knowledge: dict[str, int] = field(default_factory=dict)  # entities, relations, communities recomputed
    tree: dict[str, int] = field(default_factory=dict)  # summary-tree nodes written by this run
    written: dict[str, int] = field(default_factory=dict)  # --summaries llm: nodes and reports an LLM wrote
    peak_rss_mb: float = 0.0  # the process's peak resident memory so far (with --engine ray: the driver's)

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _spans(numbers: list[int]) -> str:
    """``1-3, 7`` for [1, 2, 3, 7]."""
    out, start = [], None
    for i, n in enumerate(numbers):
        start = n if start is None else start
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            out.append(f"{start}-{n}" if n != start else str(n))
            start = None
    return ", ".join(out)


def _under(path: str, roots: list[Path]) -> bool:
    return any(path == str(r) or path.startswith(str(r) + os.sep) for r in roots)


FTS_LANGUAGES = {"de": "German", "sv": "Swedish", "en": "English"}


def _fts_language(cfg: IndexConfig, previous: dict | None, parsed: list[ParsedDocument], chunks: list[Chunk]) -> str:
    """The BM25 index's language: as configured, else the one an existing index was built with, else the
    language of most of this run's chunks (German laws get German stemming without being told)."""
    if cfg.fts_language != "auto":
        return cfg.fts_language
    if previous and previous.get("fts_language"):
        return previous["fts_language"]
    per_doc = {pd.document.id: pd.document.language for pd in parsed}
    counts: dict[str, int] = {}
    for c in chunks:
        counts[per_doc[c.document_id]] = counts.get(per_doc[c.document_id], 0) + 1
    return FTS_LANGUAGES.get(max(counts, key=lambda k: counts[k]) if counts else "en", "English")


def _default_generator(cfg: IndexConfig):
    from ragkit.generate import load_generator

    return load_generator(cfg.llm_model)


def _ticking(rep: Reporter, stage: str, fn: Callable[..., str]) -> Callable[..., str]:
    """``fn`` with a progress stage that starts at its first call and ticks once per call."""
    started = []

    def run(*args) -> str:
        if not started:
            rep.start(stage)
            started.append(True)
        out = fn(*args)
        rep.advance(stage)
        return out

    return run


def _write_llm_summaries(duck_path: Path, generator, embedder: Embedder, chunk_vectors, rep: Reporter) -> dict:
    """``--summaries llm``, after the commit (no model runs inside a transaction): the GGUF model writes the
    summaries of the tree nodes and community reports that are still extractive; a node's written text is
    embedded and averaged into its vector. A run killed here leaves the extractive ones, which the next run
    that commits writes."""
    from ragkit.extract.communities import summarize
    from ragkit.extract.summaries import llm_summarize, rewrite_with, unit
    from ragkit.records import SummaryNode

    with DuckStore(duck_path, read_only=True) as store:
        rows, reports = store.pending_summaries()
    nodes, texts = [], {}
    for r in rows:
        vecs = [v for v in chunk_vectors(r["chunk_ids"]).values()]
        node = SummaryNode(
            id=r["id"],
            level=0,
            document_id="",
            section_id=None,
            parent_id=None,
            collection="",
            title=r["title"],
            text=r["text"],
            chunk_ids=r["chunk_ids"],
            method="extractive",
            line_start=0,
            line_end=0,
            vector=unit(np.mean(vecs, axis=0)) if vecs else None,
        )
        nodes.append(node)
        texts[node.id] = r["texts"]
    write_node = _ticking(rep, "tree summaries", lambda node, t: llm_summarize(generator, node, t))
    rewrite_with(nodes, lambda n: texts[n.id], write_node, embedder.encode)
    write_report = _ticking(rep, "summaries", lambda report: summarize(generator, report))
    written = {r["id"]: text for r in reports if (text := write_report(r["report"]))}
    rep.finish("tree summaries")
    rep.finish("summaries")
    with DuckStore(duck_path, read_only=False) as store:
        store.write_summaries({n.id: (n.text, n.vector) for n in nodes if n.method == "llm"}, written)
    return {"tree_nodes": sum(n.method == "llm" for n in nodes), "communities": len(written)}


def _clear_index(index_dir: Path) -> None:
    """Remove what ragkit keeps in an index folder (and nothing else)."""
    layout.remove(layout.leftovers(index_dir, None))
    for name in (LANCE_DIR, GRAPH_DIR, CACHE.parts[0]):
        shutil.rmtree(index_dir / name, ignore_errors=True)
    for name in (DUCK_NAME, DUCK_NAME + ".wal", MANIFEST):
        (index_dir / name).unlink(missing_ok=True)


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
) -> IndexSummary:
    """One indexing run. ``generator_factory`` loads the GGUF model for ``extract = "llm"`` /
    ``summaries = "llm"``; ``confirm(message)`` approves LLM extraction after its estimate (default: yes);
    ``wait``: when another run holds the index, wait for it (with a warning) instead of raising ``IndexBusy``."""
    rep = reporter or Reporter()
    t0 = time.perf_counter()
    summary = IndexSummary(index_dir=remote.display(index_dir))

    def warn(msg: str) -> None:
        summary.warnings.append(msg)
        rep.warn(msg)

    if cfg.extract not in ("rules", "llm", "none"):
        raise BadInput(f"unknown extractor {cfg.extract!r}", hint="Choose rules, llm or none")
    if cfg.summaries not in ("extractive", "llm"):
        raise BadInput(f"unknown summary kind {cfg.summaries!r}", hint="Choose extractive or llm")
    not_followed: list[tuple[str, str]] = []
    files = discover(paths, cfg.include, cfg.exclude, cfg.include_hidden, not_followed)
    for rel, reason in not_followed:
        warn(f"skipped {rel}: {reason}")
        summary.skipped += 1
    if not files:
        raise BadInput(
            f"nothing indexable under {', '.join(str(p) for p in paths)}",
            hint=f"ragkit reads {', '.join(cfg.include)}; use --include to add patterns.",
        )
    roots = [Path(p).expanduser().resolve() for p in paths]

    # one writer at a time; an index on object storage: its lease, its committed files in the mirror, and the
    # bucket this run commits through
    with remote.writing(index_dir, wait, on_wait=rep.warn) as bucket:
        previous = None
        old_format = manifest_format(index_dir)
        if old_format not in (None, FORMAT_VERSION):  # (on object storage: the mirror; the old table is dropped
            # by the writer, the old run's objects by remove_leftovers below, the manifest replaced by the commit)
            warn(f"{index_dir} is in index format {old_format}; rebuilding it in format {FORMAT_VERSION}")
            _clear_index(index_dir)
        if (index_dir / "manifest.json").exists():
            previous = read_manifest(index_dir)
            if cfg.embed_model == AUTO and not full:  # the model the index was built with
                cfg = replace(cfg, embed_model=previous["index_config"]["embed_model"])
            if not full and previous["index_config"]["embed_model"] != cfg.embed_model:
                raise EmbedderMismatch(
                    f"index {index_dir} was built with {previous['index_config']['embed_model']}, not {cfg.embed_model}"
                )
        # what an unfinished run left (never read: the manifest does not name it)
        layout.remove(layout.leftovers(index_dir, previous))
        if bucket is not None:
            bucket.remove_leftovers(previous)
        duck_path = layout.store_path(index_dir, previous or {})
        states: dict[str, dict[str, Any]] = {}
        committed = None
        if previous is not None and duck_path.exists():
            with DuckStore(duck_path, read_only=True) as store:
                states = store.sources()
                committed = store.last_run()
        if full:
            states_for_diff: dict[str, dict[str, Any]] = {}
        else:
            states_for_diff = states

        # ---- diff
        todo: list[tuple[SourceFile, bytes, str, bool]] = []  # file, bytes, hash, is_changed
        unchanged_sources: list[dict[str, Any]] = []
        seen = set()
        for f in files:
            key = str(f.path)
            seen.add(key)
            old = states_for_diff.get(key)
            if old and old["size"] == f.size and old["mtime_ns"] == f.mtime_ns:
                summary.unchanged += 1
                continue
            if f.size > cfg.max_file_size_mb * 1e6:  # not read at all (what it held before stays)
                warn(f"skipped {f.rel}: {f.size / 1e6:,.1f} MB is over --max-file-size {cfg.max_file_size_mb:g} MB")
                summary.skipped += 1
                continue
            try:
                data = read_source(f)
            except Unreadable as exc:
                warn(f"skipped {f.rel}: {exc}")
                summary.skipped += 1
                if exc.vanished:  # as if the run had not found it: what it held goes
                    seen.discard(key)
                continue
            h = content_hash(data)
            if old and old["hash"] == h:
                summary.unchanged += 1
                unchanged_sources.append(
                    {"source_path": key, "rel": f.rel, "hash": h, "size": f.size, "mtime_ns": f.mtime_ns}
                )
                continue
            todo.append((f, data, h, old is not None))
        gone = [p for p in states_for_diff if p not in seen and _under(p, roots)]
        summary.removed = sum(len(states_for_diff[p]["doc_ids"]) for p in gone)

        # an explicitly configured BM25 language other than the index's: the full-text index is rebuilt
        fts_changed = bool(
            previous
            and not full
            and cfg.fts_language != "auto"
            and previous.get("fts_language", cfg.fts_language) != cfg.fts_language
        )
        nothing_changed = not todo and not gone and not unchanged_sources and not full and not fts_changed
        if nothing_changed and committed is not None and previous is not None:
            summary.total_documents = previous["counts"]["documents"]
            summary.total_chunks = previous["counts"]["chunks"]
            summary.seconds["total"] = round(time.perf_counter() - t0, 3)
            return summary  # no model load, no write

        # ---- parse and chunk
        if cfg.embed_model == AUTO:  # a new index (or --full): the model for its documents' language
            cfg = replace(cfg, embed_model=model_for(corpus_language([(f, data) for f, data, _, _ in todo])))
        t1 = time.perf_counter()
        rep.start("model")
        embedder = embedder_factory(cfg)
        rep.finish("model")
        if previous and not full and previous["embedder"]["fingerprint"] != embedder.fingerprint:
            raise EmbedderMismatch(
                f"the embedding model changed since {index_dir} was built "
                f"({previous['embedder']['fingerprint']} → {embedder.fingerprint})"
            )
        summary.seconds["load_model"] = round(time.perf_counter() - t1, 3)
        table = committed["lance_table"] if committed else "chunks"
        if full and previous and previous["embedder"]["dimension"] != embedder.dimension:
            table = f"chunks_{int(time.time())}"  # a new schema needs a new table
        # the table at the committed version (what an unfinished run wrote after it is undone); the BM25
        # settings are known once the run's chunks are
        writer = ChunkWriter(
            remote.lance_location(index_dir),
            table,
            committed["lance_version"] if committed and committed["lance_table"] == table else None,
            embedder.dimension,
            FtsSettings(),
            cfg.vector_index_min_rows,
            rebuild_fts=fts_changed,
            guard=bucket.guard if bucket else None,
        )
        t1 = time.perf_counter()
        parser = SourceParser(cfg, embedder, version_of)
        prepared = None  # --engine ray: every file parsed, chunked, embedded and written by Ray workers first
        if cfg.engine == "ray" and todo:
            from ragkit.ingest import ray_engine

            rep.start("ray", len(todo))
            writer.ensure_table()
            prepared = ray_engine.prepare(todo, cfg, version_of, writer.uri, progress=lambda n: rep.advance("ray", n))
            summary.seconds.update(prepared.seconds)
            rep.finish("ray")
        elif cfg.engine not in ("local", "ray"):
            raise BadInput(f"unknown engine {cfg.engine!r}", hint="Choose local or ray")
        docs: dict[str, Document] = {}
        parsed: list[ParsedDocument] = []
        chunks: list[Chunk] = []
        new_sources: list[dict[str, Any]] = []
        replaced_ids: list[str] = []
        rep.start("parse", len(todo))
        for n, (f, data, h, is_changed) in enumerate(todo):
            if is_changed:  # its old documents go, whether or not the new bytes parse
                replaced_ids.extend(states_for_diff[str(f.path)]["doc_ids"])
            try:
                results = parser.parse(f, data, h) if prepared is None else prepared.results(n)
            except (Undecodable, ParseError) as exc:
                warn(f"skipped {f.rel}: {exc}")
                summary.skipped += 1
                rep.advance("parse")
                continue
            kept = 0
            for pd, doc_chunks in results:
                for problem in pd.warnings:
                    warn(f"{pd.document.path}: {problem}")
                blank = pd.document.metadata.get("pages_without_text") or []
                if blank:
                    summary.pages_without_text += len(blank)
                    warn(
                        f"{pd.document.path}: {len(blank)} of {pd.document.metadata.get('pages')} page(s) have no "
                        f"text layer (scanned? OCR them first): page(s) {_spans(blank)}"
                    )
                if pd.document.id in docs:
                    warn(f"skipped a duplicate of {pd.document.path}")
                    continue
                if not doc_chunks:
                    warn(f"skipped {pd.document.path}: no text")
                    continue
                docs[pd.document.id] = pd.document
                parsed.append(pd)
                chunks.extend(doc_chunks)
                kept += 1
            if kept == 0 and results == []:
                warn(f"skipped {f.rel}: no documents in it")
            if kept == 0:
                summary.skipped += 1
            else:
                summary.changed += is_changed
                summary.new += not is_changed
            new_sources.append(
                {"source_path": str(f.path), "rel": f.rel, "hash": h, "size": f.size, "mtime_ns": f.mtime_ns}
            )
            rep.advance("parse")
        rep.finish("parse")
        summary.seconds["parse_chunk"] = round(time.perf_counter() - t1, 3)

        generator = None
        if (cfg.extract == "llm" and chunks) or cfg.summaries == "llm":
            generator = (generator_factory or _default_generator)(cfg)
        if cfg.extract == "llm" and chunks:
            t1 = time.perf_counter()
            stats = llm_extract.run(parsed, chunks, generator, confirm or (lambda message: True), rep)
            summary.extract = {
                "chunks": stats.chunks,
                "invalid": stats.invalid,
                "salvaged": stats.salvaged,
                "dropped_entities": stats.dropped_entities,
            }
            if stats.invalid:
                warn(f"LLM extraction: {stats.invalid} of {stats.chunks} chunk(s) gave no valid JSON (skipped)")
            summary.seconds["extract_llm"] = round(time.perf_counter() - t1, 3)

        remaining = sum(len(s["doc_ids"]) for p, s in states_for_diff.items() if p in seen) - len(replaced_ids)
        if not docs and remaining <= 0:
            raise BadInput(
                f"nothing indexable under {', '.join(str(p) for p in paths)} ({summary.skipped} file(s) skipped)",
                hint="See the warnings above; binary and empty files are not indexed.",
            )

        # ---- embed
        t1 = time.perf_counter()
        rep.start("embed", len(chunks))
        vectors = None  # (on Ray the workers wrote them)
        if prepared is None:
            vectors = (
                embedder.encode([c.embed_text for c in chunks], progress=lambda n: rep.advance("embed", n))
                if chunks
                else np.zeros((0, embedder.dimension), dtype=np.float32)
            )
        rep.finish("embed")
        summary.seconds["embed"] = round(time.perf_counter() - t1, 3)
        summary.documents, summary.chunks = len(docs), len(chunks)

        # ---- write LanceDB (new version), then commit in DuckDB
        fts_language = _fts_language(cfg, None if full else previous, parsed, chunks)
        writer.fts = FtsSettings(fts_language, cfg.fts_stem, cfg.fts_remove_stop_words)
        t1 = time.perf_counter()
        rep.start("write")
        removed_ids = [d for p in gone for d in states_for_diff[p]["doc_ids"]] + replaced_ids
        if full:
            writer.delete_all()
        else:
            writer.delete_documents(removed_ids)
        if prepared is not None:  # the workers' fragments, one Append
            writer.append_fragments(prepared.fragments)
            unwanted = prepared.unwanted({c.id for c in chunks})
            if unwanted:  # rows of a file that failed in another part, or twice of one document: the kept
                writer.delete_ids(sorted(unwanted))  # ones written again from here (rare)
                redo = [c for c in chunks if c.id in unwanted]
                if redo:
                    writer.add(chunk_rows(redo, docs, embedder.encode([c.embed_text for c in redo])))
        elif chunks:
            writer.add(chunk_rows(chunks, docs, vectors))
        version = writer.finish()
        summary.seconds["write_lance"] = round(time.perf_counter() - t1, 3)

        t1 = time.perf_counter()
        run = {
            "started_at": time.time() - (time.perf_counter() - t0),
            "finished_at": time.time(),
            "lance_table": table,
            "lance_version": version,
            "summary": {k: v for k, v in summary.to_dict().items() if k not in ("warnings",)},
        }
        # the run goes into a copy of the committed store, its graphs into a folder of their own; the
        # manifest's rename commits them with the LanceDB version (ragkit/store/layout.py)
        run_id = (committed["id"] if committed else 0) + 1
        # on object storage the names carry a token of this writer's (writers on two machines)
        store_name, graph_name = layout.run_names(run_id, os.urandom(3).hex() if bucket else "")
        new_store, graph_dir = index_dir / store_name, index_dir / graph_name
        layout.remove([new_store, graph_dir])
        if committed is not None:  # (a --full run keeps only the run numbers of it)
            shutil.copyfile(duck_path, new_store)
            if Path(f"{duck_path}.wal").exists():
                shutil.copyfile(f"{duck_path}.wal", f"{new_store}.wal")
        with DuckStore(new_store, read_only=False) as store:
            store.commit_run(
                run_id,
                removed_doc_ids=removed_ids,
                removed_sources=gone + [str(f.path) for f, *_ in todo] + [s["source_path"] for s in unchanged_sources],
                sources=new_sources + unchanged_sources,
                documents=list(docs.values()),
                sections=[s for pd in parsed for s in pd.sections],
                chunks=chunks,
                refs=[r for pd in parsed for r in pd.refs],
                run=run,
                full=full,
                entities=functools.reduce(lambda acc, pd: acc.extend(pd.entities), parsed, EntityRows()),
                tree=cfg.tree,
            )
            summary.knowledge = run["summary"].get("knowledge", {})
            summary.tree = run["summary"].get("tree", {})
            counts, facts = store.counts(), store.planning_facts()
            t2 = time.perf_counter()
            write_derived(store, graph_dir, run_id)
            summary.seconds["graph"] = round(time.perf_counter() - t2, 3)
            manifest = {
                "index_config": cfg.to_dict(),
                "embedder": {
                    "name": embedder.name,
                    "spec": cfg.embed_model,
                    "dimension": embedder.dimension,
                    "fingerprint": embedder.fingerprint,
                    "max_tokens": embedder.max_tokens,
                    "encoder": getattr(embedder, "encoder", cfg.encoder),
                },
                "counts": counts,
                "facts": facts,
                "fts_language": fts_language,
                "store": store_name,
                "graph": graph_name,
                "last_run": {
                    "id": run_id,
                    "lance_table": table,
                    "lance_version": version,
                    "finished_at": run["finished_at"],
                    "summary": {k: getattr(summary, k) for k in ("new", "changed", "unchanged", "removed", "skipped")},
                },
            }
            store.keep_manifest(manifest)  # ``check --repair`` can restore a lost manifest from it
            store.con.execute("CHECKPOINT")  # the committed store is one file, no write-ahead log
        summary.total_documents, summary.total_chunks = counts["documents"], counts["chunks"]
        rep.finish("write")
        # the models that write summaries run before the commit too (no model inside a DuckDB transaction)
        if cfg.summaries == "llm":
            t2 = time.perf_counter()
            fresh = {} if vectors is None else {c.id: v for c, v in zip(chunks, vectors)}
            chunk_vectors = writer.vectors_lookup(fresh)
            summary.written = _write_llm_summaries(new_store, generator, embedder, chunk_vectors, rep)
            summary.seconds["llm_summaries"] = round(time.perf_counter() - t2, 3)
        if bucket is not None:  # the run's files go up before the manifest that names them
            bucket.guard()
            bucket.push_run(manifest)
        write_manifest(index_dir, manifest, bucket)  # the commit
        layout.remove(layout.leftovers(index_dir, manifest))  # the replaced run's store and graphs
        if bucket is not None:
            bucket.remove_leftovers(manifest)
        summary.seconds["commit"] = round(time.perf_counter() - t1, 3)
        if cfg.expand:
            t2 = time.perf_counter()
            TermVectors(
                index_dir, run_id, lambda: DuckStore(new_store, read_only=True), embedder.encode, embedder.fingerprint
            ).load()
            summary.seconds["term_vectors"] = round(time.perf_counter() - t2, 3)
        summary.seconds["total"] = round(time.perf_counter() - t0, 3)
        summary.peak_rss_mb = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
        return summary
