"""``QueryConfig``: how one query is run. It checks itself when it is built (``ragkit.validate``): a strategy
the registry does not know, a choice outside its ``Literal``, a weight outside 0..1, a rerank mode or feature
the reranker does not know, or a strategy setting that strategy does not have is one ``BadQuery`` naming it.

Each strategy's own knobs are its ``Settings`` (ragkit/retrieve/strategy_settings.py, named so in its module);
``settings`` holds one of each, built from the defaults and what was given (``{"hippo": {"damping": 0.9}}``
in ragkit.toml's ``[query.hippo]``, a flag, or a request), and ``cfg.of(hippo.Settings)`` reads them.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from typing import Any, Literal, TypeVar

from ragkit.errors import BadQuery
from ragkit.rerank.features import DEFAULT_WEIGHTS, FEATURES
from ragkit.retrieve.strategy_settings import AUTO, SETTINGS
from ragkit.store.expr import check_filters
from ragkit.validate import between, choices, validate

S = TypeVar("S")
STRATEGY_NAMES = (AUTO, *SETTINGS)
MODES = tuple(DEFAULT_WEIGHTS)  # rerank weight sets: precision | balanced | recall


@dataclass(frozen=True)
class QueryConfig:
    strategy: str = AUTO  # auto: the router picks per query; or a name in ragkit/retrieve/strategies
    k: int = field(default=10, metadata=between(1))
    alpha: float = field(default=0.5, metadata=between(0.0, 1.0))  # dense weight in the fusion; BM25 gets 1 - alpha
    # dense weight at most for a query in a language the embedding model was not trained on (the bundled MiniLM:
    # English only); None: alpha. German questions over the laws with compounds, top-3: 11 of 36 and 11 of 32
    # held out, against 11 and 9 at 0.5 (scripts/README.md "Retrieval quality")
    foreign_alpha: float | None = field(default=0.3, metadata=between(0.0, 1.0))
    # the index's embedding model's own dense weight for its documents' language instead of alpha where it has one
    # (ragkit/embed: MODEL_ALPHA, multilingual-e5-small on German or Swedish 0.8); an explicit alpha turns it off
    model_alpha: bool = True
    rrf_k: int = field(default=60, metadata=between(1))
    fusion: Literal["convex", "rrf"] = "convex"  # hybrid: score-normalised combination | weighted RRF
    overfetch: int = field(default=4, metadata=between(1))
    budget: int = field(default=1024, metadata=between(1))  # tokens per assembled passage
    syntax: bool = True  # honour "phrase" and -term in the query text
    # features: the structure features (and the learned ranker); cross: then the rerank model; auto: the model
    # when one is configured, or where the shipped reranker is on by default for the query's
    # language (its card, decided by a held-out guard); none: the strategy's order
    rerank: Literal["auto", "none", "features", "cross"] = "auto"
    # the rerank role's spec: a CrossEncoder folder, a .gguf file, a server URL (None: bundled:ragkit-reranker,
    # ragkit's own cross-encoder, where scripts/train_reranker.py wrote it: not shipped, issue 62)
    rerank_model: str | None = None
    rerank_top: int | None = field(default=None, metadata=between(1))  # hits re-scored (None: 10 shipped, 50 other)
    mode: str = "balanced"  # precision | balanced | recall: rerank weights (MODES)
    weights: dict[str, dict[str, float]] = field(default_factory=dict)  # [rerank.<mode>] overrides
    all_versions: bool = False  # include superseded documents
    context_budget: int | None = field(default=None, metadata=between(1))  # pack passages into a context block
    filters: dict[str, str] = field(default_factory=dict)
    decompose: bool = False  # also retrieve sub-queries of comparisons (measured: hurts on hotpotqa-100)
    retry: bool = True  # corrective retry: one broader retrieval when the first results look poor
    links: bool = True  # documents the query or the first passage names by title join the candidates (links.py)
    expand: bool = False  # add related index words (nearest to the query vector) in a BM25 query fused at 0.3
    spelling: bool = True  # correct words unknown to the index to a frequent index word one edit away
    planner: Literal["rules", "llm"] = "rules"  # llm: a GGUF model rewrites and decomposes; rules stay the fallback
    planner_rules: str | None = None  # a copy of ragkit/retrieve/planner_rules.toml to use instead
    model: str | None = None  # the generate role's spec (--answer, --planner llm): a .gguf file or a server URL
    answer: bool = False  # answer the question from the passages
    # extract: quote the sentences that answer (no model); generate: the generate model writes, every sentence is
    # checked; auto: generate only with a model other than the bundled 270M one
    answer_mode: Literal["auto", "extract", "generate"] = "auto"
    max_tokens: int = field(default=512, metadata=between(1))  # answer budget
    temperature: float = field(default=0.3, metadata=between(0.0, 2.0))  # answer sampling temperature
    answer_context: int = field(default=4096, metadata=between(256))  # the model's window for answers
    api_keys: dict[str, str] = field(default_factory=dict)  # server host → the environment variable with its key
    # the collections the query may read (ragkit serve sets them from the request's token: its own, the shared
    # ones and "default"): a prefilter of every search and the scope of every context item; None: all of them
    readable: tuple[str, ...] | None = None
    learned: bool = True  # order candidates by the learned ranker of the query's scope, where one is adopted
    # who encodes the question over a multilingual-e5-small index: ragkit's own query encoder (ragkit/embed/tuned.py)
    # where its held-out guard chose the question's language (auto), always (ragkit) or e5's own (original);
    # passages are always the index's own vectors
    query_encoder: Literal["auto", "original", "ragkit"] = "auto"
    log: bool = True  # keep the query and its passages in the index's event log (feedback names them)
    # each strategy's own settings (ragkit/retrieve/strategies: Settings), given as objects or as dicts of
    # fields; complete after construction: one per strategy that has them
    settings: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        validate(self, BadQuery)
        if self.readable is not None:
            if isinstance(self.readable, str) or not all(isinstance(c, str) and c for c in self.readable):
                raise BadQuery("readable: a list of collection names", hint='e.g. readable = ["team-a", "laws"]')
            object.__setattr__(self, "readable", tuple(self.readable))
        check_filters(self.filters)
        if self.strategy not in STRATEGY_NAMES:
            raise BadQuery(f"unknown strategy {self.strategy!r}", hint=f"Choose {', '.join(STRATEGY_NAMES)}.")
        if self.mode not in MODES:
            raise BadQuery(f"unknown mode {self.mode!r}", hint=f"Choose {', '.join(MODES)}.")
        for mode, weights in self.weights.items():
            unknown = sorted(set(weights) - set(FEATURES))
            if mode not in MODES or unknown:
                what = f"mode {mode!r}" if mode not in MODES else f"feature(s) {', '.join(unknown)}"
                raise BadQuery(
                    f"rerank weights: unknown {what}",
                    hint=f"Modes: {', '.join(MODES)}; features: {', '.join(FEATURES)}.",
                )
        object.__setattr__(self, "settings", _complete(self.settings))

    def of(self, kind: type[S]) -> S:
        """This config's settings of one strategy (``cfg.of(hippo.Settings).damping``)."""
        for value in self.settings.values():
            if type(value) is kind:
                return value
        raise KeyError(kind)

    def with_alpha(self, alpha: float | None) -> QueryConfig:
        """An alpha the user sets (``--alpha``, ``alpha`` in ragkit.toml) holds for every query language and
        embedding model: the model's own weight and the cap for foreign languages give way to it."""
        if alpha is None:
            return self
        return replace(self, alpha=alpha, foreign_alpha=alpha, model_alpha=False)

    def tuned(self, **settings: dict[str, Any]) -> QueryConfig:
        """The config with some strategy settings changed: ``cfg.tuned(hippo={"damping": 0.9})``."""
        merged = dict(self.settings)
        for name, values in settings.items():
            current = self.settings.get(name)
            merged[name] = {**dataclasses.asdict(current), **values} if current is not None else values
        return replace(self, settings=merged)

    def to_dict(self) -> dict[str, Any]:
        """Plain data (what ``ragkit query`` sends a server): ``QueryConfig(**d)`` builds it again."""
        return dataclasses.asdict(self)


def _complete(given: dict[str, Any]) -> dict[str, Any]:
    """One settings object per strategy that has them: the given ones (objects or dicts of fields) over the
    defaults."""
    unknown = sorted(set(given) - {n for n, s in SETTINGS.items() if s})
    if unknown:
        with_settings = [n for n, s in SETTINGS.items() if s]
        raise BadQuery(
            f"no settings for strategy {', '.join(unknown)}",
            hint=f"Strategies with settings: {', '.join(with_settings)}.",
        )
    out = {}
    for name, settings in SETTINGS.items():
        if settings is None:
            continue
        value = given.get(name)
        if isinstance(value, settings):
            out[name] = value
            continue
        value = dict(value or {})
        known = {f.name for f in dataclasses.fields(settings)}
        if set(value) - known:
            raise BadQuery(
                f"unknown {name} setting(s) {', '.join(sorted(set(value) - known))}",
                hint=f"[query.{name}] knows {', '.join(sorted(known))}.",
            )
        out[name] = settings(**value)
    return out


RERANKERS = choices(QueryConfig, "rerank")
PLANNERS = choices(QueryConfig, "planner")
ANSWER_MODES = choices(QueryConfig, "answer_mode")
