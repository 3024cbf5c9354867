"""What ``POST /v1/query`` accepts, said in its OpenAPI schema (issue 64): the request's shape is checked here,
before any worker reads it (a request outside it: 422), and the schema says the same.

- ``query``: a text with something besides white space; its length is the server's limit (``[limits]``: 413);
- ``k``, ``max_tokens``: 1 or more (the server's limits: 413); ``strategy``, ``answer_mode``, ``rerank``: the
  choices of ragkit.config (STRATEGY_NAMES, ANSWER_MODES, RERANKERS); ``filters``: filter keys to texts;
- ``config``: a whole ``QueryConfig`` (what ``ragkit query`` sends), its fields with their choices and ranges
  (``ragkit.validate``'s metadata), the strategies' settings likewise, nothing else; ``query_encoder`` "ragkit"
  only where the index takes it (``for_index``).

What depends on the index or the caller is answered by the server and listed in ``QUERY_RESPONSES``: 400 (the
query's own syntax leaves nothing to search; a model or file a spec names that cannot be read), 403 (a token's
request naming another collection or another model), 413 (over the limits).
"""

from __future__ import annotations

import dataclasses
import typing
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StringConstraints, create_model

from ragkit.config import ANSWER_MODES, MODES, RERANKERS, STRATEGY_NAMES, QueryConfig
from ragkit.embed import tuned
from ragkit.errors import RagkitError
from ragkit.rerank.features import FEATURES
from ragkit.retrieve.strategy_settings import SETTINGS
from ragkit.store.expr import FILTER_KEY
from ragkit.store.manifest import read_manifest

# python-re: the patterns mean what Python's ``str.strip`` and ``re`` mean (as the checks behind them do)
STRICT = ConfigDict(extra="forbid", strict=True, regex_engine="python-re")

_INTEGRAL = BeforeValidator(lambda v: int(v) if isinstance(v, float) and v.is_integer() else v)


def whole(low: int | None = None, high: int | None = None) -> Any:
    """A whole number as JSON Schema's "integer" means it, 3 and 3.0 alike (strict pydantic takes 3 only), never
    "3" or true; within ``low``..``high`` (bounds inside, so that the schema says them as minimum and maximum)."""
    return Annotated[int, Field(ge=low, le=high), _INTEGRAL]


FilterKey = Annotated[str, StringConstraints(pattern=FILTER_KEY.pattern)]
FilterValue = Annotated[str, StringConstraints(max_length=1000, pattern=r"^[^\x00]*$")]
Filters = Annotated[
    dict[FilterKey, FilterValue],
    Field(json_schema_extra={"additionalProperties": False}),  # a key outside the pattern is refused
]
Strategy = Literal[STRATEGY_NAMES]  # type: ignore[valid-type]
AnswerMode = Literal[ANSWER_MODES]  # type: ignore[valid-type]
Reranker = Literal[RERANKERS]  # type: ignore[valid-type]


def _model_of(cls: type, name: str, types: dict[str, Any] | None = None) -> type[BaseModel]:
    """A strict pydantic model of a settings dataclass: its fields, their ``Literal`` choices, their ``between``
    ranges and ``matches`` patterns; ``types`` replaces a field's type where the dataclass checks more than its
    annotation says."""
    hints = typing.get_type_hints(cls)
    fields: dict[str, Any] = {}
    for f in dataclasses.fields(cls):
        low, high = f.metadata.get("range") or (None, None)
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        hint = (types or {}).get(f.name, hints[f.name])
        if hint is int or hint == int | None:
            hint, low, high = whole(low, high) if hint is int else whole(low, high) | None, None, None
        fields[f.name] = (hint, Field(default, ge=low, le=high, pattern=f.metadata.get("pattern")))
    return create_model(name, __config__=STRICT, __doc__=cls.__doc__, **fields)


StrategySettings = create_model(
    "StrategySettings",
    __config__=STRICT,
    __doc__="Each strategy's own settings ([query.NAME] in ragkit.toml).",
    **{name: (_model_of(cls, f"{name.title()}Settings"), None) for name, cls in SETTINGS.items() if cls is not None},
)
QueryConfigRequest = _model_of(
    QueryConfig,
    "QueryConfig",
    {
        "strategy": Strategy,
        "mode": Literal[MODES],
        "filters": Filters,
        "weights": dict[Literal[MODES], dict[Literal[FEATURES], float]],  # type: ignore[valid-type]
        "readable": list[Annotated[str, StringConstraints(min_length=1)]] | None,
        "settings": StrategySettings,
    },
)


class QueryRequest(BaseModel):
    model_config = ConfigDict(strict=True, regex_engine="python-re")  # JSON's types as they are: 0 is no false

    query: str = Field(
        pattern=r"\S",
        description="The question: something besides white space; at most the server's query_chars (413 beyond).",
    )
    k: whole(1) | None = Field(  # type: ignore[valid-type]
        None, description="Number of passages (default 10, or ragkit.toml's; at most the server's k: 413)."
    )
    strategy: Strategy | None = Field(None, description="auto (default): the router picks per query.")
    filters: Filters = Field(
        default_factory=dict, description="doc_type, collection, path, date_from, date_to, metadata keys"
    )
    answer: bool = Field(False, description="Also answer from the passages (answer_mode: auto | extract | generate).")
    answer_mode: AnswerMode | None = Field(None, description="auto (default) | extract (quotes) | generate (checked).")
    max_tokens: whole(1) | None = Field(  # type: ignore[valid-type]
        None, description="Answer tokens at most (default 512; with answer, at most the server's: 413)."
    )
    rerank: Reranker | None = Field(None, description="auto (default: a cross-encoder where it pays) | …")
    rerank_model: str | None = Field(None, description="A rerank model spec (turns --rerank cross on).")
    model: str | None = Field(None, description="The generate model spec for the answer.")
    explain: bool = Field(False, description="Include every passage's rerank features.")
    trace: bool = Field(False, description="Include every candidate's features (ragkit.trace/1, as --trace writes).")
    early: bool = Field(
        False, description='With "stream" and "answer": the passages first, as {"early": ragkit.query/1 object}.'
    )
    stream: bool = Field(
        False,
        description='JSON lines: {"text": …} as the answer is written, then the ragkit.query/1 object '
        "(hanging up stops the model).",
    )
    config: QueryConfigRequest | None = Field(  # type: ignore[valid-type]
        None, description="A whole QueryConfig (what `ragkit query` sends); the fields above are ignored then."
    )

    def args(self) -> dict[str, Any]:
        """The request as the ``query`` operation takes it (ops.py): ``config`` as the fields given."""
        args = self.model_dump(exclude={"stream", "config"})
        if self.config is not None:
            args["config"] = self.config.model_dump(exclude_unset=True)
        return args


def for_index(schema: dict[str, Any], index_dir: Path) -> dict[str, Any]:
    """The OpenAPI ``schema`` as this server's index takes it: ``query_encoder`` "ragkit" only where ragkit's query
    encoder fits the index (multilingual-e5-small, and the encoder installed); elsewhere it is refused (400)."""
    try:
        info = read_manifest(index_dir).embedder
    except (RagkitError, OSError):  # (no manifest to read yet: the choices as the config says them)
        return schema
    if not (tuned.applies(info.spec, info.encoder) and tuned.available()):
        encoder = schema["components"]["schemas"]["QueryConfig"]["properties"]["query_encoder"]
        encoder["enum"] = [c for c in encoder["enum"] if c != "ragkit"]
    return schema


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": ERROR}}}


ERROR = {
    "type": "object",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "code": {"type": "integer"},
                "type": {"type": "string"},
                "message": {"type": "string"},
                "hint": {"type": ["string", "null"]},
            },
        }
    },
}
QUERY_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {  # (application/json: FastAPI's own)
        "description": 'The ragkit.query/1 object; with "stream": JSON lines of the answer\'s text, then it.',
        "content": {"application/x-ndjson": {"schema": {"type": "string"}}},
    },
    400: _error(
        "BadQuery: what the index cannot answer: the query's own syntax leaves nothing to search (only "
        "excluded terms, only filters), a model or planner rules file the request names that cannot be read."
    ),
    403: _error("Forbidden: a token's request names a collection it does not read, or a model not the server's."),
    413: _error("OverLimit: the query's length, k, max_tokens (with answer) or answer_context over this server's."),
    422: _error("BadQuery: the request is not of this schema."),
}
