"""The phases of an indexing run that turn the changed files into chunks, before anything is embedded or
written (ragkit/ingest/pipeline.py runs them, as methods of its ``IndexRun``): load the embedding model (a new
index: the one for its documents' language) and check it against the index's, with the LanceDB writer at the
committed version (``load_model``); parse and chunk the files to index, in process, on every core or on Ray
workers, scanned pages read by OCR on the way (``parse``); and ``extract = "llm"``: a GGUF model extracts the
entities and relations (``extract``).

``PreparePhases`` is mixed into ``IndexRun``, whose state these phases read and set (``cfg``, ``rep``,
``summary``, ``previous``, ``committed``, ``states``, ``full``, ``writer``, ``prepared``, …) and whose
``timed`` and ``warn`` they use.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ragkit.embed import AUTO, Embedder, identity, model_for, probe, same_model
from ragkit.errors import EmbedderMismatch
from ragkit.extract import llm as llm_extract
from ragkit.generate import load_generator
from ragkit.ingest import ocr, ray_engine
from ragkit.ingest.config import IndexConfig
from ragkit.ingest.discover import SourceDiff, SourceFile
from ragkit.ingest.ocr import OcrSettings
from ragkit.ingest.source import (
    PARALLEL_MIN_FILES,
    ParsedRun,
    SourceParser,
    corpus_language,
    parallel_parse,
    parse_sources,
)
from ragkit.modelspec import parse_spec
from ragkit.store import remote
from ragkit.store.lance_rows import FtsSettings
from ragkit.store.lance_write import ChunkWriter


def _default_generator(cfg: IndexConfig):
    return load_generator(cfg.model, keys=cfg.api_keys)


class PreparePhases:
    """Load the model, parse and chunk, extract: the phases of ``IndexRun`` before the chunks are embedded."""

    def load_model(self, diff: SourceDiff, embedder_factory: Callable[[IndexConfig], Embedder]) -> Embedder:
        """The embedding model (a new index: the one for its documents' language), checked against the index's,
        and the LanceDB writer at the committed version (what an unfinished run wrote after it is undone)."""
        if self.cfg.embed_model == AUTO:  # a new index (or --full): the model for its documents' language
            ocr_settings = OcrSettings(self.cfg.ocr_lang) if self.cfg.ocr else None  # (a folder of scans)
            language = corpus_language([(f, data) for f, data, _, _ in diff.todo], ocr_settings)
            self.cfg = replace(self.cfg, embed_model=model_for(language))
        prev = self.previous
        if prev and not self.full:
            self.fill = prev.fill  # a progressive index being filled: its runs embed with the fast model
        elif self.cfg.progressive:  # a new progressive index: the fast model now, the full one after the commit
            self.fill = self._fill_spec(embedder_factory)
            self.cfg = replace(self.cfg, embed_model=f"static:{self.cfg.embed_model}")
        with self.timed("load_model"):
            self.rep.start("model")
            embedder = embedder_factory(self.cfg)
            self.rep.finish("model")
        if prev and not self.full and prev.embedder.fingerprint != embedder.fingerprint:
            raise EmbedderMismatch(
                f"the embedding model changed since {self.index_dir} was built "
                f"({prev.embedder.fingerprint} → {embedder.fingerprint})"
            )
        recorded = prev.embedder.probe if prev else None
        if prev and not self.full and recorded:  # a model file keeps its fingerprint; a server is asked again
            if parse_spec(self.cfg.embed_model).kind in ("http", "gguf") and not same_model(recorded, embedder):
                raise EmbedderMismatch(
                    f"{self.cfg.embed_model} no longer answers as the model {self.index_dir} was built with "
                    "(another model under the same name?)"
                )
            self.probe = recorded
        else:
            self.probe = probe(embedder)
        self.table = self.committed["lance_table"] if self.committed else "chunks"
        if self.full and prev and prev.embedder.dimension != embedder.dimension:
            self.table = f"chunks_{int(time.time())}"  # a new schema needs a new table
        at = self.committed["lance_version"] if self.committed and self.committed["lance_table"] == self.table else None
        self.writer = ChunkWriter(  # the BM25 settings are known once the run's chunks are
            remote.lance_location(self.index_dir),
            self.table,
            at,
            embedder.dimension,
            FtsSettings(),
            self.cfg.vector_index_min_rows,
            rebuild_fts=self.fts_changed,
            guard=self.bucket.guard if self.bucket else None,
        )
        return embedder

    def _fill_spec(self, embedder_factory: Callable[[IndexConfig], Embedder]) -> dict[str, Any]:
        """What the full model of a new progressive index is (its vectors fill in after the commit)."""
        full = embedder_factory(self.cfg)
        # (version: of the fill table, ragkit/store/fill.py: none yet)
        return {**identity(full, self.cfg.embed_model, self.cfg.encoder, probe(full)), "version": None, "filled": 0}

    def parse(self, diff: SourceDiff, embedder: Embedder, version_of: str | None) -> ParsedRun:
        """Parse and chunk the files to index, in process or on Ray workers (``source.parse_sources``)."""
        with self.timed("parse_chunk"):
            if self.cfg.engine == "ray" and diff.todo:
                self.rep.start("ray", len(diff.todo))
                self.writer.ensure_table()
                self.prepared = ray_engine.prepare(
                    diff.todo, self.cfg, version_of, self.writer.uri, progress=lambda n: self.rep.advance("ray", n)
                )
                self.summary.seconds.update(self.prepared.seconds)
                self.rep.finish("ray")
            parser = SourceParser(self.cfg, embedder, version_of, on_page=self._on_page)
            prepared = self.prepared
            pooled = self._pooled(diff, embedder, version_of)

            def parse_one(n: int, f: SourceFile, data: bytes, h: str):
                if pooled is not None:
                    ok, out = next(pooled)
                    if not ok:
                        raise out
                    return out
                return parser.parse(f, data, h) if prepared is None else prepared.results(n)

            self.rep.start("parse", len(diff.todo))
            got = parse_sources(
                diff, parse_one, self.states, self.summary, self.warn, lambda: self.rep.advance("parse")
            )
            self.rep.finish("parse")
            self.rep.finish("ocr")
        self._say_unread()
        diff.drop_bytes()
        return got

    def _on_page(self, cached: bool) -> None:
        """A scanned page read (``cached``: from the OCR cache): the "ocr" bar counts pages and their rate."""
        if not self.ocr_bar:
            self.ocr_bar = True
            self.rep.start("ocr", None)
        self.rep.advance("ocr")

    def _say_unread(self) -> None:
        """Once a run: how many scanned pages were not read, where, and the one thing that reads them."""
        s = self.summary
        if not s.pages_without_text:
            return
        why = (ocr.available() or "OCR found no text on them") if self.cfg.ocr else "--no-ocr: index again without it"
        files = "; ".join(s.unread_files[:5]) + (
            f"; … {len(s.unread_files) - 5} more" if len(s.unread_files) > 5 else ""
        )
        self.warn(
            f"{s.pages_without_text} scanned page(s) in {len(s.unread_files)} file(s) were not read ({files}): {why}"
        )

    def _pooled(self, diff: SourceDiff, embedder: Embedder, version_of: str | None):
        """Results of parsing on every core (``source.parallel_parse``) when that pays: a local run of many
        files whose model a worker can load by its spec; else None (parsed here)."""
        workers = min(self.parse_workers, len(diff.todo) // PARALLEL_MIN_FILES)
        if self.cfg.engine != "local" or workers < 2:
            return None
        encoder = getattr(embedder, "encoder", self.cfg.encoder)
        return parallel_parse(diff.todo, self.cfg, self.cfg.embed_model, encoder, version_of, workers)

    def extract(self, got: ParsedRun, generator_factory, confirm) -> Any:
        """``extract = "llm"``: a GGUF model extracts the entities and relations (the rules did it while
        parsing otherwise); returns the model when this run needs one (LLM extraction or summaries)."""
        cfg = self.cfg
        if not ((cfg.extract == "llm" and got.chunks) or cfg.summaries == "llm"):
            return None
        generator = (generator_factory or _default_generator)(cfg)
        if cfg.extract == "llm" and got.chunks:
            with self.timed("extract_llm"):
                stats = llm_extract.run(got.parsed, got.chunks, generator, confirm or (lambda message: True), self.rep)
            self.summary.extract = {
                "chunks": stats.chunks,
                "invalid": stats.invalid,
                "salvaged": stats.salvaged,
                "dropped_entities": stats.dropped_entities,
            }
            if stats.invalid:
                self.warn(f"LLM extraction: {stats.invalid} of {stats.chunks} chunk(s) gave no valid JSON (skipped)")
        return generator
