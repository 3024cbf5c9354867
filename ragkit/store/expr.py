"""Filter conditions as values: the SQL text with ``?`` where each value goes, and the values apart.

DuckDB takes them as parameters (``Clause.duck()``: the text and the list to pass beside it), so that no value a
person typed (a collection name with a quote, a semicolon, ``OR 1=1``) ever becomes SQL. LanceDB's and pylance's
filter strings take no parameters: ``Clause.lance()`` writes each value as a quoted literal (quotes doubled, a NUL
dropped), the only place a value is written into SQL. Kept apart from ragkit/store/lance.py (which loads pyarrow)
so that planning a filter loads nothing heavy.

``Prefilter`` is a query's filter over the chunks table: the clauses that must all hold, or ``never`` when no
document can match (a token with no collections, a filter no document meets).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ragkit.errors import BadQuery


def sql_str(value: str) -> str:
    """A value as a SQL string literal (for Lance filters, which take no parameters)."""
    return "'" + str(value).replace("\0", "").replace("'", "''") + "'"


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return sql_str(str(value))


@dataclass(frozen=True)
class Clause:
    """``sql`` with one ``?`` per value of ``params``, in order."""

    sql: str
    params: tuple[Any, ...] = ()

    def __post_init__(self):
        if self.sql.count("?") != len(self.params):
            raise ValueError(f"{self.sql!r} has {self.sql.count('?')} placeholders for {len(self.params)} values")

    def duck(self) -> tuple[str, list[Any]]:
        return self.sql, list(self.params)

    def lance(self) -> str:
        parts = self.sql.split("?")
        out = [parts[0]]
        for value, rest in zip(self.params, parts[1:]):
            out += [_literal(value), rest]
        return "".join(out)

    def __and__(self, other: Clause) -> Clause:
        return Clause(f"({self.sql}) AND ({other.sql})", self.params + other.params)

    def negated(self) -> Clause:
        return Clause(f"NOT ({self.sql})", self.params)


TRUE = Clause("true")
FALSE = Clause("false")


def in_values(column: str, values: Sequence[Any]) -> Clause:
    """``column`` is one of ``values`` (none: never)."""
    if not values:
        return FALSE
    return Clause(f"{column} IN ({', '.join('?' * len(values))})", tuple(values))


def in_list(column: str, values: list[str]) -> str:
    """``column IN (…)`` as a Lance filter string."""
    return in_values(column, values).lance()


def equals(column: str, value: Any) -> Clause:
    return Clause(f"{column} = ?", (value,))


def readable(collections: Iterable[str] | None, column: str = "collection") -> Clause:
    """True for the rows of the readable collections (any case); always, for ``None``; never, for none."""
    if collections is None:
        return TRUE
    names = sorted({c.lower() for c in collections})
    return in_values(f"lower({column})", names) if names else FALSE


@dataclass(frozen=True)
class Prefilter:
    """A query's filter over the chunks table: every clause must hold; ``never``: no document can match."""

    clauses: tuple[Clause, ...] = field(default_factory=tuple)
    never: bool = False

    @classmethod
    def nothing(cls) -> Prefilter:
        return cls((), True)

    def also(self, clause: Clause) -> Prefilter:
        return self if self.never else Prefilter((*self.clauses, clause))

    def before(self, clause: Clause) -> Prefilter:
        return self if self.never else Prefilter((clause, *self.clauses))

    def lance(self) -> str | None:
        """The Lance filter string (None: no filter). Asking it of a ``never`` prefilter is a mistake: a search
        that can find nothing is not run."""
        if self.never:
            raise ValueError("a prefilter that matches nothing has no filter string: the search is not run")
        if not self.clauses:
            return None
        return " AND ".join(f"({c.lance()})" if len(self.clauses) > 1 else c.lance() for c in self.clauses)


FILTER_KEY = re.compile(r"^[^\W\d][\w .-]{0,63}$")  # a column or front-matter key: letters first, no quotes


def check_filters(filters: Any) -> None:
    """Filters are a mapping of keys (a column or a front-matter key: a letter first, then letters, digits,
    ``_``, ``-``, ``.`` or spaces, at most 64) to string values: anything else is ``BadQuery`` before any
    store reads it."""
    if not isinstance(filters, dict):
        raise BadQuery("filters: a mapping of KEY to VALUE", hint="e.g. --filter doc_type=policy")
    for key, value in filters.items():
        if not isinstance(key, str) or not FILTER_KEY.fullmatch(key):
            raise BadQuery(
                f"filters: {key!r} is no filter key",
                hint="A key is a column or front-matter key: letters, digits, _ - . (e.g. doc_type)",
            )
        if not isinstance(value, str) or "\0" in value or len(value) > 1000:
            raise BadQuery(f"filters: the value of {key} must be a text of at most 1000 characters")
