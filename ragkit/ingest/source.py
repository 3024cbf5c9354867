"""One source file → its documents, each with sections, chunks, references and rule-based entities (the
parse-and-chunk stage of an indexing run; ragkit/ingest/pipeline.py runs it in process, ragkit/ingest/ray_engine.py
on Ray workers)."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragkit.embed import AUTO, Embedder, load_embedder, model_for
from ragkit.extract.entities import entity_rows
from ragkit.extract.german import document_law
from ragkit.extract.refs import find_refs
from ragkit.extract.resolve import ref_rows
from ragkit.ingest.chunk import chunk_document
from ragkit.ingest.config import IndexConfig
from ragkit.ingest.discover import (
    SourceDiff,
    SourceFile,
    Undecodable,
    decode,
    discover,
    read_source,
    source_row,
    stable_id,
)
from ragkit.ingest.doctype import infer_doc_type
from ragkit.ingest.ocr import OcrSettings
from ragkit.ingest.parse import format_for
from ragkit.ingest.pdf import page_of
from ragkit.ingest.raw import ParseError, RawHeading
from ragkit.ingest.sections import build_sections, infer_title
from ragkit.ingest.structure import legal_structure
from ragkit.records import Block, Chunk, Document, EntityRows, IndexSummary, ParsedDocument
from ragkit.store.browse import UNREAD
from ragkit.text import PROSE_MIN, REPEAT_MAX, detect_language, repetition, word_share

STRUCTURED = 3  # headings from which a text file is a document, whatever its tables hold


def _check_prose(raw) -> None:
    """``ParseError`` for a text file whose words are not words (a base64 blob or hex dump saved as .txt was
    indexed as 11,696 chunks of noise in 22 minutes). A file with headings is a document even where its tables
    are mostly numbers (the coordinates of a Fluglärm ordinance: 12 % words)."""
    if sum(isinstance(i, RawHeading) for i in raw.items) >= STRUCTURED:
        return
    text = "\n".join(i.text for i in raw.items if isinstance(i, Block))
    share = word_share(text)
    if share < PROSE_MIN:
        raise ParseError(f"not prose: {share:.0%} of its tokens look like words (base64, a hex dump or minified code?)")
    ratio = repetition(text)
    if ratio > REPEAT_MAX:
        raise ParseError(f"not prose: the text repeats itself (its start compresses {ratio:.0f}×)")


SAMPLE_FILES = 12  # files whose text decides an index's language before it has an embedding model
SAMPLE_CHARS = 4_000  # of each


def _spread(items: list) -> list:
    """Up to SAMPLE_FILES of ``items``, evenly spread (a "de/" folder sorting first is not all of a tree)."""
    return items[:: max(1, len(items) // SAMPLE_FILES)][:SAMPLE_FILES]


def corpus_language(files: list[tuple[SourceFile, bytes]], ocr: OcrSettings | None = None) -> str:
    """ "de", "sv" or "en": the language most of a sample of ``files`` is written in (up to SAMPLE_FILES text
    files spread over the list, or when there are none the first two PDF/Word files; scans read by ``ocr``, whose
    pages the run then finds in the OCR cache), for the choice of an index's embedding model."""
    texts: list[str] = []
    for _src, data in _spread([f for f in files if not format_for(f[0].path.name).binary]):
        try:
            texts.append(decode(data)[:SAMPLE_CHARS])
        except Undecodable:
            continue
    if not texts:
        for src, data in [f for f in files if format_for(f[0].path.name).binary][:2]:
            try:
                fmt = format_for(src.path.name)
                raw = fmt.parse(data, ocr) if fmt.scans else fmt.parse(data)
            except ParseError:
                continue
            texts.append(" ".join(i.text for i in raw.items if isinstance(i, Block))[:SAMPLE_CHARS])
    votes: dict[str, int] = {}
    for text in texts:
        lang = detect_language(text)
        votes[lang] = votes.get(lang, 0) + 1
    return max(sorted(votes), key=lambda lang: (votes[lang], lang == "en")) if votes else "en"


def model_for_paths(paths: list, cfg: IndexConfig) -> str:
    """The embedding model a new index of ``paths`` gets: ``cfg.embed_model`` unless "auto", then the bundled
    model for the language of a sample of its files (for scripts that load the model before indexing)."""
    if cfg.embed_model != AUTO:
        return cfg.embed_model
    files = discover([Path(p) for p in paths], cfg.include, cfg.exclude, cfg.include_hidden, [])
    ocr = OcrSettings(cfg.ocr_lang) if cfg.ocr else None
    return model_for(corpus_language([(f, read_source(f)) for f in _spread(files)], ocr))


class SourceParser:
    """Parses one source file into documents; collects sections and chunks."""

    def __init__(
        self,
        cfg: IndexConfig,
        embedder: Embedder,
        version_of: str | None = None,
        ocr_threads: int = 0,
        on_page: Callable[[bool], None] | None = None,
    ):
        """``ocr_threads``: threads reading scanned pages (0: a core each); ``on_page(cached)`` after each."""
        self.cfg, self.embedder = cfg, embedder
        self.ocr = OcrSettings(cfg.ocr_lang, ocr_threads, progress=on_page) if cfg.ocr else None
        self.collection, self.doc_type = cfg.collection, cfg.doc_type
        self.version_of = version_of
        self.max_tokens = min(cfg.chunk_tokens, embedder.max_tokens)

    def parse(
        self, src: SourceFile, data: bytes, source_hash: str, first_line: int = 1
    ) -> list[tuple[ParsedDocument, list[Chunk]]]:
        """``first_line``: for a part of a JSONL corpus, the number of its first line in the file."""
        fmt = format_for(src.path.name)
        text = None if fmt.binary else decode(data)
        mtime = src.mtime_ns / 1e9
        out = []
        if fmt.binary:
            raw = legal_structure(fmt.parse(data, self.ocr) if fmt.scans else fmt.parse(data))
            doc_id = stable_id(str(src.path), source_hash)
            # a PDF without a title in its metadata: the file name (its first heading is rarely the title)
            title = raw.title or (src.path.stem if raw.page_starts is not None else infer_title(raw, src.path.stem))
            out.append(self._finish(src, source_hash, doc_id, src.rel, src.rel, title, raw, mtime))
        elif fmt.corpus:
            for rec in fmt.parse(text, first_line):
                doc_id = stable_id(source_hash, rec.external_id)
                title = rec.title or rec.external_id
                out.append(
                    self._finish(
                        src, source_hash, doc_id, rec.external_id, f"{src.rel}#{rec.external_id}", title, rec.doc, mtime
                    )
                )
        else:
            raw = legal_structure(fmt.parse(text))
            _check_prose(raw)
            doc_id = stable_id(str(src.path), source_hash)
            title = infer_title(raw, src.path.stem)
            out.append(self._finish(src, source_hash, doc_id, src.rel, src.rel, title, raw, mtime))
        return out

    def _finish(self, src, source_hash, doc_id, external_id, path, title, raw, mtime):
        meta = raw.metadata
        doc = Document(
            id=doc_id,
            path=path,
            source_path=str(src.path),
            source_hash=source_hash,
            external_id=external_id,
            title=title,
            doc_type=infer_doc_type(meta, self.doc_type, path, title),
            collection=str(meta.get("collection") or self.collection),
            metadata=meta,
            mtime=mtime,
            version=str(meta["version"]) if meta.get("version") is not None else None,
            line_count=raw.line_count,
            supersedes=str(meta.get("supersedes") or self.version_of or "") or None,
        )
        sections, blocks = build_sections(raw, doc_id, title, stable_id)
        chunks = chunk_document(sections, blocks, self.max_tokens, self.embedder.count_tokens, stable_id)
        if raw.page_starts:
            for c in chunks:
                c.page_start, c.page_end = page_of(raw.page_starts, c.line_start), page_of(raw.page_starts, c.line_end)
        refs = [r for c in chunks for r in ref_rows(c.id, doc_id, find_refs(c.text), stable_id)]
        doc.language = detect_language(" ".join(c.text for c in chunks[:40]))
        entities = EntityRows()
        if self.cfg.extract == "rules":
            own_law = document_law(title, meta) if doc.language == "de" else None
            entities = entity_rows(chunks, doc_id, doc.language, own_law)
        return ParsedDocument(doc, sections, refs, entities, warnings=list(raw.warnings)), chunks


@dataclass
class ParsedRun:
    """What the parse-and-chunk phase made of the files to index: documents (by id), their parsed form, their
    chunks, the sources read, and the ids of the older documents the changed files replace."""

    docs: dict[str, Document] = field(default_factory=dict)
    parsed: list[ParsedDocument] = field(default_factory=list)
    chunks: list[Chunk] = field(default_factory=list)
    sources: list[dict[str, Any]] = field(default_factory=list)
    replaced_ids: list[str] = field(default_factory=list)

    def release(self) -> None:
        """Forget the parsed rows (the run's ``RunChanges`` carries them into the store, then lets them go)."""
        self.docs, self.parsed, self.chunks = {}, [], []


def parse_sources(
    diff: SourceDiff,
    parse: Callable[[int, SourceFile, bytes, str], list[tuple[ParsedDocument, list[Chunk]]]],
    states: dict[str, dict[str, Any]],
    summary: IndexSummary,
    warn: Callable[[str], None],
    advance: Callable[[], None],
) -> ParsedRun:
    """Parse and chunk every file of ``diff.todo`` (``parse(n, file, bytes, hash)``: in process or the Ray
    workers' results), counting new, changed and skipped files and blank PDF pages in ``summary``. A changed
    file's old documents go whether or not its new bytes parse; a file that fails is skipped with a warning."""
    out = ParsedRun()
    for n, (f, data, h, is_changed) in enumerate(diff.todo):
        if is_changed:  # its old documents go, whether or not the new bytes parse
            out.replaced_ids.extend(states[str(f.path)]["doc_ids"])
        try:
            results = parse(n, f, data, h)
        except (Undecodable, ParseError) as exc:
            warn(f"skipped {f.rel}: {exc}")
            summary.skipped += 1
            advance()
            continue
        kept = sum(_keep(pd, doc_chunks, out, summary, warn) for pd, doc_chunks in results)
        if kept == 0 and results == []:
            warn(f"skipped {f.rel}: no documents in it")
        if kept == 0:
            summary.skipped += 1
        else:
            summary.changed += is_changed
            summary.new += not is_changed
        unread = sum(len(pd.document.metadata.get("pages_without_text") or []) for pd, _ in results)
        out.sources.append(source_row(f, h) if not unread else unread_row(f, h, unread))
        advance()
    return out


def _keep(pd: ParsedDocument, chunks: list[Chunk], out: ParsedRun, summary: IndexSummary, warn) -> bool:
    """Add one parsed document to the run unless it is a duplicate or has no text (said in a warning)."""
    for problem in pd.warnings:
        warn(f"{pd.document.path}: {problem}")
    unread = pd.document.metadata.get("pages_without_text") or []
    if unread:
        summary.pages_without_text += len(unread)
        summary.unread_files.append(f"{pd.document.path} (page(s) {_spans(unread)})")
    summary.pages_ocr += len(pd.document.metadata.get("ocr_pages") or {})
    if pd.document.id in out.docs:
        warn(f"skipped a duplicate of {pd.document.path}")
        return False
    if not chunks:
        warn(f"skipped {pd.document.path}: no text")
        return False
    out.docs[pd.document.id] = pd.document
    out.parsed.append(pd)
    out.chunks.extend(chunks)
    return True


def unread_row(f: SourceFile, content_hash: str, pages: int) -> dict[str, Any]:
    """The source row of a file with scanned pages that were not read (no OCR engine, ``--no-ocr``): its hash
    marked with how many (``UNREAD``) and no mtime, so that the next run reads the file again (an engine
    installed since reads them) and ``ragkit stats`` counts them."""
    return source_row(f, f"{content_hash}{UNREAD}{pages}") | {"mtime_ns": -1}


def _spans(numbers: list[int]) -> str:
    """``1-3, 7`` for [1, 2, 3, 7]."""
    out, start = [], None
    for i, n in enumerate(numbers):
        start = n if start is None else start
        if i + 1 == len(numbers) or numbers[i + 1] != n + 1:
            out.append(f"{start}-{n}" if n != start else str(n))
            start = None
    return ", ".join(out)


# ---------------------------------------------------------------- parsing on every core

PARALLEL_MIN_FILES = 64  # fewer files to parse: in this process (a pool's start costs ~2 s)
_WORKER: SourceParser | None = None


def _start_worker(cfg: IndexConfig, spec: str, encoder: str, version_of: str | None, ocr_threads: int) -> None:
    global _WORKER
    embedder = load_embedder(spec, cfg.embed_batch_size, encoder, keys=cfg.api_keys)
    _WORKER = SourceParser(cfg, embedder, version_of, ocr_threads)


def _parse_in_worker(job: tuple[SourceFile, bytes, str]):
    try:
        return True, _WORKER.parse(*job)
    except (Undecodable, ParseError) as exc:
        return False, exc


def parallel_parse(
    todo: list, cfg: IndexConfig, spec: str, encoder: str, version_of: str | None, workers: int
) -> Iterator[tuple[bool, Any]]:
    """Parse and chunk ``todo``'s files in ``workers`` processes (each with its own tokenizer), results in
    order: (True, documents) or (False, the ParseError that skipped the file)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        workers,
        ctx,
        initializer=_start_worker,
        initargs=(cfg, spec, encoder, version_of, max(1, (os.cpu_count() or 1) // workers)),  # fmt: skip
    ) as pool:
        yield from pool.map(_parse_in_worker, [(f, data, h) for f, data, h, _ in todo], chunksize=4)
