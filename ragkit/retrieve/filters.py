"""Turn --filter KEY=VALUE and must/must-not terms into one prefilter of the chunks table (``Prefilter``: its
values kept apart from its SQL, ragkit/store/expr.py)."""

from __future__ import annotations

from collections.abc import Callable

from ragkit.retrieve.query_syntax import ParsedQuery
from ragkit.store.expr import Clause, Prefilter, equals, in_values, readable

DIRECT = {"doc_type", "collection"}  # columns of the chunks table itself


def _regex_phrase(phrase: str) -> str:
    """A Rust-regex for the phrase as whole words, any whitespace between them."""
    special = set(r"\.+*?()|[]{}^$#&-~")
    words = ["".join("\\" + ch if ch in special else ch for ch in w) for w in phrase.split()]
    return r"(?i)\b" + r"\s+".join(words) + r"\b" if words else ""


def build_where(
    query: ParsedQuery,
    filters: dict[str, str],
    doc_ids_for: Callable[[dict[str, str]], list[str]],
    readable_collections: tuple[str, ...] | None = None,
) -> Prefilter:
    """The query's prefilter (``never`` when no document can match). ``readable_collections``: the only
    collections that may match (a served token's), AND-ed with everything else."""
    out = Prefilter()
    if readable_collections is not None:
        if not readable_collections:
            return Prefilter.nothing()
        out = out.also(readable(readable_collections))
    for key in sorted(DIRECT & filters.keys()):
        out = out.also(equals(f"lower({key})", str(filters[key]).lower()))
    other = {k: v for k, v in filters.items() if k not in DIRECT}
    if other:
        ids = doc_ids_for(other)
        if not ids:
            return Prefilter.nothing()
        out = out.also(in_values("document_id", ids))
    for phrase in query.must_include:
        out = out.also(Clause("regexp_like(content, ?)", (_regex_phrase(phrase),)))
    for term in query.must_exclude:
        out = out.also(Clause("NOT regexp_like(content, ?)", (_regex_phrase(term),)))
    return out
