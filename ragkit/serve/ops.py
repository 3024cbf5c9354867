"""What ``ragkit serve`` does for a request, each operation once: the HTTP routes and the MCP tools call them
through the worker processes (ragkit/serve/workers.py), ``ragkit serve --mcp`` in process.

    query       a query (and its answer) → the ragkit.query/1 object
    document    a document by id or path (or a line range of it)
    outline     a document's sections
    section     a section's place and text
    documents   the documents matching filters, a page at a time
    stats       what the index holds

Each takes the request's fields as a dict and the ``Caller`` (access.py). A caller with a token reads its
collections only: its query runs with ``QueryConfig.readable`` (a prefilter of every search, the scope of
every context item, the legal references, the speller's corrections), its ``filters`` may narrow that but name
no other collection (``Forbidden``), it may name no model, planner rules file or key but the server's, and the
result is checked once more before it leaves (``keep_visible``). Limits (query length, ``k``, answer tokens)
hold for every caller (``OverLimit``).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from ragkit import library
from ragkit.assemble import pack_context
from ragkit.config import QueryConfig, layered, load_config, resolve_index_dir
from ragkit.errors import BadQuery, Forbidden, IndexChanged, OverLimit, RagkitError
from ragkit.records import QueryResult
from ragkit.render import result_dict, trace_line
from ragkit.serve import EARLY
from ragkit.serve.access import Caller
from ragkit.serve.guard import error_fields
from ragkit.store import remote

log = logging.getLogger("ragkit.serve")
CHOSEN = ("model", "rerank_model", "planner_rules", "api_keys")  # what only the server chooses for a token


class State:
    """The index a process answers from, reopened when a newer run has been committed."""

    def __init__(self, index: str | None):
        self.index_dir = resolve_index_dir(index)
        _, self.settings = load_config(index_dir=self.index_dir)  # read once, when the server starts
        self._index: library.Index | None = None

    def index(self) -> library.Index:
        """The index at its newest committed run."""
        if self._index is None:
            self._index = library.open(self.index_dir, settings=self.settings)
        else:
            self._index.follow()
        return self._index

    def warm(self) -> None:
        """Load the model and what a first query needs before the first request comes."""
        self.index().warm()


def run(state: State, op: str, args: dict[str, Any], caller: Caller, on_text: Callable | None = None) -> Any:
    """One operation; asked again of the new run when a run committed while it read replaced its files."""
    fn = OPERATIONS.get(op)
    if fn is None:
        raise BadQuery(f"unknown operation {op!r}")
    try:
        return fn(state, args, caller, on_text)
    except IndexChanged:
        state.index()
        return fn(state, args, caller, on_text)


def query(state: State, args: dict[str, Any], caller: Caller, on_text: Callable | None = None) -> dict[str, Any]:
    """``{"result": ragkit.query/1 object (JSON bytes with "encode"), "answer_error": error or None}``."""
    text = args.get("query")
    if not isinstance(text, str):
        raise BadQuery("bad request: query: a string is required")
    if len(text) > caller.limits.query_chars:
        raise OverLimit(f"the query has {len(text)} characters, over this server's {caller.limits.query_chars}")
    base = state.settings
    cfg = admit(request_config(base, args), base, caller)
    ix = state.index()

    def passages_ready(result: QueryResult) -> None:
        keep_visible(result, ix.reader, caller.readable)
        if cfg.answer and on_text is not None and args.get("early"):  # the passages before the answer
            on_text(EARLY + json.dumps({"early": result_dict(result, bool(args.get("explain")))}, default=str))

    source = str(args.get("source") or "http")
    asked = ix.ask(text, cfg, on_text, passages_ready=passages_ready, token=caller.asker, source=source)
    result, failed = asked.result, asked.error
    if cfg.answer:
        keep_visible(result, ix.reader, caller.readable)
    out = result_dict(result, bool(args.get("explain")))
    if args.get("trace"):
        out["trace"] = json.loads(trace_line(result))
    error = error_fields(failed) if failed is not None else None
    if args.get("encode"):  # the HTTP route sends it as it is: encoded here, in the worker
        return {"result": json.dumps(out, ensure_ascii=False, default=str).encode(), "answer_error": error}
    return {"result": out, "answer_error": error}


def request_config(base: QueryConfig, args: dict[str, Any]) -> QueryConfig:
    """The QueryConfig a request asks for: its whole ``config`` (what ``ragkit query`` sends), else the server's
    settings with the request's fields over them."""
    if args.get("config") is not None:
        try:
            return QueryConfig(**args["config"])
        except TypeError as exc:  # (a value out of its choices is BadQuery already)
            raise BadQuery(f"config: {exc}") from exc
    return layered(
        base,
        dict(
            k=args.get("k"),
            strategy=args.get("strategy"),
            filters=args.get("filters") or {},
            answer=args.get("answer") or None,
            answer_mode=args.get("answer_mode"),
            max_tokens=args.get("max_tokens"),
            rerank=args.get("rerank") or ("cross" if args.get("rerank_model") else None),
            rerank_model=args.get("rerank_model"),
            model=args.get("model"),
        ),
    )


def admit(cfg: QueryConfig, base: QueryConfig, caller: Caller) -> QueryConfig:
    """The config a caller may run: within the limits; for a token, within its collections and with the
    server's models (a spec names a file or URL the server would open), vocabulary expansion off."""
    limits = caller.limits
    if cfg.k > limits.k:
        raise OverLimit(f"k = {cfg.k} is over this server's limit of {limits.k}")
    if cfg.answer and cfg.max_tokens > limits.max_tokens:
        raise OverLimit(f"max_tokens = {cfg.max_tokens} is over this server's limit of {limits.max_tokens}")
    if caller.readable is None:
        return cfg
    for name in CHOSEN:
        value = getattr(cfg, name)
        if value and value != getattr(base, name):
            raise Forbidden(f"{name}: a token's request uses the server's, not {_shown(name, value)}")
    if cfg.answer_context > base.answer_context:  # the model's window: memory the server would give
        raise OverLimit(f"answer_context = {cfg.answer_context} is over this server's {base.answer_context}")
    check_collection(cfg.filters, caller)
    return replace(cfg, readable=caller.readable, expand=False)


def _shown(name: str, value: Any) -> str:
    return "other keys" if name == "api_keys" else repr(value)


def check_collection(filters: dict[str, str] | None, caller: Caller) -> None:
    """A filter may narrow a token's collections, never widen them: another collection is ``Forbidden``."""
    asked = (filters or {}).get("collection")
    if caller.readable is not None and asked is not None:
        if asked.lower() not in {c.lower() for c in caller.readable}:
            raise Forbidden(f"collection {asked!r} is not readable with this token")


def keep_visible(result: QueryResult, reader, readable: tuple[str, ...] | None) -> None:
    """The result's last check before it leaves: passages, candidates, context items, cited references, quotes
    and citations of documents outside ``readable`` are dropped (and logged: retrieval should never bring them)."""
    if readable is None:
        return
    docs = reader.scopes.readable_documents(readable)
    colls = {c.lower() for c in readable}
    kept = [p for p in result.passages if p.document_id in docs]
    items = [i for i in result.context_items if _item_visible(i, docs, colls)]
    dropped = len(result.passages) - len(kept) + len(result.context_items) - len(items)
    result.hits = [h for h in result.hits if h.document_id in docs]
    if len(kept) != len(result.passages) and result.context is not None:
        result.context = pack_context(kept, result.context.budget)
    result.passages, result.context_items = kept, items
    result.plan.context_items = items
    result.plan.references = [  # a reference to another collection's law resolves to nothing
        r if r.get("document_id") is None or r["document_id"] in docs else {**r, "document_id": None, "section_ids": []}
        for r in result.plan.references
    ]
    if result.answer is not None:
        ranks = {p.rank for p in kept}
        result.answer.quotes = [q for q in result.answer.quotes if q.rank in ranks]
        result.answer.citations = [c for c in result.answer.citations if c.rank in ranks]
    if dropped:
        log.warning("dropped %d item(s) outside the caller's collections: retrieval let them through", dropped)


def _item_visible(item: dict[str, Any], docs: frozenset[str], colls: set[str]) -> bool:
    if item.get("type") == "summary":
        return item.get("document_id") in docs
    return item.get("type") in ("entity", "relation", "community") and (item.get("collection") or "").lower() in colls


def document(state: State, args: dict[str, Any], caller: Caller, on_text=None) -> dict[str, Any]:
    """A document by id or path; with ``start``/``end`` the chunks covering those lines. Opened from passage
    ``rank`` of query ``query_id``, it is kept as a click on that passage (a weak positive)."""
    found = state.index().document(str(args["key"]), caller.readable, args.get("start"), args.get("end"))
    clicked(state, args, caller)
    return found


def clicked(state: State, args: dict[str, Any], caller: Caller) -> None:
    """A passage opened after its query (``query_id`` and ``rank`` given): a weak positive, when the log holds
    that query of this caller's; never an error for the opening itself."""
    query_id, rank = args.get("query_id"), args.get("rank")
    if not query_id or rank is None:
        return
    try:
        state.index().feedback(
            str(query_id), rank=int(rank), grade=1, kind="open", source=str(args.get("source") or "http"),
            token=caller.asker, readable=caller.readable,
        )  # fmt: skip
    except (RagkitError, ValueError) as exc:
        log.info("a click not kept: %s", exc)


def feedback(state: State, args: dict[str, Any], caller: Caller, on_text=None) -> dict[str, Any]:
    """Feedback on a passage (``rank``) or the answer (no rank) of a query this caller asked: ``grade`` 0–3, or
    ``good`` true/false, one of them said (a rating that says neither is refused)."""
    query_id = args.get("query_id")
    if not isinstance(query_id, str) or not query_id:
        raise BadQuery("bad request: query_id: a string is required")
    rank = args.get("rank")
    if rank is not None and (not isinstance(rank, int) or isinstance(rank, bool)):
        raise BadQuery("bad request: rank: a whole number is required")
    grade = args.get("grade")
    if grade is None and isinstance(args.get("good"), bool):
        grade = "good" if args["good"] else "bad"
    event = state.index().feedback(
        query_id, rank=rank, grade=grade, source=str(args.get("source") or "http"),
        token=caller.asker, readable=caller.readable,
    )  # fmt: skip
    return {"kept": True, "event": {k: event[k] for k in ("query_id", "target", "grade", "rank") if k in event}}


def outline(state: State, args: dict[str, Any], caller: Caller, on_text=None) -> dict[str, Any]:
    return state.index().outline(str(args["key"]), caller.readable)


def section(state: State, args: dict[str, Any], caller: Caller, on_text=None) -> dict[str, Any]:
    found = state.index().section(str(args["id"]), caller.readable)
    clicked(state, args, caller)
    return found


def page(state: State, args: dict[str, Any], caller: Caller, on_text=None) -> bytes:
    """A readable PDF document's page as PNG bytes, the text ``mark`` marked; opened from a passage of a query
    (``query_id``, ``rank``), a click on it."""
    data = state.index().page_image(str(args["key"]), int(args["number"]), str(args.get("mark") or ""), caller.readable)
    clicked(state, args, caller)
    return data


def documents(state: State, args: dict[str, Any], caller: Caller, on_text=None) -> dict[str, Any]:
    filters = {k: str(v) for k, v in (args.get("filters") or {}).items() if v is not None}
    check_collection(filters, caller)
    return state.index().documents(
        _int(args, "limit", 50), _int(args, "offset", 0), readable=caller.readable, filters=filters
    )


def stats(state: State, args: dict[str, Any], caller: Caller, on_text=None) -> dict[str, Any]:
    """``ragkit stats``, as a server tells it: the index by its name, the embedder by its model's name (not
    where the index or the model lives)."""
    out = state.index().stats(caller.readable)
    out["index"] = remote.name_of(state.index_dir)
    if isinstance(out.get("embedder"), dict):
        out["embedder"] = {k: v for k, v in out["embedder"].items() if k not in ("spec", "probe")}
    return out


OPERATIONS: dict[str, Callable[..., Any]] = {
    "query": query,
    "document": document,
    "outline": outline,
    "section": section,
    "documents": documents,
    "stats": stats,
    "feedback": feedback,
    "page": page,
}


def _int(args: dict[str, Any], key: str, default: int) -> int:
    """A whole-number argument as given (0 stays 0), ``default`` when absent."""
    value = args.get(key)
    return default if value is None else int(value)
