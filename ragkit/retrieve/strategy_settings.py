"""The strategies' names and their own knobs (``[query.NAME]`` in ragkit.toml; ``QueryConfig.of(Settings)``
reads them).

They stand apart from the strategies' code: ``QueryConfig`` (ragkit/retrieve/config.py) holds one ``Settings`` of
each strategy that has them and checks a strategy's name, while a strategy reads its ``QueryConfig`` through the
``SearchContext`` it is called with (ragkit/retrieve/context.py). With the knobs in the strategy modules the
three imported one another round a circle. Each strategy module still names its own as ``Settings``
(``hippo.Settings``), and the registry (ragkit/retrieve/strategies/__init__.py) checks that it lists these names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from ragkit.errors import BadQuery
from ragkit.validate import between, validate

AUTO = "auto"  # the router picks one of the strategies per query (ragkit/retrieve/router.py)


@dataclass(frozen=True)
class HippoSettings:
    """``[query.hippo]``: the walk and its weight in the fusion."""

    damping: float = field(default=0.85, metadata=between(0.0, 1.0))  # personalized PageRank damping
    vector_seeds: int = field(default=3, metadata=between(0))  # nearest entity vectors added to the seeds
    passage_share: float = field(default=0.0, metadata=between(0.0, 1.0))  # reset mass on top dense chunks
    graph_weight: float = field(default=0.25, metadata=between(0.0, 1.0))  # the PPR list's weight in the fusion

    def __post_init__(self) -> None:
        validate(self, BadQuery, "hippo.")


@dataclass(frozen=True)
class LocalSettings:
    """``[query.local]``: the neighbourhood and its weight in the fusion."""

    max_hops: int = field(default=2, metadata=between(1))  # relation hops around the query entities
    vector_seeds: int = field(default=3, metadata=between(0))  # nearest entity vectors added to the seeds
    graph_weight: float = field(default=0.25, metadata=between(0.0, 1.0))  # the graph list's weight in the fusion

    def __post_init__(self) -> None:
        validate(self, BadQuery, "local.")


@dataclass(frozen=True)
class LightSettings:
    """``[query.light]``: the two sides and their weight in the fusion."""

    entity_weight: float = field(default=0.6, metadata=between(0.0, 1.0))  # entity side vs relation side
    graph_weight: float = field(default=0.25, metadata=between(0.0, 1.0))  # the graph list's weight in the fusion

    def __post_init__(self) -> None:
        validate(self, BadQuery, "light.")


@dataclass(frozen=True)
class HierarchicalSettings:
    """``[query.hierarchical]``: how the tree is searched."""

    mode: Literal["collapsed", "tree"] = "collapsed"  # nodes and chunks in one ranking | levels, then children
    nodes: int = field(default=5, metadata=between(1))  # nodes kept per level (tree), twice this over all (collapsed)
    children: int = field(default=3, metadata=between(1))  # best children a node expands to
    discount: float = field(default=0.8, metadata=between(0.0, 1.0))  # tree mode: a child's score = node's × this

    def __post_init__(self) -> None:
        validate(self, BadQuery, "hierarchical.")


# every strategy by name, in the registry's order, with its knobs (None: it has none)
SETTINGS: dict[str, type[Any] | None] = {
    "naive": None,
    "lexical": None,
    "hybrid": None,
    "hippo": HippoSettings,
    "global": None,
    "local": LocalSettings,
    "light": LightSettings,
    "hierarchical": HierarchicalSettings,
}
