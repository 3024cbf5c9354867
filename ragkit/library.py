"""ragkit in Python: ``ragkit.open()`` gives an ``Index``, and its methods do what the commands do.

    import ragkit

    ragkit.index(["docs/"], "handbook")            # like `ragkit index docs/ --index handbook`
    ix = ragkit.open("handbook")                    # a name, a folder or an s3:// URI
    result = ix.query("How much overtime may I work?", k=5)
    for p in result.passages:
        print(p.rank, p.path, p.section, p.location)
    print(ix.answer("How much overtime may I work?").answer.text)
    ix.feedback(result.query_id, good=True, rank=1)

Modelled on sqlite-utils' ``Database`` (one object per store, opened from a path, whose methods read and write it)
and txtai's ``Embeddings`` (index, search and load as methods of one object with keyword settings): an ``Index``
holds one ``IndexReader`` and its ``ragkit.toml`` settings; keyword arguments override ``QueryConfig`` fields
(``k``, ``strategy``, ``filters``, ``answer_mode``, …) for one call. Results are the records the CLI, the
server and MCP print (``QueryResult``, ``Answer``, ``IndexSummary``), and errors ``ragkit.errors`` types.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import fields
from pathlib import Path
from typing import Any

from ragkit import api, measure
from ragkit.config import IndexConfig, QueryConfig, load_config, override, resolve_index_dir
from ragkit.errors import BadQuery
from ragkit.events import Reporter
from ragkit.records import IndexSummary, QueryResult
from ragkit.store import mirror

QUERY_SETTINGS = frozenset(f.name for f in fields(QueryConfig))
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
    """An open index (``ragkit.open``). Its methods follow the newest committed run (an index another process
    re-indexes is read at its new state); the store is opened per call, so there is nothing to close."""

    def __init__(self, where: str | Path | None = None, *, embed_model: str | None = None):
        self.location = str(where) if where is not None and mirror.is_uri(str(where)) else None
        self.path = resolve_index_dir(where)
        self.reader = api.open_index(where, embed_model=embed_model)
        _, self.settings = load_config(index_dir=self.path)

    def __repr__(self) -> str:
        return f"ragkit.Index({self.location or str(self.path)!r})"

    def config(self, **settings: Any) -> QueryConfig:
        """The index's query settings (``ragkit.toml``) with ``settings`` applied (checked as the CLI's)."""
        return _settings(self.settings, QUERY_SETTINGS, settings, "query")

    def query(self, text: str, **settings: Any) -> QueryResult:
        """The passages for ``text`` (``ragkit query``); kept in the index's log for ``feedback``."""
        result, _ = api.ask(self.reader, text, self.config(answer=False, **settings), source="python")
        return result

    def answer(self, text: str, on_text: Callable[[str], None] | None = None, **settings: Any) -> QueryResult:
        """The passages and the answer (``ragkit query --answer``): ``result.answer`` (an ``Answer``), or why
        there is none in ``result.answer_error``; ``on_text`` receives the answer as it is written."""
        result, _ = api.ask(self.reader, text, self.config(answer=True, **settings), on_text, source="python")
        return result

    def feedback(
        self, query_id: str, *, good: bool | None = None, grade: int | None = None, rank: int | None = None
    ) -> dict[str, Any]:
        """Rate passage ``rank`` of a logged query (its answer when ``rank`` is None): ``good=True``/``False``
        or a ``grade`` 0–3 (``ragkit feedback``). Returns the event kept."""
        if (good is None) == (grade is None):
            raise BadQuery("say good=True, good=False or a grade 0-3", hint="ix.feedback(query_id, good=True)")
        return api.feedback(self.path, query_id, rank, grade if grade is not None else "good" if good else "bad",
                            source="python")  # fmt: skip

    def learn(self, labels: Iterable[str | Path] = (), *, dry_run: bool = False) -> list:
        """Fit what the index learns from its feedback (``ragkit learn``): each outcome says what was adopted."""
        return api.learn(self.reader, tuple(Path(p) for p in labels), dry_run=dry_run)

    def stats(self) -> dict[str, Any]:
        """What the index holds and what it costs on disk (``ragkit stats --json``)."""
        return api.stats(self.reader)

    def documents(self, limit: int = 50, offset: int = 0, **filters: str) -> dict[str, Any]:
        """The documents (``filters`` as ``--filter``: ``doc_type="policy"``): ``{"total", "offset", "documents"}``."""
        return api.documents(self.reader, filters, limit=limit, offset=offset)

    def document(self, key: str) -> dict[str, Any]:
        """One document by path or id, with its sections (``ragkit show``)."""
        return api.document(self.reader, key)


def open(where: str | Path | None = None, *, embed_model: str | None = None) -> Index:  # noqa: A001 (ragkit.open)
    """The index named ``where``: a name (found as ``ragkit`` finds it: ``indexes/NAME`` in the directory you
    stand in or above it, else under ``$RAGKIT_HOME``), a folder, or an ``s3://`` URI; None: the default one.
    Raises ``IndexNotFound`` when there is none."""
    return Index(where, embed_model=embed_model)


def index(
    paths: Iterable[str | Path],
    where: str | Path | None = None,
    *,
    full: bool = False,
    reporter: Reporter | None = None,
    **settings: Any,
) -> IndexSummary:
    """Index ``paths`` (files or folders) into ``where`` (as ``open``; created when new), only what changed
    unless ``full`` (``ragkit index``). ``settings``: ``IndexConfig`` fields over the index's ``ragkit.toml``."""
    target = resolve_index_dir(where)
    base, _ = load_config(index_dir=target)
    cfg = _settings(base, INDEX_SETTINGS, settings, "index")
    return api.index(list(paths), where, cfg, full=full, reporter=reporter)


def evaluate(
    dataset: str | Path, strategies: Iterable[str] = ("auto",), where: str | Path | None = None, *, k: int = 10
) -> dict[str, Any]:
    """Retrieval quality on a labelled BEIR folder (``ragkit eval``): per strategy nDCG@10, recall@k, MRR and
    latency; ``where``: the index of its corpus (built when missing; a temporary one by default)."""
    return measure.evaluate(dataset, list(strategies), index_dir=resolve_index_dir(where) if where else None, k=k)
