"""Turn --filter KEY=VALUE and must/must-not terms into one LanceDB prefilter."""

from __future__ import annotations

from collections.abc import Callable

from ragkit.retrieve.query_syntax import ParsedQuery
from ragkit.store.browse import readable_sql
from ragkit.store.expr import in_list, sql_str

DIRECT = {"doc_type", "collection"}  # columns of the chunks table itself
NO_MATCH = "false"


def _regex_phrase(phrase: str) -> str:
    """A Rust-regex for the phrase as whole words, any whitespace between them."""
    special = set(r"\.+*?()|[]{}^$#&-~")
    words = ["".join("\\" + ch if ch in special else ch for ch in w) for w in phrase.split()]
    return r"(?i)\b" + r"\s+".join(words) + r"\b" if words else ""


def build_where(
    query: ParsedQuery,
    filters: dict[str, str],
    doc_ids_for: Callable[[dict[str, str]], list[str]],
    readable: tuple[str, ...] | None = None,
) -> str | None:
    """SQL for LanceDB's prefilter, or None. ``NO_MATCH`` when no document can match. ``readable``: the only
    collections that may match (a served token's), AND-ed with everything else."""
    clauses = []
    if readable is not None:
        if not readable:
            return NO_MATCH
        clauses.append(readable_sql(readable))
    for key in sorted(DIRECT & filters.keys()):
        clauses.append(f"lower({key}) = {sql_str(filters[key].lower())}")
    other = {k: v for k, v in filters.items() if k not in DIRECT}
    if other:
        ids = doc_ids_for(other)
        if not ids:
            return NO_MATCH
        clauses.append(in_list("document_id", ids))
    for phrase in query.must_include:
        clauses.append(f"regexp_like(content, {sql_str(_regex_phrase(phrase))})")
    for term in query.must_exclude:
        clauses.append(f"NOT regexp_like(content, {sql_str(_regex_phrase(term))})")
    return " AND ".join(clauses) if clauses else None
