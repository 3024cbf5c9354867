"""``Models``: the models a caller hands the CLI instead of the ones the settings name.

An application embedding the CLI, or a test, passes one as click's context object
(``app(obj=Models(embedder=...))``, typer's ``CliRunner().invoke(app, args, obj=Models(...))``); every command
that opens or writes an index goes through ``Models.open`` / ``Models.index``, which hand them to
``ragkit.open`` and ``ragkit.index``. ``Models()`` hands nothing in: the settings' models load as usual."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragkit.config import IndexConfig
from ragkit.embed import Embedder
from ragkit.library import engine
from ragkit.records import IndexSummary


@dataclass(frozen=True)
class Models:
    """``embedder``: embeds the questions, and every vector an indexing run writes (a progressive index's fill
    too); ``full_embedder``: a progressive index's full model for its questions; ``generator``: writes answers
    and the LLM planner's plans. None: loaded from the settings."""

    embedder: Embedder | None = None
    full_embedder: Embedder | None = None
    generator: Any = None

    def open(self, where: str | Path | None = None, **kw: Any) -> engine.Index:
        """``ragkit.open(where, **kw)`` with these models handed in."""
        if self.embedder is not None:
            kw.setdefault("embedder", self.embedder)
        if self.full_embedder is not None:
            kw.setdefault("full_embedder", self.full_embedder)
        if self.generator is not None:
            kw.setdefault("generator", self.generator)
        return engine.open(where, **kw)

    def index(self, paths: Iterable[str | Path], where: str | Path | None = None, **kw: Any) -> IndexSummary:
        """``ragkit.index(paths, where, **kw)`` with this embedder handed in (``embedder_factory``)."""
        if self.embedder_factory is not None:
            kw.setdefault("embedder_factory", self.embedder_factory)
        return engine.index(paths, where, **kw)

    @property
    def embedder_factory(self) -> Callable[[IndexConfig], Embedder] | None:
        """``embedder_factory`` for ``ragkit.index`` and ``ragkit.evaluate``: this embedder whatever the run's
        config; None when none was handed in."""
        embedder = self.embedder
        return None if embedder is None else (lambda cfg: embedder)
