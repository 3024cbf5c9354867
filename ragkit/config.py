"""Settings, resolved from defaults, ``ragkit.toml`` and flags: where indexes live, ``IndexConfig``
(ragkit/ingest/config.py) and ``QueryConfig`` (ragkit/retrieve/config.py).

Precedence: explicit flags > ``ragkit.toml`` in the working directory > ``ragkit.toml`` in the index folder >
the defaults. The file's tables: ``[index]``, ``[query]``, ``[query.NAME]`` (a strategy's own settings, e.g.
``[query.hippo] damping = 0.9``) and ``[rerank.MODE]`` (feature weights). Both configs check themselves when
built, so a bad value is the same clear error from a flag, the file, an HTTP request or an MCP call.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import os
import tomllib
from dataclasses import fields, replace
from pathlib import Path
from typing import Any

from ragkit.errors import BadQuery, RagkitError
from ragkit.ingest.config import IndexConfig
from ragkit.ingest.formats import FORMATS
from ragkit.retrieve.config import ANSWER_MODES, MODES, PLANNERS, RERANKERS, STRATEGY_NAMES, QueryConfig
from ragkit.retrieve.strategies import STRATEGIES, hierarchical
from ragkit.store import mirror
from ragkit.store.layout import MANIFEST
from ragkit.validate import choices

__all__ = [
    "ANSWER_MODES",
    "DEFAULT_HOME",
    "EXTRACTORS",
    "FILE_FORMATS",
    "MODES",
    "PLANNERS",
    "RERANKERS",
    "STRATEGY_NAMES",
    "SUMMARIES",
    "TREE_MODES",
    "IndexConfig",
    "QueryConfig",
    "layered",
    "load_config",
    "override",
    "query_settings",
    "parse_filters",
    "find_index",
    "index_origin",
    "ragkit_home",
    "resolve_index_dir",
]

DEFAULT_HOME = Path("indexes")
HOME_VAR = "RAGKIT_HOME"  # the per-user place for indexes (``ragkit_home``)
TREE_MODES = choices(hierarchical.Settings, "mode")
EXTRACTORS = choices(IndexConfig, "extract")
SUMMARIES = choices(IndexConfig, "summaries")
FILE_FORMATS = {suffix: fmt.name for suffix, fmt in FORMATS.items()}  # what ragkit index reads, by suffix


def ragkit_home() -> Path:
    """The one per-user place for indexes: ``$RAGKIT_HOME``, else ``ragkit`` in the user's data directory
    (``$XDG_DATA_HOME``, default ``~/.local/share``)."""
    if os.environ.get(HOME_VAR):
        return Path(os.environ[HOME_VAR]).expanduser().absolute()
    data = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data).expanduser().absolute() / "ragkit"


def find_index(name: str, cwd: Path | None = None) -> tuple[Path, str] | None:
    """Where the index ``name`` lives, as git finds ``.git``: ``indexes/NAME`` in ``cwd``, else in the nearest
    folder above it that holds one (with its manifest), else ``indexes/NAME`` under ``ragkit_home()``. Returns
    the folder (relative when it is ``cwd``'s own) and how it was found; None when nowhere."""
    here = (cwd or Path.cwd()).absolute()
    if (here / DEFAULT_HOME / name).is_dir():  # (even without a manifest: a run under way, or one to check)
        return DEFAULT_HOME / name, "in ./indexes"
    for folder in here.parents:
        if (folder / DEFAULT_HOME / name / MANIFEST).is_file():
            return folder / DEFAULT_HOME / name, f"in {folder / DEFAULT_HOME} (above the current directory)"
    home = ragkit_home() / DEFAULT_HOME / name
    if (home / MANIFEST).is_file():
        return home, f"in ${HOME_VAR}" if os.environ.get(HOME_VAR) else f"in {ragkit_home()} (the user's data)"
    return None


def new_index_dir(name: str) -> Path:
    """Where an index ``name`` found nowhere is made: under ``$RAGKIT_HOME`` when it is set, else ./indexes."""
    return ragkit_home() / DEFAULT_HOME / name if os.environ.get(HOME_VAR) else DEFAULT_HOME / name


def _bare(s: str) -> bool:
    return "/" not in s and "\\" not in s and s not in (".", "..")


def index_origin(index: str | Path | None) -> str:
    """How ``resolve_index_dir(index)`` found its folder, in words (``ragkit stats`` shows it)."""
    s = "default" if index is None else str(index)
    if mirror.is_uri(s):
        return "object storage (a local mirror)"
    if not _bare(s):
        return "given as a folder"
    found = find_index(s)
    return (
        found[1]
        if found
        else "not found: a new index goes " + (f"under ${HOME_VAR}" if os.environ.get(HOME_VAR) else "in ./indexes")
    )


def resolve_index_dir(index: str | Path | None) -> Path:
    """``None`` → the index "default"; a bare name → ``indexes/NAME`` found from the current directory upwards,
    else under ``$RAGKIT_HOME`` (``find_index``; one found nowhere: ``new_index_dir``); a URI
    (``s3://bucket/prefix``) → its local mirror (ragkit/store/remote.py); anything else is a directory."""
    s = "default" if index is None else str(index)
    if mirror.is_uri(s):
        return mirror.mirror_for(s)
    if _bare(s):
        found = find_index(s)
        return found[0] if found else new_index_dir(s)
    # absolute: "./idx" stays a folder however it is passed on (str(Path("./idx")) is "idx", a bare name)
    return Path(s).expanduser().absolute()


def parse_filters(items: list[str]) -> dict[str, str]:
    """``--filter KEY=VALUE`` options as a dict."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise BadQuery(f"bad filter {item!r}", hint="Write filters as KEY=VALUE, e.g. --filter doc_type=policy")
        key, value = key.strip(), value.strip()
        if key in ("date_from", "date_to"):
            try:
                dt.date.fromisoformat(value)
            except ValueError:
                raise BadQuery(
                    f"bad date in --filter {key}={value}",
                    hint="Dates are YYYY-MM-DD, e.g. --filter date_from=2024-01-31",
                ) from None
        out[key] = value
    return out


def load_config(cwd: Path | None = None, index_dir: Path | None = None) -> tuple[IndexConfig, QueryConfig]:
    """Defaults overlaid with ``ragkit.toml`` from the index directory, then from ``cwd``."""
    icfg, qcfg = IndexConfig(), QueryConfig()
    for folder in (index_dir, cwd or Path.cwd()):
        if folder is not None and (Path(folder) / "ragkit.toml").is_file():
            icfg, qcfg = _overlay(icfg, qcfg, Path(folder) / "ragkit.toml")
    return icfg, qcfg


def override(cfg, **flags):
    """``cfg`` with every flag that is not None applied (checked like any config)."""
    return replace(cfg, **{k: v for k, v in flags.items() if v is not None})


QUERY_FIELDS = frozenset(f.name for f in fields(QueryConfig))


def layered(base: QueryConfig, given: dict[str, Any]) -> QueryConfig:
    """``base`` (the defaults under ``ragkit.toml``) with what one caller gives over it: the CLI's flags, a
    request's fields, the library's keyword arguments. A value of None is not given; ``filters`` add to the
    file's (a given one wins for its key); ``alpha`` holds for every language and model (``with_alpha``). An
    unknown name is ``BadQuery``. The one place a caller's settings meet the file's."""
    unknown = sorted(set(given) - QUERY_FIELDS)
    if unknown:
        raise BadQuery(
            f"unknown query setting{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}",
            hint="Query settings are the fields of ragkit.config.QueryConfig.",
        )
    given = {k: v for k, v in given.items() if v is not None}
    if "filters" in given:
        given["filters"] = {**base.filters, **given["filters"]}
    alpha = given.pop("alpha", None)
    given = {k: v for k, v in given.items() if getattr(base, k) != v}  # (a config checks itself when built: ~45 µs)
    return replace(base, **given).with_alpha(alpha) if given or alpha is not None else base


def query_settings(index_dir: Path | None, given: dict[str, Any] | None = None) -> QueryConfig:
    """The query settings of the index at ``index_dir``: the defaults, its ``ragkit.toml``, the working
    directory's, then ``given`` (``layered``)."""
    return layered(load_config(index_dir=index_dir)[1], given or {})


def _overlay(icfg: IndexConfig, qcfg: QueryConfig, path: Path) -> tuple[IndexConfig, QueryConfig]:
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise RagkitError(f"{path}: invalid TOML ({exc})") from exc
    try:
        icfg, qcfg = _models(icfg, qcfg, data.get("models", {}), data.get("query", {}))
        icfg = _apply(icfg, data.get("index", {}), f"{path} [index]")
        query = dict(data.get("query", {}))
        strategy_tables = {k: query.pop(k) for k in list(query) if isinstance(query[k], dict) and k in STRATEGIES}
        qcfg = qcfg.with_alpha(query.get("alpha"))  # then model_alpha / foreign_alpha in the file, if given
        qcfg = _apply(qcfg, query, f"{path} [query]")
        if strategy_tables:
            qcfg = qcfg.tuned(**strategy_tables)
        if "rerank" in data:
            merged = {mode: dict(w) for mode, w in qcfg.weights.items()}
            for mode, weights in data["rerank"].items():
                if not isinstance(weights, dict):
                    raise BadQuery(f"[rerank.{mode}] must be a table of feature weights")
                merged.setdefault(mode, {}).update({k: float(v) for k, v in weights.items()})
            qcfg = replace(qcfg, weights=merged)
    except RagkitError as exc:
        raise type(exc)(f"{path}: {exc.message}", hint=exc.hint) from None
    return icfg, qcfg


MODEL_ROLES = ("embed", "rerank", "generate")


def _models(icfg: IndexConfig, qcfg: QueryConfig, table: dict[str, Any], query: dict[str, Any]):
    """``[models]``: one spec per role (``embed``, ``rerank``, ``generate``) and ``[models.keys]``, each server
    host's API key variable. A rerank model turns the reranker on unless ``[query] rerank`` says otherwise."""
    unknown = sorted(set(table) - {*MODEL_ROLES, "keys"})
    if unknown:
        raise RagkitError(f"[models]: unknown key(s) {', '.join(unknown)}", hint="Known: embed, rerank, generate, keys")
    keys = table.get("keys", {})
    if not isinstance(keys, dict) or not all(isinstance(v, str) for v in keys.values()):
        raise RagkitError(
            "[models.keys] maps a server's host to the name of the variable with its API key",
            hint='"api.openai.com" = "OPENAI_API_KEY"',
        )
    index = {"embed_model": table.get("embed"), "model": table.get("generate"), "api_keys": keys or None}
    flags = {"rerank_model": table.get("rerank"), "model": table.get("generate"), "api_keys": keys or None}
    if table.get("rerank") and "rerank" not in query:
        flags["rerank"] = "cross"
    return override(icfg, **index), override(qcfg, **flags)


# settings that used to be [query] or [index] keys, and where they live now
_MOVED = {
    f.name: f"[query.{name}] {f.name}"
    for name, s in STRATEGIES.items()
    if s.settings
    for f in dataclasses.fields(s.settings)
}
_MOVED |= {
    "damping": "[query.hippo] damping",
    "ppr_weight": "[query.hippo] graph_weight (and [query.local], [query.light])",
    "tree_mode": "[query.hierarchical] mode",
    "tree_nodes": "[query.hierarchical] nodes",
    "tree_children": "[query.hierarchical] children",
    "tree_discount": "[query.hierarchical] discount",
    "cross_encoder": "[models] rerank",
    "llm_model": "[models] generate",
}


def _apply(cfg, table: dict[str, Any], source: str):
    known = {f.name for f in fields(cfg)} - {"settings"}
    unknown = sorted(set(table) - known)
    if unknown:
        moved = [k for k in unknown if k in _MOVED]
        hint = f"{moved[0]} is {_MOVED[moved[0]]} now" if moved else f"Known: {', '.join(sorted(known))}"
        raise RagkitError(f"{source}: unknown setting(s) {', '.join(unknown)}", hint=hint)
    return replace(cfg, **table)
