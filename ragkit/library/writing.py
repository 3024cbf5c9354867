"""Writing an index (private to ``Index``): a run over paths, a progressive index's fill, and watching folders."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ragkit.config import IndexConfig, resolve_index_dir
from ragkit.embed import Embedder, load_embedder, normalize_spec
from ragkit.events import Reporter
from ragkit.ingest import watch as watching
from ragkit.ingest.fill import run_fill
from ragkit.ingest.pipeline import run_index
from ragkit.records import IndexSummary

# the run's own options beside its IndexConfig (``ragkit.index(..., wait=True)``)
RUN_OPTIONS = frozenset(
    (
        "version_of",
        "generator_factory",
        "confirm",
        "wait",
        "max_fill_batches",
        "fill_batch",
        "fill_first",
        "parse_workers",
    )
)


def _default_embedder_factory(cfg: IndexConfig) -> Embedder:
    return load_embedder(cfg.embed_model, cfg.embed_batch_size, cfg.encoder, keys=cfg.api_keys)


def index(
    paths: list[str | Path],
    index_dir: str | Path | None = None,
    cfg: IndexConfig | None = None,
    *,
    full: bool = False,
    reporter: Reporter | None = None,
    embedder_factory: Callable[[IndexConfig], Embedder] | None = None,
    version_of: str | None = None,
    generator_factory: Callable[[IndexConfig], Any] | None = None,
    confirm: Callable[[str], bool] | None = None,
    wait: bool = False,
    max_fill_batches: int | None = None,
    fill_batch: int | None = None,
    fill_first: list[str] | None = None,
    parse_workers: int = 1,
) -> IndexSummary:
    """Index ``paths`` into ``index_dir`` (a name under ./indexes, a folder, or an s3:// URI).

    Args:
        full: rebuild everything instead of only what changed.
        reporter: receives progress and warnings (silent by default).
        embedder_factory: builds the embedder for the run's config (default: the bundled models).
        version_of: these documents supersede this path or id.
        generator_factory: loads the GGUF model for ``extract = "llm"`` / ``summaries = "llm"``.
        confirm: ``confirm(message)`` approves an LLM extraction after its time estimate.
        wait: wait for another run on the same index instead of raising ``IndexBusy``.
        parse_workers: processes that parse and chunk a run of many files (the CLI: every core). Each is a
            spawned process that imports the caller's main module: from a script, call this under
            ``if __name__ == "__main__":``. Only with the default ``embedder_factory`` (workers load the model).
        max_fill_batches: a progressive index (``cfg.progressive``) fills in at most this many batches of the
            full model's vectors after the run (None: all; 0: none now, ``ragkit index`` again goes on).
        fill_batch: chunks per batch of the fill, each committed (None: ``ragkit.ingest.fill.BATCH``, 4,096).
        fill_first: path globs whose chunks get their full vectors before the rest's.

    Returns:
        The run's ``IndexSummary`` (counts new/changed/unchanged/removed/skipped, seconds per phase, warnings).
    """
    cfg = cfg or IndexConfig()
    factory = embedder_factory or _default_embedder_factory
    where = resolve_index_dir(index_dir)
    summary = run_index(
        [Path(p) for p in paths],
        where,
        replace(cfg, embed_model=normalize_spec(cfg.embed_model)),
        factory,
        full=full,
        reporter=reporter,
        version_of=version_of,
        generator_factory=generator_factory,
        confirm=confirm,
        wait=wait,
        parse_workers=parse_workers if embedder_factory is None else 1,
    )
    if cfg.progressive and max_fill_batches != 0:  # the full model's vectors, batch by batch, each committed

        def full_model(spec: dict[str, Any]) -> Embedder:
            return factory(replace(cfg, embed_model=spec["spec"], encoder=spec["encoder"]))

        filled = run_fill(
            where, reporter, fill_batch, embedder_factory=full_model, max_batches=max_fill_batches, first=fill_first
        )
        summary.fill = filled.to_dict()
    return summary


def watch(
    paths: list[Path],
    index_dir: str | Path | None,
    run: Callable[[], None],
    on_batch: Callable[[int], None] | None = None,
) -> None:
    """Call ``run()`` after every batch of changes under ``paths`` until interrupted (``ragkit index --watch``)."""
    watching.watch(paths, resolve_index_dir(index_dir), run, on_batch=on_batch)
