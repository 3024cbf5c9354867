"""Query syntax: ``"quoted phrase"`` must appear, ``-word`` must not."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ragkit.errors import BadQuery

_PHRASE = re.compile(r'"([^"]+)"')
_NEG = re.compile(r'(?:(?<=\s)|^)-("[^"]+"|[^\s"]+)')


@dataclass
class ParsedQuery:
    raw: str
    text: str  # what the retrievers see: phrases unquoted, negated terms removed
    must_include: list[str] = field(default_factory=list)
    must_exclude: list[str] = field(default_factory=list)


def parse_query(raw: str) -> ParsedQuery:
    if not raw or not raw.strip():
        raise BadQuery("empty query", hint='Ask something, e.g. ragkit query "how are overtime hours limited?"')
    exclude = [m.group(1).strip('"') for m in _NEG.finditer(raw)]
    rest = _NEG.sub(" ", raw)
    include = [p.strip() for p in _PHRASE.findall(rest) if p.strip()]
    text = " ".join(_PHRASE.sub(lambda m: m.group(1), rest).split())
    if not text:
        raise BadQuery("the query has only excluded terms", hint="Add at least one term to search for.")
    return ParsedQuery(raw=raw, text=text, must_include=include, must_exclude=[e for e in exclude if e])
