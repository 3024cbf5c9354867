"""``Index``: one open index and every verb on it; ``ragkit.open()`` gives one, ``ragkit.index()`` writes one.

Modelled on sqlite-utils' ``Database`` (one object per store, opened from a path, whose methods read and write it;
a context manager that closes it) and txtai's ``Embeddings`` (index, search and load as methods of one object,
its models handed in or loaded from its settings): an ``Index`` holds one ``IndexReader`` and its query settings
(``ragkit.toml``, read once); keyword arguments override ``QueryConfig`` fields (``k``, ``strategy``, ``filters``,
``answer_mode``, …) for one call, or a whole ``QueryConfig`` is passed as ``cfg``. The CLI, the server, MCP,
``ragkit eval`` and the scripts all go through it; the modules beside this one are its private parts.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import fields
from pathlib import Path
from typing import Any

from ragkit import contents
from ragkit.config import IndexConfig, QueryConfig, layered, load_config, override, resolve_index_dir
from ragkit.embed import Embedder
from ragkit.errors import BadQuery
from ragkit.events import Reporter
from ragkit.learn import abstain as abstaining
from ragkit.learn import ranker as ranking
from ragkit.library import asking, learning, writing
from ragkit.library.results import Answered
from ragkit.reader import IndexReader
from ragkit.records import IndexSummary, QueryResult
from ragkit.store import mirror
from ragkit.store.check import Report

INDEX_SETTINGS = frozenset(f.name for f in fields(IndexConfig))


def _settings(cfg, allowed: frozenset[str], given: dict[str, Any], what: str):
    unknown = sorted(set(given) - allowed)
    if unknown:
        raise BadQuery(
            f"unknown {what} setting{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}",
            hint=f"{what.capitalize()} settings are the fields of ragkit.config.{type(cfg).__name__}.",
        )
    return override(cfg, **given)


class Index:
    """An open index (``ragkit.open``). It follows the newest committed run: an index another process re-indexes
    is read at its new state, reopened once inside the call. ``embedder``, ``full_embedder`` (a progressive
    index's full model) and ``generator`` (what writes answers and the LLM planner's plans) may be handed in
    instead of loaded from the settings. Close it (``close()``, or ``with ragkit.open(...) as ix``) to let its
    models go."""

    def __init__(
        self,
        where: str | Path | None = None,
        *,
        embedder: Embedder | None = None,
        embed_model: str | None = None,
        full_embedder: Embedder | None = None,
        generator: Any = None,
        settings: QueryConfig | None = None,
    ):
        self.location = str(where) if where is not None and mirror.is_uri(str(where)) else None
        self.path = resolve_index_dir(where)
        self._reader: IndexReader | None = asking.open_index(where, embedder, embed_model, full_embedder, generator)
        self.settings = settings if settings is not None else load_config(index_dir=self.path)[1]

    def __repr__(self) -> str:
        return f"ragkit.Index({self.location or str(self.path)!r})"

    def __enter__(self) -> Index:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        """Let the index's models and cached tables go (now, not when the garbage collector finds the reader's
        own references); a closed index answers nothing (``BadQuery``). Not thread-safe, as an index is not."""
        if self._reader is not None:
            self._reader.__dict__.clear()
        self._reader = None

    @property
    def closed(self) -> bool:
        return self._reader is None

    @property
    def reader(self) -> IndexReader:
        """The committed run this index reads (the store, its manifest and its models)."""
        if self._reader is None:
            raise BadQuery(f"{self!r} is closed", hint="ragkit.open() it again")
        return self._reader

    @property
    def generator(self) -> Any:
        """The generator handed in (``ragkit.open(..., generator=)``), else None: the model the settings name
        loads. The reader holds it, so the answer and the LLM planner write with the same one."""
        return self.reader.given_generator

    @generator.setter
    def generator(self, generator: Any) -> None:
        self.reader.given_generator = generator

    def follow(self) -> bool:
        """Read the newest committed run if one was committed since (True: reopened; handed-in models kept)."""
        return self.reader.follow()

    def config(self, cfg: QueryConfig | None = None, **settings: Any) -> QueryConfig:
        """The query settings (``cfg``, else the index's ``ragkit.toml``) with ``settings`` over them, as the
        CLI's flags and a server's request fields (``ragkit.config.layered``): ``filters`` add to the file's
        (a whole ``cfg`` replaces them)."""
        return layered(cfg if cfg is not None else self.settings, settings)

    # asking
    def retrieve(self, text: str, cfg: QueryConfig | None = None, limit: int | None = None, **settings: Any):
        """Chunk hits for ``text`` before passage assembly: ``(hits, plan, timings_ms)`` (``ragkit eval``)."""
        return asking.retrieve(self.reader, text, self.config(cfg, **settings), limit)

    def ask(
        self,
        text: str,
        cfg: QueryConfig | None = None,
        on_text: Callable[[str], None] | None = None,
        *,
        passages_ready: Callable[[QueryResult], None] | None = None,
        token: str | None = None,
        source: str = "python",
        **settings: Any,
    ) -> Answered:
        """One question through the whole pipeline: the passages, the answer when the settings ask for one
        (streamed to ``on_text``), and the query kept in the index's log for ``feedback`` when the settings'
        ``log`` is on (the CLI's and the server's).
        ``passages_ready(result)`` runs between passages and answer (a server sends the passages first)."""
        result, failed = asking.ask(
            self.reader,
            text,
            self.config(cfg, **settings),
            on_text,
            passages_ready=passages_ready,
            token=token,
            source=source,
            generator=self.generator,
        )
        return Answered(result, failed)

    def query(self, text: str, cfg: QueryConfig | None = None, *, log: bool = False, **settings: Any) -> QueryResult:
        """The passages for ``text`` (``ragkit query``); with ``log=True`` kept in the index's log, so that
        ``feedback`` can name them (the CLI and the server keep every query)."""
        return self.ask(text, cfg, answer=False, log=log, **settings).result

    def answer(
        self,
        text: str,
        on_text: Callable[[str], None] | None = None,
        *,
        cfg: QueryConfig | None = None,
        log: bool = False,
        **settings: Any,
    ) -> Answered:
        """The passages and the answer (``ragkit query --answer``): ``.text``, ``.answer`` (an ``Answer``) or,
        when none could be written, ``.error``; ``on_text`` receives the answer as it is written; ``log`` as
        ``query``'s."""
        return self.ask(text, cfg, on_text, answer=True, log=log, **settings)

    def answer_for(self, result: QueryResult, cfg: QueryConfig | None = None) -> Answered:
        """The answer to a query already retrieved (its passages as they are)."""
        failed = asking.answer_into(result, self.config(cfg), reader=self.reader, generator=self.generator)
        return Answered(result, failed)

    def log(
        self, result: QueryResult, cfg: QueryConfig | None = None, *, token: str | None = None, source: str = "python"
    ) -> bool:
        """Keep a query already asked (``result``) in the index's log, so that ``feedback`` can name its passages;
        False when the settings' ``log`` is off or the index cannot be written here."""
        return asking.log_query(self.reader, result, self.config(cfg), token=token, source=source)

    def warm(self) -> None:
        """Load the embedding model and what a first query needs (a server does this before it listens)."""
        asking.warm(self.reader)

    # feedback and learning
    def feedback(
        self,
        query_id: str,
        *,
        good: bool | None = None,
        grade: int | str | None = None,
        rank: int | None = None,
        kind: str = "explicit",
        source: str = "python",
        token: str | None = None,
        readable: tuple[str, ...] | None = None,
    ) -> dict[str, Any]:
        """Rate passage ``rank`` of a logged query (its answer when ``rank`` is None): ``good=True``/``False``
        or a ``grade`` 0–3 ("good"/"bad" too), ``kind`` "open" for a passage opened after it (``ragkit
        feedback``). Returns the event kept."""
        if good is not None and grade is not None:
            raise BadQuery(
                "say good=True, good=False or a grade 0-3, not both", hint="ix.feedback(query_id, good=True)"
            )
        if good is None and grade is None and source == "python":
            raise BadQuery("say good=True, good=False or a grade 0-3", hint="ix.feedback(query_id, good=True)")
        chosen = grade if good is None else "good" if good else "bad"
        return learning.feedback(
            self.path, query_id, rank, chosen, kind=kind, source=source, token=token, readable=readable
        )

    def feedback_file(self, path: str | Path) -> int:
        """Bulk feedback from JSON lines (``{"query_id", "rank", "grade" | "good"}``); how many were recorded."""
        return learning.feedback_file(self.path, Path(path))

    def export_feedback(self, out: str | Path) -> int:
        """Every logged query and feedback event into ``out`` (JSON lines); how many."""
        return learning.feedback_export(self.path, Path(out))

    def flush_log(self) -> int:
        """An index on object storage: upload the queries and ratings logged here and not yet uploaded."""
        return learning.flush_log(self.path)

    def open_passage(
        self,
        query_id: str,
        rank: int,
        *,
        source: str = "python",
        token: str | None = None,
        readable: tuple[str, ...] | None = None,
    ) -> dict[str, Any]:
        """The section passage ``rank`` of a logged query comes from, kept in the log as a click on it."""
        return learning.open_passage(self.reader, query_id, rank, source=source, token=token, readable=readable)

    def learn(
        self,
        labels: Iterable[str | Path] = (),
        *,
        dry_run: bool = False,
        min_queries: int = ranking.MIN_QUERIES,
        min_answers: int = abstaining.MIN_ANSWERS,
    ) -> list:
        """Fit what the index learns from its feedback (``ragkit learn``): each outcome says what was adopted."""
        return learning.learn(
            self.reader,
            tuple(Path(p) for p in labels),
            dry_run=dry_run,
            min_queries=min_queries,
            min_answers=min_answers,
        )

    def unlearn(self) -> int:
        """Drop the adopted rankers and learned answer thresholds; how many scopes had either."""
        return learning.unlearn(self.reader)

    # looking at it
    def stats(self, readable: tuple[str, ...] | None = None) -> dict[str, Any]:
        """What the index holds and what it costs on disk (``ragkit stats --json``)."""
        return contents.stats(self.reader, readable)

    def learned(self) -> dict[str, Any]:
        """The learned rankers and answer thresholds in use, per scope."""
        return contents.learned(self.reader)

    def documents(
        self,
        limit: int = 50,
        offset: int = 0,
        *,
        readable: tuple[str, ...] | None = None,
        filters: dict[str, str] | None = None,
        **more: str,
    ) -> dict[str, Any]:
        """The documents (``filters`` as ``--filter``: ``doc_type="policy"``): ``{"total", "offset", "documents"}``."""
        return contents.documents(self.reader, {**(filters or {}), **more}, readable, limit=limit, offset=offset)

    def document(
        self, key: str, readable: tuple[str, ...] | None = None, start: int | None = None, end: int | None = None
    ) -> dict[str, Any]:
        """One document by path or id, with its sections (``ragkit show``), or lines ``start``–``end`` of it."""
        return contents.document(self.reader, key, readable, start, end)

    def outline(self, key: str, readable: tuple[str, ...] | None = None) -> dict[str, Any]:
        """A document's sections."""
        return contents.outline(self.reader, key, readable)

    def section(self, section_id: str, readable: tuple[str, ...] | None = None) -> dict[str, Any]:
        """A section's place and text."""
        return contents.section(self.reader, section_id, readable)

    def entity(self, name: str, limit: int = 10) -> dict[str, Any]:
        """An entity, its relations and the chunks that mention it (``ragkit show --entity``)."""
        return contents.entity(self.reader, name, limit)

    def graph_stats(self) -> dict[str, Any]:
        """The evidence and entity graphs' counts (``ragkit graph stats``)."""
        return contents.graph_stats(self.reader)

    def export_graph(self, out: str | Path, fmt: str = "graphml") -> tuple[int, int]:
        """The evidence graph into ``out``; (nodes, edges)."""
        return contents.export_graph(self.reader, Path(out), fmt)

    def page_image(self, key: str, number: int, mark: str = "", readable: tuple[str, ...] | None = None) -> bytes:
        """Page ``number`` of a PDF document as PNG, the text ``mark`` marked on it."""
        return asking.page_image(self.reader, key, number, mark, readable)

    # writing
    def add(self, paths: Iterable[str | Path], **options: Any) -> IndexSummary:
        """Index ``paths`` into this index (only what changed), then read the new run (``ragkit.index``'s
        options)."""
        given = self.reader._given_embedder
        if given is not None:  # the embedder handed in writes the new chunks' vectors too
            options.setdefault("embedder_factory", lambda cfg: given)
        summary = index(paths, self.path, **options)
        self.follow()
        return summary


def open(where: str | Path | None = None, **models: Any) -> Index:  # noqa: A001 (ragkit.open)
    """The index named ``where``: a name (found as ``ragkit`` finds it: ``indexes/NAME`` in the directory you
    stand in or above it, else under ``$RAGKIT_HOME``), a folder, or an ``s3://`` URI; None: the default one.
    Raises ``IndexNotFound`` when there is none, ``EmbedderMismatch`` when ``embedder``/``embed_model`` is not
    the one the index was built with.
    ``models``: ``Index``'s keywords (``embedder``, ``embed_model``, ``full_embedder``, ``generator``,
    ``settings``)."""
    return Index(where, **models)


def index(
    paths: Iterable[str | Path],
    where: str | Path | None = None,
    *,
    cfg: IndexConfig | None = None,
    full: bool = False,
    reporter: Reporter | None = None,
    embedder_factory: Callable[[IndexConfig], Embedder] | None = None,
    **options: Any,
) -> IndexSummary:
    """Index ``paths`` (files or folders) into ``where`` (as ``open``; created when new), only what changed
    unless ``full`` (``ragkit index``). ``cfg``: the index settings (default: the index's ``ragkit.toml``);
    ``options``: ``IndexConfig`` fields over them, and the run's own (``version_of``, ``wait``,
    ``parse_workers``, ``max_fill_batches``, ``fill_batch``, ``fill_first``, ``generator_factory``, ``confirm``; see
    ragkit/library/writing.py). ``embedder_factory(cfg)`` builds the embedder (default: the bundled models)."""
    run = {k: options.pop(k) for k in list(options) if k in writing.RUN_OPTIONS}
    if cfg is None:
        cfg = load_config(index_dir=resolve_index_dir(where))[0]
    cfg = _settings(cfg, INDEX_SETTINGS, options, "index")
    return writing.index(
        list(paths), where, cfg, full=full, reporter=reporter, embedder_factory=embedder_factory, **run
    )


def watch(
    paths: list[Path], where: str | Path | None, run: Callable[[], None], on_batch: Callable[[int], None] | None = None
) -> None:
    """Call ``run()`` after every batch of changes under ``paths`` until interrupted (``ragkit index --watch``)."""
    writing.watch(paths, where, run, on_batch=on_batch)


def check(where: str | Path | None, repair: bool = False, on_wait: Callable[[str], None] | None = None) -> Report:
    """Verify an index (``ragkit check``), one that cannot be opened too; with ``repair``, fix what can be fixed
    first (waiting for a running indexer, told through ``on_wait``)."""
    return contents.check(where, repair, on_wait)


def flush_log(where: str | Path | None) -> int:
    """An index on object storage: upload the queries and ratings logged on this machine and not yet uploaded
    (a server does when it stops, without opening the index); a local index: 0."""
    return learning.flush_log(resolve_index_dir(where))
