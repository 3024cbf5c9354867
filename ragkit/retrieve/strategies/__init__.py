"""Strategy registry: a new strategy is one module plus one line here."""

from __future__ import annotations

from collections.abc import Callable

from ragkit.records import Hit
from ragkit.retrieve.context import SearchContext
from ragkit.retrieve.strategies import global_, hierarchical, hippo, hybrid, lexical, light, local, naive

Strategy = Callable[[SearchContext], list[Hit]]

STRATEGIES: dict[str, Strategy] = {
    "naive": naive.search,
    "lexical": lexical.search,
    "hybrid": hybrid.search,
    "hippo": hippo.search,
    "global": global_.search,
    "local": local.search,
    "light": light.search,
    "hierarchical": hierarchical.search,
}
