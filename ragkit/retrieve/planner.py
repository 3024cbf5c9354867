"""Rule-based query planner (seed 000): constraints, dates, identifiers, doc-type routing, expansions.

``plan_query`` turns the raw query into a :class:`QueryPlan` in well under a
millisecond: it lifts the query syntax out of the text (``"phrase"`` must
appear, ``-term`` must not, ``doc_type:policy``, ``collection:x``,
``path:docs/*``, ``since 2020``, ``before 2019-05-01``, ``between 2018 and
2020``), spots identifiers (codes, part numbers, § references) that call for
exact matching, routes the question to document types by keywords and adds
that type's expansion templates (German or English, from
``planner_rules.toml``, which users may copy and edit). The router picks the
strategy afterwards (``ragkit.retrieve.router``).
"""

from __future__ import annotations

import datetime as dt
import re
import tomllib
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ragkit.errors import BadQuery
from ragkit.extract.entities import extract
from ragkit.legal import has_legal_ref
from ragkit.retrieve.query_syntax import parse_query
from ragkit.text import query_language

RULES_FILE = Path(__file__).with_name("planner_rules.toml")

_OPERATOR = re.compile(r'(?:(?<=\s)|^)(doc_type|type|collection|path):("[^"]+"|\S+)', re.I)
_DATE = r"(\d{4}(?:-\d{2}(?:-\d{2})?)?)"
_BETWEEN = re.compile(rf"\b(?:between|zwischen|from|von)\s+{_DATE}\s+(?:and|und|to|until|bis)\s+{_DATE}\b", re.I)
_SINCE = re.compile(rf"\b(?:since|after|seit|ab|nach)\s+{_DATE}\b", re.I)
_BEFORE = re.compile(rf"\b(?:before|until|vor|bis)\s+{_DATE}\b", re.I)
_IDENT = re.compile(
    r"\b(?=[\w./-]*\d)(?=[\w./-]*[A-Za-z])[A-Za-z0-9]+(?:[-_./][A-Za-z0-9]+)+\b"
    r"|\b[A-Z]{2,}\d+[A-Za-z0-9]*\b|\b[A-Z]\d{2,}[A-Za-z0-9]*\b"
)


@dataclass
class Constraints:
    must_include: list[str] = field(default_factory=list)
    must_exclude: list[str] = field(default_factory=list)
    date_from: str | None = None  # inclusive ISO dates, compared with the document date
    date_to: str | None = None
    doc_types: list[str] = field(default_factory=list)
    collections: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)

    def filters(self) -> dict[str, str]:
        """Filters for the retrieval prefilter (one value per key: the last one written wins)."""
        out = {}
        for key, values in (("doc_type", self.doc_types), ("collection", self.collections), ("path", self.paths)):
            if values:
                out[key] = values[-1]
        if self.date_from:
            out["date_from"] = self.date_from
        if self.date_to:
            out["date_to"] = self.date_to
        return out


@dataclass
class QueryPlan:
    original: str
    text: str  # what the retrievers see: operators and dates lifted out, phrases unquoted
    language: str = "en"
    strategy: str = "hybrid"
    reason: str = "default strategy"
    retrieval_strategy: str = "balanced"  # precision | balanced | recall
    doc_type_routing: list[str] = field(default_factory=list)
    expanded_queries: list[str] = field(default_factory=list)
    boost_sections: list[str] = field(default_factory=list)
    constraints: Constraints = field(default_factory=Constraints)
    identifiers: list[str] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)  # named entities of the query the index knows (router)
    sub_queries: list[str] = field(default_factory=list)
    corrections: list[dict[str, str]] = field(default_factory=list)  # spelling: {"from": …, "to": …}
    planner: str = "rules"  # rules | llm (the model's output was used)
    rewritten: str | None = None  # --planner llm: the model's rewrite of the query
    related_terms: list[dict[str, Any]] | None = None  # vocabulary expansion: {"term", "similarity"}; None: not run
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@lru_cache(maxsize=8)
def load_rules(path: str | None = None) -> dict[str, Any]:
    p = Path(path) if path else RULES_FILE
    try:
        with p.open("rb") as fh:
            return tomllib.load(fh)
    except OSError as exc:
        raise BadQuery(f"cannot read planner rules {p}: {exc.strerror or exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise BadQuery(f"{p}: invalid TOML ({exc})") from exc


def _day(text: str, end: bool) -> str:
    """An ISO day from YYYY, YYYY-MM or YYYY-MM-DD (the first or last day of the period)."""
    parts = [int(x) for x in text.split("-")]
    try:
        if len(parts) == 1:
            return f"{parts[0]:04d}-{'12-31' if end else '01-01'}"
        if len(parts) == 2:
            first = dt.date(parts[0], parts[1], 1)
            if not end:
                return first.isoformat()
            nxt = dt.date(parts[0] + parts[1] // 12, parts[1] % 12 + 1, 1)
            return (nxt - dt.timedelta(days=1)).isoformat()
        return dt.date(*parts).isoformat()
    except ValueError as exc:
        raise BadQuery(f"not a date: {text}", hint="Write dates as 2020, 2020-05 or 2020-05-01.") from exc


def _minus_day(iso: str) -> str:
    return (dt.date.fromisoformat(iso) - dt.timedelta(days=1)).isoformat()


def plan_query(
    raw: str,
    available_doc_types: set[str] | None = None,
    rules_path: str | None = None,
    syntax: bool = True,
    correct=None,
) -> QueryPlan:
    """The rule-based plan of one query (strategy and reason are the router's to set).

    ``syntax=False`` takes the text literally (no operators, dates, phrases or negations);
    ``correct(text, language) -> (text, corrections)`` fixes spelling against the index vocabulary.
    """
    rules = load_rules(rules_path)
    cons = Constraints()
    text = raw
    if not syntax:
        plan = QueryPlan(original=raw, text=" ".join(raw.split()), language=query_language(raw))
        if correct is not None:
            plan.text, plan.corrections = correct(plan.text, plan.language)
        plan.sub_queries = decompose(plan.text)
        return _route_doc_types(plan, rules, available_doc_types)

    def operator(m: re.Match) -> str:
        key, value = m.group(1).lower(), m.group(2).strip('"')
        {"doc_type": cons.doc_types, "type": cons.doc_types, "collection": cons.collections, "path": cons.paths}[
            key
        ].append(value)
        return " "

    text = _OPERATOR.sub(operator, text)
    m = _BETWEEN.search(text)
    if m:
        cons.date_from, cons.date_to = _day(m.group(1), False), _day(m.group(2), True)
        text = text[: m.start()] + " " + text[m.end() :]
    m = _SINCE.search(text)
    if m:
        cons.date_from = _day(m.group(1), False)
        text = text[: m.start()] + " " + text[m.end() :]
    m = _BEFORE.search(text)
    if m:
        first = _day(m.group(1), False)
        word = m.group(0).split()[0].lower()
        cons.date_to = _day(m.group(1), True) if word in ("until", "bis") else _minus_day(first)
        text = text[: m.start()] + " " + text[m.end() :]
    if not text.strip():
        raise BadQuery("the query has only filters", hint="Add at least one term to search for.")
    parsed = parse_query(text)
    cons.must_include, cons.must_exclude = parsed.must_include, parsed.must_exclude
    plan = QueryPlan(original=raw, text=parsed.text, constraints=cons, language=query_language(parsed.text))
    if correct is not None:
        plan.text, plan.corrections = correct(plan.text, plan.language)

    plan.identifiers = sorted(
        {m.group(0) for m in _IDENT.finditer(plan.text) if not re.fullmatch(r"\d{4}", m.group(0))}
    )
    if has_legal_ref(plan.text):
        plan.identifiers.append("§ reference")
    if plan.identifiers or cons.must_include:
        plan.retrieval_strategy = "precision"
    plan.sub_queries = decompose(plan.text)
    return _route_doc_types(plan, rules, available_doc_types)


MAX_SUB_QUERIES = 3
_COMPARE = re.compile(
    r"\b(compare[ds]?|comparison|versus|vs\.?|difference|differ|both|same|either|"
    r"older|younger|larger|smaller|first|earlier|later|more|less|vergleich\w*|unterschied\w*|"
    r"beide|gleiche\w*)\b",
    re.I,
)


def decompose(text: str) -> list[str]:
    """Sub-queries of a multi-part question, each retrieved on its own so every part gets evidence.

    Several questions in one ("…? …?") split at the question marks; a comparison of
    two or more named things ("Were A and B of the same nationality?", "A vs B")
    becomes one query per thing with the others left out.
    """
    parts = [p.strip() + "?" for p in text.split("?") if len(p.strip().split()) >= 2]
    if len(parts) >= 2:
        return parts[:MAX_SUB_QUERIES]
    if not _COMPARE.search(text):
        return []

    names = []
    for m in extract(text).mentions:
        if m.sentence >= 0 and m.type not in ("date",) and all(m.surface not in n for n in names):
            names.append(m.surface)
    if len(names) < 2:
        return []
    conn = r"(?:and|or|vs\.?|versus|und|oder)"
    subs = []
    for keep in names:
        q = text
        for other in names:
            if other == keep:
                continue
            esc = re.escape(other)
            before = re.compile(rf"\s*,?\s*\b{conn}\s+{esc}")
            after = re.compile(rf"{esc}\s*,?\s*{conn}\b")
            q = (
                before.sub(" ", q, count=1)
                if before.search(q)
                else after.sub(" ", q, count=1)
                if after.search(q)
                else q.replace(other, " ")
            )
        subs.append(" ".join(re.sub(r"\s+([?,.])", r"\1", q).split()))
        if len(subs) == MAX_SUB_QUERIES:
            break
    return subs


def _route_doc_types(plan: QueryPlan, rules: dict[str, Any], available: set[str] | None) -> QueryPlan:
    """Doc types whose keywords the query uses (only types the index has), their expansions and sections."""
    words = set(re.findall(r"\w+", plan.text.lower()))
    for doc_type, spec in rules.get("doc_types", {}).items():
        if available is not None and doc_type not in available:
            continue
        if words & {k.lower() for k in spec.get("keywords", [])}:
            plan.doc_type_routing.append(doc_type)
            plan.boost_sections += spec.get("boost_sections", [])
            for template in spec.get("expansion", {}).get(plan.language, [])[:2]:
                q = template.format(q=plan.text)
                if q not in plan.expanded_queries:
                    plan.expanded_queries.append(q)
    return plan
