"""Strategy registry: a new strategy is one module plus one line here and one in ``strategy_settings.SETTINGS``.

A strategy module has ``search(ctx) -> list[Hit]`` and, when it has knobs of its own, a frozen dataclass
``Settings`` (``[query.NAME]`` in ragkit.toml; ``QueryConfig.of(Settings)`` reads them), defined with the
strategies' names in ragkit/retrieve/strategy_settings.py, so that ``QueryConfig`` checks them without importing
the strategies (tests/test_retrieve_circle.py: the two lists agree). The CLI's ``--strategy`` choices,
ragkit.toml, HTTP and MCP take the names from here.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragkit.records import Hit
from ragkit.retrieve.strategies import global_, hierarchical, hippo, hybrid, lexical, light, local, naive

if TYPE_CHECKING:
    from ragkit.retrieve.context import SearchContext


@dataclass(frozen=True)
class Strategy:
    search: Callable[[SearchContext], list[Hit]]
    settings: type[Any] | None = None  # the strategy's own knobs

    @property
    def summary(self) -> str:
        """The first line of the strategy module's docstring."""
        doc = sys.modules[self.search.__module__].__doc__ or ""
        return doc.strip().split("\n")[0]


STRATEGIES: dict[str, Strategy] = {
    "naive": Strategy(naive.search),
    "lexical": Strategy(lexical.search),
    "hybrid": Strategy(hybrid.search),
    "hippo": Strategy(hippo.search, hippo.Settings),
    "global": Strategy(global_.search),
    "local": Strategy(local.search, local.Settings),
    "light": Strategy(light.search, light.Settings),
    "hierarchical": Strategy(hierarchical.search, hierarchical.Settings),
}
