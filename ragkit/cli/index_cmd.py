"""ragkit index PATH..."""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from ragkit.cli.common import RichReporter, console, err, fail, handle_errors, interactive, print_json
from ragkit.errors import RagkitError


@handle_errors
def index_cmd(
    paths: list[Path] = typer.Argument(..., help="Folders or files to index."),
    index: str | None = typer.Option(None, "--index", "-i", help="Index name (under ./indexes) or directory."),
    include: list[str] | None = typer.Option(None, "--include", help="Glob of files to index (repeatable)."),
    exclude: list[str] | None = typer.Option(None, "--exclude", help="Glob of files to skip (repeatable)."),
    hidden: bool = typer.Option(False, "--hidden", help="Also index hidden files and folders."),
    full: bool = typer.Option(False, "--full", help="Rebuild everything instead of only what changed."),
    doc_type: str | None = typer.Option(
        None, "--doc-type", help="doc_type for documents whose front matter names none."
    ),
    collection: str | None = typer.Option(None, "--collection", help="Collection tag for these documents."),
    embed_model: str | None = typer.Option(
        None,
        "--embed-model",
        help="auto (by the documents' language), bundled:all-MiniLM-L6-v2, bundled:multilingual-e5-small or a local sentence-transformers folder (a new index, or with --full).",
    ),
    chunk_tokens: int | None = typer.Option(None, "--chunk-tokens", help="Upper bound of tokens per chunk."),
    language: str | None = typer.Option(
        None, "--language", help="Full-text stemming language (English, German, …; default: the documents' own)."
    ),
    extract: str | None = typer.Option(None, "--extract", help="Entity/relation extraction: rules | llm | none."),
    summaries: str | None = typer.Option(
        None, "--summaries", help="Community reports and summary-tree nodes: extractive | llm."
    ),
    no_tree: bool = typer.Option(
        False, "--no-tree", help="No summary tree (section/document nodes for --strategy hierarchical)."
    ),
    llm_model: str | None = typer.Option(None, "--llm-model", help="GGUF file for --extract llm / --summaries llm."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask before a long LLM extraction."),
    version_of: str | None = typer.Option(None, "--version-of", help="These documents supersede this path or id."),
    no_wait: bool = typer.Option(
        False, "--no-wait", help="Exit 9 at once when another run holds the index (default: wait for it)."
    ),
    max_file_size: float | None = typer.Option(
        None, "--max-file-size", help="Skip files larger than this many MB (default 50)."
    ),
    engine: str | None = typer.Option(
        None, "--engine", help="Parse, chunk and embed here (local, default) or on Ray (ray)."
    ),
    ray_address: str | None = typer.Option(
        None, "--ray-address", help="--engine ray: the cluster to join (auto, ray://host:10001); default: a local Ray."
    ),
    ray_workers: int | None = typer.Option(
        None, "--ray-workers", help="--engine ray: worker actors (default: every CPU)."
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the run summary as JSON."),
    watch: bool = typer.Option(False, "--watch", help="Stay up and index again whenever files change (Ctrl-C stops)."),
):
    """Index documents: parse, chunk, embed and store (only what changed)."""
    from ragkit import api
    from ragkit.config import load_config, override

    icfg, _ = load_config()
    icfg = override(
        icfg,
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
        llm_model=llm_model,
        tree=False if no_tree else None,
        max_file_size_mb=max_file_size,
        engine=engine,
        ray_address=ray_address,
        ray_workers=ray_workers,
    )
    current: list[RichReporter] = []

    def confirm(message: str) -> bool:
        current[-1].close()
        err.print(message, soft_wrap=True)
        return yes or not sys.stdin.isatty() or not interactive(as_json) or typer.confirm("Go on?", default=True)

    def run(full_run: bool = False) -> None:
        current.append(RichReporter(interactive(as_json)))
        try:
            summary = api.index(
                paths,
                index,
                icfg,
                full=full_run,
                reporter=current[-1],
                version_of=version_of,
                confirm=confirm,
                wait=not no_wait,
            )
        finally:
            current[-1].close()
        _report(summary, as_json)

    def run_again() -> None:  # a failing run while watching is reported, and the watch goes on
        try:
            run()
        except RagkitError as exc:
            fail(exc)

    run(full)
    if watch:
        from ragkit.ingest.watch import watch as watch_paths

        err.print(f"[dim]watching {', '.join(map(str, paths))} for changes (Ctrl-C stops)[/]")
        watch_paths(
            paths,
            api.resolve_index_dir(index),
            run_again,
            on_batch=lambda n: err.print(f"[dim]{n} change(s): indexing again[/]"),
        )


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
        + (f" · {s.pages_without_text} PDF page(s) without text" if s.pages_without_text else "")
        + f"   (index: {s.total_documents} documents, {s.total_chunks} chunks)",
        style="dim",
    )
