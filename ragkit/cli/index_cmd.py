"""ragkit index PATH..."""

from __future__ import annotations

import os
import sys

import typer

from ragkit.cli import options as o
from ragkit.cli.common import RichReporter, console, err, fail, handle_errors, interactive, models, print_json
from ragkit.config import IndexConfig, load_config, override
from ragkit.errors import RagkitError


@handle_errors
def index_cmd(
    paths: o.Paths,
    index: o.IndexOpt = None,
    include: o.Include = None,
    exclude: o.Exclude = None,
    hidden: o.Hidden = False,
    full: o.Full = False,
    progressive: o.Progressive = False,
    fill_batches: o.FillBatches = None,
    fill_first: o.FillFirst = None,
    doc_type: o.DocType = None,
    collection: o.Collection = None,
    embed_model: o.EmbedModel = None,
    chunk_tokens: o.ChunkTokens = None,
    language: o.Language = None,
    extract: o.Extract = None,
    summaries: o.Summaries = None,
    no_tree: o.NoTree = False,
    model: o.IndexModel = None,
    yes: o.Yes = False,
    version_of: o.VersionOf = None,
    no_wait: o.NoWait = False,
    max_file_size: o.MaxFileSize = None,
    no_ocr: o.NoOcr = False,
    ocr_lang: o.OcrLang = None,
    engine: o.Engine = None,
    ray_address: o.RayAddress = None,
    ray_workers: o.RayWorkers = None,
    as_json: o.AsJson = False,
    watch: o.Watch = False,
):
    """Index documents: parse, chunk, embed and store (only what changed)."""
    from ragkit import library

    icfg = override(
        load_config()[0],
        include=include or None,
        exclude=exclude or None,
        include_hidden=hidden or None,
        doc_type=doc_type,
        collection=collection,
        embed_model=embed_model,
        chunk_tokens=chunk_tokens,
        fts_language=language,
        extract=extract,
        summaries=summaries,
        model=model,
        tree=False if no_tree else None,
        max_file_size_mb=max_file_size,
        engine=engine,
        ray_address=ray_address,
        ray_workers=ray_workers,
        progressive=progressive or None,
        ocr=False if no_ocr else None,
        ocr_lang=ocr_lang,
    )
    run = _Runs(paths, index, icfg, as_json, yes, version_of, wait=not no_wait)
    run.fill_batches, run.fill_first = fill_batches, fill_first or None
    run(full)
    if watch:
        err.print(f"[dim]watching {', '.join(map(str, paths))} for changes (Ctrl-C stops)[/]")
        library.watch(paths, index, run.again, on_batch=lambda n: err.print(f"[dim]{n} change(s): indexing again[/]"))


class _Runs:
    """One indexing run per call, each with its own progress display; ``again`` reports a failing run and
    lets a watch go on."""

    def __init__(self, paths, index, icfg: IndexConfig, as_json: bool, yes: bool, version_of, wait: bool):
        self.paths, self.index, self.icfg, self.as_json = paths, index, icfg, as_json
        self.yes, self.version_of, self.wait = yes, version_of, wait
        self.reporter: RichReporter | None = None
        self.fill_batches: int | None = None  # --progressive: full-model batches now (None: all)
        self.fill_first: list[str] | None = None  # --progressive: path globs filled first
        self.models = models()  # handed in (click's context object), kept for a watch's later runs

    def confirm(self, message: str) -> bool:
        self.reporter.close()
        err.print(message, soft_wrap=True)
        return (
            self.yes or not sys.stdin.isatty() or not interactive(self.as_json) or typer.confirm("Go on?", default=True)
        )

    def __call__(self, full: bool = False) -> None:

        self.reporter = RichReporter(interactive(self.as_json))
        try:
            summary = self.models.index(
                self.paths,
                self.index,
                cfg=self.icfg,
                full=full,
                reporter=self.reporter,
                version_of=self.version_of,
                confirm=self.confirm,
                wait=self.wait,
                max_fill_batches=self.fill_batches,
                fill_first=self.fill_first,
                parse_workers=os.cpu_count() or 1,
            )
        finally:
            self.reporter.close()
        _report(summary, self.as_json)

    def again(self) -> None:
        try:
            self()
        except RagkitError as exc:
            fail(exc)


def _report(s, as_json: bool) -> None:
    if as_json:
        print_json(s.to_dict())
        return
    secs = s.seconds.get("total", 0.0)
    console.print(
        f"[bold green]Indexed[/] {s.documents} document(s), {s.chunks} chunk(s) in {secs:.1f} s "
        f"→ [bold]{s.index_dir}[/]"
    )
    console.print(
        f"new {s.new} · changed {s.changed} · unchanged {s.unchanged} · removed {s.removed} · "
        f"skipped {s.skipped}"
        + (f" · {s.pages_ocr} page(s) read by OCR" if s.pages_ocr else "")
        + (f" · {s.pages_without_text} scanned page(s) not read" if s.pages_without_text else "")
        + f"   (index: {s.total_documents} documents, {s.total_chunks} chunks)",
        style="dim",
    )
    if s.fill:
        f = s.fill
        state = "switched to the full model" if f["switched"] else "run it again to go on (queries use both meanwhile)"
        console.print(
            f"full model's vectors: {f['filled']:,} of {f['total']:,} chunks, {f['batches']} batch(es); {state}"
        )
